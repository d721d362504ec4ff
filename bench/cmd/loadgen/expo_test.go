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

const sampleBody = `# HELP target_info Target metadata
# TYPE target_info gauge
target_info{host_name="h",job="bench/svc",instance="i"} 1
# HELP loadgen_queue_depth_f000 Items waiting in the queue.
# TYPE loadgen_queue_depth_f000 gauge
loadgen_queue_depth_f000{http_route="/a",job="bench/svc"} 0.5
loadgen_queue_depth_f000{http_route="/b",job="bench/svc"} 1.5
target_info_like_name 3

`

func TestExpoCounterEveryChunking(t *testing.T) {
	for split := 0; split <= len(sampleBody); split++ {
		c := newExpoCounter()
		_, _ = c.Write([]byte(sampleBody[:split]))
		_, _ = c.Write([]byte(sampleBody[split:]))
		if c.samples != 4 || c.targetInfo != 1 || c.comments != 4 || c.types != 2 || c.blank != 1 {
			t.Fatalf("split %d: samples %d target_info %d comments %d types %d blank %d", split, c.samples, c.targetInfo, c.comments, c.types, c.blank)
		}
		if !c.endsWithNewline() || c.partialLine() {
			t.Fatalf("split %d: complete body seen as cut", split)
		}
	}
}

func TestExpoCounterTruncated(t *testing.T) {
	cut := len(sampleBody) - 30 // inside the last loadgen_queue_depth_f000 line
	c := newExpoCounter()
	_, _ = c.Write([]byte(sampleBody[:cut]))
	if c.endsWithNewline() || !c.partialLine() {
		t.Fatalf("cut body not detected: ends newline %v partial %v", c.endsWithNewline(), c.partialLine())
	}
	if c.samples != 2 {
		t.Fatalf("partial line counted as a sample: %d", c.samples)
	}
	if empty := newExpoCounter(); empty.endsWithNewline() || empty.partialLine() {
		t.Fatal("empty body must not end with a newline nor have a partial line")
	}
}

func TestExpectedSamples(t *testing.T) {
	o := options{agents: 2, families: 10, series: 3, scrapes: 1, concurrency: 1, timeout: time.Second, scrapeTimeout: time.Second, metricsURL: "http://127.0.0.1:1/metrics"}
	// Per agent and series: 4 gauges + 3 counters + 3 histograms × 13 samples.
	if got, want := expectedSamples(o), int64(2*3*(4+3+3*13)); got != want {
		t.Fatalf("expectedSamples = %d, want %d", got, want)
	}
	md := o.shape().Batch("agent", 0, 1, 2)
	if n := md.DataPointCount(); n != 10*3 {
		t.Fatalf("points per agent = %d, want 30", n)
	}
	if err := o.validate(); err != nil {
		t.Fatal(err)
	}
}

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

func TestTableRowNoResponse(t *testing.T) {
	s := &summary{Name: "prometheus", OTLPSeries: 1_000_000, ExpectedSamples: 4_600_000, Scrapes: 1,
		Statuses: map[string]int{"0": 1}, CompleteCount: 0,
		Runs: []scrapeResult{{Status: 0, Error: `Get "http://127.0.0.1:1/metrics": EOF`}}}
	row := tableRow(s)
	for _, want := range []string{"| prometheus | 1M |", "| none |", "no HTTP response", "EOF"} {
		if !strings.Contains(row, want) {
			t.Fatalf("row %q lacks %q", row, want)
		}
	}
}
