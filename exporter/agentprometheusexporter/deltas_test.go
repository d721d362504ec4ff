package agentprometheusexporter

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// scrapeFrom scrapes the text format from a given loopback address, as a
// second Prometheus server would.
func (te *testExporter) scrapeFrom(ip string) map[string]float64 {
	te.t.Helper()
	client := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}).DialContext}}
	req, err := http.NewRequest(http.MethodGet, "http://"+te.endpoint+metricsPath, nil)
	require.NoError(te.t, err)
	req.Header.Set("Accept", acceptText)
	resp, err := client.Do(req)
	require.NoError(te.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(te.t, err)
	fams, err := decodeExposition(body, resp.Header.Get("Content-Type"))
	require.NoError(te.t, err)
	out := map[string]float64{}
	for name, mf := range fams {
		for _, m := range mf.GetMetric() {
			out[name] += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return out // a family without series is not in it
}

func deltaBatch(start, end time.Duration, v int64) pmetric.Metrics {
	md, ms := batch(agent)
	dp := sum(ms, "jobs.done", "", true, pmetric.AggregationTemporalityDelta).AppendEmpty()
	dp.SetStartTimestamp(ts(start))
	dp.SetTimestamp(ts(end))
	dp.SetIntValue(v)
	return md
}

func TestEveryScraperSeesANewRunLeftOutThenZeroThenItsValue(t *testing.T) {
	te := startExporter(t, nil)
	a, b := "127.0.0.1", "127.0.0.2"
	// Two Prometheus servers scrape every 10 s.
	for range 2 {
		te.clock.advance(10 * time.Second)
		te.scrapeFrom(a)
		te.scrapeFrom(b)
	}
	te.clock.advance(time.Second)
	te.consume(deltaBatch(0, time.Minute, 5))
	type step struct {
		from string
		want float64
		left bool // the series is not in the scrape
		why  string
	}
	for i, s := range []step{
		{a, 0, true, "a: the run is left out: another gateway's last value may not be scraped yet"},
		{a, 0, true, "b has not been left it out yet"},
		{b, 0, true, "b: left out"},
		{b, 0, false, "b: the zero"},
		{a, 0, false, "a: the zero"},
		{a, 5, false, "both saw the zero: the value"},
		{b, 5, false, "b: the value"},
	} {
		te.clock.advance(time.Second)
		got, ok := te.scrapeFrom(s.from)["jobs_done_total"]
		assert.Equal(t, s.left, !ok, "step %d: %s", i, s.why)
		assert.Equal(t, s.want, got, "step %d: %s", i, s.why)
	}

	// A continued run is shown at once; a new one in steps again.
	te.clock.advance(time.Second)
	te.consume(deltaBatch(time.Minute, 2*time.Minute, 3))
	got, ok := te.scrapeFrom(b)["jobs_done_total"]
	assert.True(t, ok)
	assert.Equal(t, 8.0, got)
	te.clock.advance(time.Second)
	te.consume(deltaBatch(5*time.Minute, 6*time.Minute, 9))
	_, ok = te.scrapeFrom(b)["jobs_done_total"]
	assert.False(t, ok, "a run after a gap is new again")
}

func TestShutdownWaitsForScrapersToTakeTheLastDeltas(t *testing.T) {
	for _, tc := range []struct {
		name    string
		deltas  bool
		scraper bool
		waits   bool
	}{
		{name: "deltas and a scraper: waits for it", deltas: true, scraper: true, waits: true},
		{name: "no deltas: nothing to hand on", scraper: true},
		{name: "no scraper: nobody to wait for", deltas: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			te := startExporter(t, func(c *Config) { c.Scrape.DrainTimeout = 20 * time.Second })
			if tc.scraper {
				for range 2 {
					te.clock.advance(10 * time.Second)
					te.scrapeFrom("127.0.0.1")
				}
			}
			te.clock.advance(time.Second)
			if tc.deltas {
				te.consume(deltaBatch(0, time.Minute, 5))
			} else {
				md, ms := batch(agent)
				gauge(ms, "g", 1, nil)
				te.consume(md)
			}
			done := make(chan error, 1)
			go func() { done <- te.exp.shutdown(context.Background()) }()
			if !tc.waits {
				select {
				case err := <-done:
					require.NoError(t, err)
				case <-time.After(5 * time.Second):
					t.Fatal("shutdown waited without deltas to hand on or a scraper to take them")
				}
				return
			}
			select {
			case err := <-done:
				t.Fatalf("shutdown did not wait for the scraper (it returned %v)", err)
			case <-time.After(100 * time.Millisecond):
			}
			for _, step := range []string{"the new run left out", "the new run's zero"} {
				te.clock.advance(10 * time.Second)
				assert.Zero(t, te.scrapeFrom("127.0.0.1")["jobs_done_total"], step)
				select {
				case err := <-done:
					t.Fatalf("shutdown did not wait for the scrape that shows the run's value (after %s; it returned %v)", step, err)
				case <-time.After(100 * time.Millisecond):
				}
			}
			te.clock.advance(10 * time.Second)
			assert.Equal(t, 5.0, te.scrapeFrom("127.0.0.1")["jobs_done_total"], "the last deltas")
			select {
			case err := <-done:
				require.NoError(t, err)
			case <-time.After(5 * time.Second):
				t.Fatal("shutdown went on waiting after the scraper took the last deltas")
			}
		})
	}
}

func TestShutdownWaitsForTheLastDeltasAtMostDrainTimeout(t *testing.T) {
	te := startExporter(t, func(c *Config) { c.Scrape.DrainTimeout = 300 * time.Millisecond })
	for range 2 {
		te.clock.advance(10 * time.Second)
		te.scrapeFrom("127.0.0.1")
	}
	te.clock.advance(time.Second)
	te.consume(deltaBatch(0, time.Minute, 5))
	start := time.Now()
	require.NoError(t, te.exp.shutdown(context.Background()))
	assert.InDelta(t, 300*time.Millisecond, time.Since(start), float64(200*time.Millisecond))
}
