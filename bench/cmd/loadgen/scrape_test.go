package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestScrapeDetectsCutBodies(t *testing.T) {
	o := options{agents: 1, families: 1, series: 2, scrapeTimeout: 5 * time.Second}
	full := "# TYPE loadgen_queue_depth_f000_items gauge\nloadgen_queue_depth_f000_items{a=\"1\"} 1\nloadgen_queue_depth_f000_items{a=\"2\"} 2\n"
	cases := map[string]struct {
		handler  http.HandlerFunc
		complete bool
		reason   string
	}{
		"complete": {func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, full) }, true, ""},
		"cut mid-line, clean end": {func(w http.ResponseWriter, _ *http.Request) {
			io.WriteString(w, full[:len(full)-5])
		}, false, "body cut mid-line"},
		"short by content-length": {func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Length", strconv.Itoa(len(full)+100))
			io.WriteString(w, full)
		}, false, "unexpected EOF"},
		"missing series": {func(w http.ResponseWriter, _ *http.Request) {
			io.WriteString(w, full[:strings.LastIndex(full[:len(full)-1], "\n")+1])
		}, false, "1 of 2 samples"},
		"server error": {func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "boom", http.StatusInternalServerError)
		}, false, "HTTP 500"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			o := o
			o.metricsURL = srv.URL
			client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
			defer client.CloseIdleConnections()
			r := scrape(context.Background(), client, o, false)
			if r.Complete != tc.complete {
				t.Fatalf("complete = %v, want %v (%+v)", r.Complete, tc.complete, r)
			}
			if got := incompleteReason(&summary{ExpectedSamples: expectedSamples(o)}, r); !strings.Contains(got, tc.reason) {
				t.Fatalf("reason %q does not contain %q", got, tc.reason)
			}
		})
	}
}
