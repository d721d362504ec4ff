package main

import (
	"testing"
	"time"

	"github.com/statsgate/statsgate/bench/internal/promscrape"
)

func TestExpectedSamples(t *testing.T) {
	o := options{agents: 2, families: 10, series: 3, scrapes: 1, concurrency: 1, timeout: time.Second, scrapeTimeout: time.Second, metricsURL: "http://127.0.0.1:1/metrics",
		profiles: promscrape.Profiles}
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
