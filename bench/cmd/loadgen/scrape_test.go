package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/statsgate/statsgate/bench/internal/promscrape"
)

func TestScrapeDetectsIncompleteBodies(t *testing.T) {
	o := options{agents: 1, families: 1, series: 2, scrapeTimeout: 5 * time.Second}
	const textType = "text/plain; version=0.0.4; charset=utf-8"
	full := "# TYPE loadgen_queue_depth_f000_items gauge\nloadgen_queue_depth_f000_items{a=\"1\"} 1\nloadgen_queue_depth_f000_items{a=\"2\"} 2\n"
	om := "# TYPE loadgen_queue_depth_f000_items gauge\nloadgen_queue_depth_f000_items{a=\"1\"} 1\nloadgen_queue_depth_f000_items{a=\"2\"} 2\n# EOF\n"
	gz := func(s string) []byte {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		if _, err := io.WriteString(zw, s); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	serve := func(contentType, encoding string, body []byte) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", contentType)
			if encoding != "" {
				w.Header().Set("Content-Encoding", encoding)
			}
			_, _ = w.Write(body)
		}
	}
	cases := map[string]struct {
		handler  http.HandlerFunc
		complete bool
		reason   string
	}{
		"complete":             {serve(textType, "", []byte(full)), true, ""},
		"complete gzip":        {serve(textType, "gzip", gz(full)), true, ""},
		"complete openmetrics": {serve("application/openmetrics-text; version=1.0.0; charset=utf-8", "gzip", gz(om)), true, ""},
		"cut mid-line, clean end": {
			serve(textType, "", []byte(full[:len(full)-5])), false, "does not parse"},
		"gzip stream cut": {
			serve(textType, "gzip", gz(full)[:30]), false, "gzip: unexpected EOF"},
		"openmetrics without # EOF": {
			serve("application/openmetrics-text; version=1.0.0", "", []byte(full)), false, "# EOF"},
		"short by content-length": {func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", textType)
			w.Header().Set("Content-Length", strconv.Itoa(len(full)+100))
			_, _ = io.WriteString(w, full)
		}, false, "unexpected EOF"},
		"missing series": {
			serve(textType, "", []byte(full[:strings.LastIndex(full[:len(full)-1], "\n")+1])), false, "1 of 2 samples"},
		"no Content-Type": {serve("", "", []byte(full)), false, "Content-Type"},
		"server error": {func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "boom", http.StatusInternalServerError)
		}, false, "HTTP 500"},
	}
	p, _ := promscrape.ProfileNamed("prom3")
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			o := o
			o.metricsURL = srv.URL
			client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
			defer client.CloseIdleConnections()
			r := scrape(context.Background(), client, o, p, &buffers{})
			if r.Complete != tc.complete {
				t.Fatalf("complete = %v, want %v (%+v)", r.Complete, tc.complete, r)
			}
			if got := incompleteReason(expectedSamples(o), r); !tc.complete && !strings.Contains(got, tc.reason) {
				t.Fatalf("reason %q does not contain %q", got, tc.reason)
			}
		})
	}
}

func TestScrapeAsksAsTheProfile(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("Accept")+" | "+r.Header.Get("Accept-Encoding"))
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = io.WriteString(w, "a 1\n")
	}))
	defer srv.Close()
	o := options{agents: 1, families: 1, series: 1, scrapes: 2, scrapeTimeout: 5 * time.Second, metricsURL: srv.URL,
		profiles: promscrape.Profiles[:2]}
	var s summary
	scrapeAll(context.Background(), o, &s)
	p0, p1 := promscrape.Profiles[0], promscrape.Profiles[1]
	want := []string{
		p0.Accept + " | " + p0.AcceptEncoding, p1.Accept + " | " + p1.AcceptEncoding,
		p0.Accept + " | " + p0.AcceptEncoding, p1.Accept + " | " + p1.AcceptEncoding,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("requests:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if s.Scrapes != 4 || len(s.Formats) != 2 || s.Formats[1].Scrapes != 2 || s.Formats[1].Profile != p1.Name {
		t.Fatalf("summary %+v", s)
	}
}
