package agentprometheusexporter

import (
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

func TestScrapersReleaseRunsSeenByEveryRegularScraper(t *testing.T) {
	sec := func(n int) int64 { return int64(n) * int64(time.Second) }
	sc := newScrapers()
	assert.Equal(t, int64(math.MinInt64), sc.releasedBefore(0), "before any scrape every run is held")

	sc.served("a", sec(0), sec(0))
	assert.Equal(t, sec(0), sc.releasedBefore(sec(1)), "the first scrape of anyone releases what it saw")

	// a and b come every 10 s; b was last served the encoding of second 15.
	sc.served("a", sec(10), sec(10))
	sc.served("b", sec(5), sec(5))
	sc.served("b", sec(15), sec(15))
	sc.served("a", sec(20), sec(20))
	assert.Equal(t, sec(15), sc.releasedBefore(sec(21)), "held until the scraper served longest ago has come")
	assert.Equal(t, 2, sc.regularCount(sec(21)))

	sc.served("curl", sec(21), sec(21))
	assert.Equal(t, sec(15), sc.releasedBefore(sec(22)), "a one-off scrape neither holds nor releases")

	// b stops coming: after 3 of its intervals (at least 30 s) it is gone.
	for s := 30; s <= 50; s += 10 {
		sc.served("a", sec(s), sec(s))
	}
	assert.Equal(t, sec(15), sc.releasedBefore(sec(45)), "b may still come")
	assert.Equal(t, sec(50), sc.releasedBefore(sec(50)), "b missed its scrapes: only a holds")
	assert.Equal(t, 1, sc.regularCount(sec(50)))

	// Everyone stops: the latest scrape of anyone releases.
	assert.Equal(t, sec(50), sc.releasedBefore(sec(500)))
	assert.Zero(t, sc.regularCount(sec(500)))
}

func TestScrapersRememberABoundedNumber(t *testing.T) {
	sc := newScrapers()
	for i := range 3 * maxScrapers {
		sc.served(fmt.Sprintf("10.0.0.%d", i), int64(i), int64(i))
	}
	assert.Len(t, sc.byHost, maxScrapers)
}

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
	return out
}

func deltaBatch(start, end time.Duration, v int64) pmetric.Metrics {
	md, ms := batch(agent)
	dp := sum(ms, "jobs.done", "", true, pmetric.AggregationTemporalityDelta).AppendEmpty()
	dp.SetStartTimestamp(ts(start))
	dp.SetTimestamp(ts(end))
	dp.SetIntValue(v)
	return md
}

func TestANewRunIsShownAsZeroUntilEveryScraperHasSeenIt(t *testing.T) {
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
	te.clock.advance(time.Second)
	assert.Zero(t, te.scrapeFrom(a)["jobs_done_total"], "a sees the run's zero")
	te.clock.advance(time.Second)
	assert.Zero(t, te.scrapeFrom(a)["jobs_done_total"], "b has not seen it yet: still the zero")
	assert.Zero(t, te.scrapeFrom(b)["jobs_done_total"], "b sees the zero")
	te.clock.advance(time.Second)
	assert.Equal(t, 5.0, te.scrapeFrom(a)["jobs_done_total"], "both have seen the zero: the value")
	assert.Equal(t, 5.0, te.scrapeFrom(b)["jobs_done_total"])

	// A continued run is not held; a new one is.
	te.clock.advance(time.Second)
	te.consume(deltaBatch(time.Minute, 2*time.Minute, 3))
	assert.Equal(t, 8.0, te.scrapeFrom(b)["jobs_done_total"])
	te.clock.advance(time.Second)
	te.consume(deltaBatch(5*time.Minute, 6*time.Minute, 9))
	assert.Zero(t, te.scrapeFrom(b)["jobs_done_total"])
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
			case <-done:
				t.Fatal("shutdown did not wait for the scraper")
			case <-time.After(100 * time.Millisecond):
			}
			te.clock.advance(10 * time.Second)
			assert.Zero(t, te.scrapeFrom("127.0.0.1")["jobs_done_total"], "the new run's zero")
			select {
			case <-done:
				t.Fatal("shutdown did not wait for the scrape that shows the run's value")
			case <-time.After(100 * time.Millisecond):
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
