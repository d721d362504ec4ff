// Package soak runs the built otelcol-statsgate distribution under agent
// churn: OTLP agents join and leave continuously, the series of those that
// left expire, and a scraper reads /metrics every second. The gateway's
// series count, goroutines and memory must level off instead of growing with
// the number of agents that have come and gone, and no scrape may fail.
//
// It needs the binary: `make test` builds it, sets STATSGATE_BINARY and runs
// a 60-second soak; `make soak` runs a long one (STATSGATE_SOAK_DURATION).
package soak

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/statsgate/statsgate/internal/testnet"
	"github.com/statsgate/statsgate/test/internal/gatewaytest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
)

const (
	// expiration is short so that series expire many times over even in
	// the 60-second soak.
	expiration = 5 * time.Second
	// expiryGrace is how long after its last update a series may still be
	// served: the exporter sweeps every expiration/4, plus a second for the
	// scrape that sees it.
	expiryGrace = expiration + expiration/4 + time.Second

	// agentSlots agents are connected at any time; each stays for
	// minLifetime..maxLifetime, exporting every exportInterval, then
	// disconnects and a new agent (new service.instance.id) takes its slot:
	// about agentSlots/5s = 8 agents join and leave per second.
	agentSlots     = 40
	minLifetime    = 2 * time.Second
	maxLifetime    = 8 * time.Second
	exportInterval = time.Second
	scrapeInterval = time.Second

	// Per agent: routes×2 counter series, histRoutes histograms and a
	// gauge, so that leaked series would show in the heap, not only in the
	// series count.
	routes     = 100
	histRoutes = 10

	// plateauBound: in steady churn these quantities depend only on how
	// many agents are connected or recently gone, which the slots keep
	// constant; measured last/middle ratios are 0.94–1.10 (the live heap
	// the noisiest). A leak per agent grows linearly from the start, l·t on
	// top of the steady S, giving a ratio of (S+lT)/(S+⅔lT): above 1.25 as
	// soon as the run leaks more than 1.5×S in all. Series that never
	// expire gave 1.53 (series) and 1.36 (live heap) in 60 s; agents that
	// never close their connections gave 1.51 (goroutines).
	plateauBound = 1.25

	defaultDuration = 60 * time.Second
)

func soakDuration(t *testing.T) time.Duration {
	t.Helper()
	s := os.Getenv("STATSGATE_SOAK_DURATION")
	if s == "" {
		return defaultDuration
	}
	d, err := time.ParseDuration(s)
	require.NoError(t, err, "STATSGATE_SOAK_DURATION")
	return d
}

func TestChurnSoak(t *testing.T) {
	bin := gatewaytest.Binary(t)
	if raceEnabled {
		t.Skip("the soak measures the gateway; under -race this test cannot keep up its load and scrape cadence")
	}
	duration := soakDuration(t)
	// The first third is warm-up; it must cover an agent's life and its expiry.
	if minimum := 3 * (maxLifetime + expiryGrace); duration < minimum {
		t.Fatalf("STATSGATE_SOAK_DURATION=%v: the soak needs at least %v", duration, minimum)
	}
	if deadline, ok := t.Deadline(); ok && time.Until(deadline) < duration+time.Minute {
		t.Fatalf("go test -timeout leaves %v; a %v soak needs a minute more", time.Until(deadline).Round(time.Second), duration)
	}

	cfg := gatewaytest.Config{
		Addrs:      gatewaytest.FreeAddrs(t),
		Pprof:      testnet.FreeEndpoint(t),
		Processors: true,
		Exporter:   map[string]any{"metric_expiration": expiration.String()},
	}
	otlp, metrics, pprof, telemetry := cfg.OTLP, cfg.Metrics, cfg.Pprof, cfg.Telemetry
	g := gatewaytest.Start(t, bin, cfg.WriteTemp(t))
	gatewaytest.WaitHealthy(t, g, "http://"+cfg.Health+"/")

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	// Registered after startGateway, so it runs first: the load stops
	// before the gateway does.
	t.Cleanup(func() { cancel(); wg.Wait() })

	c := &churn{left: map[string]time.Time{}}
	start := time.Now()
	var nextID atomic.Int64
	for range agentSlots {
		wg.Go(func() {
			for ctx.Err() == nil {
				id := fmt.Sprintf("agent-%06d", nextID.Add(1))
				runAgent(ctx, otlp, id, minLifetime+rand.N(maxLifetime-minLifetime), c)
			}
		})
	}
	sc := &scrapes{}
	wg.Go(func() { sc.loop(ctx, "http://"+metrics+"/metrics", start, c) })

	samples, sampleErrs := sampleLoop(t, g, "http://"+pprof, "http://"+telemetry+"/metrics", start, duration, &sc.pause)
	cancel()
	wg.Wait()
	stopTime := g.Stop(t, 15*time.Second)

	c.mu.Lock()
	defer c.mu.Unlock()
	sc.mu.Lock()
	defer sc.mu.Unlock()
	require.NotEmpty(t, sc.durations, "no scrape ran")
	durations := slices.Sorted(slices.Values(sc.durations))
	last := samples[len(samples)-1]
	t.Logf("soak %v: %d agents joined, %d series created, %d expired; %d scrapes (p50 %v, max %v, largest body %d KiB, up to %d agents on one scrape); shutdown took %v",
		duration, nextID.Load(), int(last.created), int(last.expired), sc.n,
		durations[len(durations)/2].Round(time.Millisecond), durations[len(durations)-1].Round(time.Millisecond),
		sc.maxBytes/1024, sc.maxInstances, stopTime.Round(time.Millisecond))

	assert.Zero(t, sc.failures, "scrapes failed; first: %v", sc.firstFailure)
	assert.Zero(t, sc.empty, "scrapes without any agent's series")
	assert.Zero(t, sc.overdue, "agents still served more than %v after they left; first: %s", expiryGrace, sc.firstOverdue)
	assert.Zero(t, c.exportErrs, "OTLP exports failed; first: %v", c.firstErr)
	assert.Zero(t, sampleErrs, "reading the gateway's pprof or telemetry failed")
	// A scrape per second: hung or ever slower scrapes would pile up.
	assert.Zero(t, sc.skipped, "ticks skipped with scrapes still in flight")
	assert.GreaterOrEqual(t, sc.n, int(0.9*float64(duration/scrapeInterval)), "fewer scrapes than one a second")
	// Churn really happened: most series ever created have expired again.
	assert.Greater(t, last.expired, 2*last.series, "series did not expire")

	assertPlateau(t, "series", samples, duration, func(s sample) float64 { return s.series })
	assertPlateau(t, "goroutines", samples, duration, func(s sample) float64 { return float64(s.goroutines) })
	assertPlateau(t, "live heap", samples, duration, func(s sample) float64 { return s.liveHeap })
	assertPlateau(t, "RSS", samples, duration, func(s sample) float64 { return s.rss })
}

// churn records what the agents did, for the scraper's expiry check.
type churn struct {
	mu         sync.Mutex
	left       map[string]time.Time // instance → when its last export returned
	exportErrs int
	firstErr   error
}

func (c *churn) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.exportErrs == 0 {
		c.firstErr = err
	}
	c.exportErrs++
}

func (c *churn) leave(instance string, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.left[instance] = at
}

func (c *churn) leftAt(instance string) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.left[instance]
	return at, ok
}

// runAgent is one agent's life: its own OTLP gRPC connection and
// service.instance.id, an export every exportInterval, then disconnect.
func runAgent(ctx context.Context, endpoint, instance string, lifetime time.Duration, c *churn) {
	exp, err := otlpmetricgrpc.New(ctx, otlpmetricgrpc.WithEndpoint(endpoint), otlpmetricgrpc.WithInsecure())
	if err != nil {
		c.fail(err)
		return
	}
	defer func() {
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer scancel()
		_ = exp.Shutdown(sctx)
	}()
	res := resource.NewSchemaless(
		attribute.String("service.name", "soak-agent"),
		attribute.String("service.instance.id", instance),
	)
	start := time.Now()
	tick := time.NewTicker(exportInterval)
	defer tick.Stop()
	for n := 1; ; n++ {
		ectx, ecancel := context.WithTimeout(ctx, 10*time.Second)
		err := exp.Export(ectx, agentMetrics(res, start, n))
		ecancel()
		if ctx.Err() != nil {
			return // the soak is over
		}
		if err != nil {
			c.fail(err)
		}
		if time.Since(start) >= lifetime {
			c.leave(instance, time.Now())
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

var (
	counterAttrs = func() []attribute.Set {
		var sets []attribute.Set
		for r := range routes {
			for _, code := range []string{"200", "500"} {
				sets = append(sets, attribute.NewSet(attribute.String("route", fmt.Sprintf("/api/r%03d", r)), attribute.String("code", code)))
			}
		}
		return sets
	}()
	histAttrs = func() []attribute.Set {
		var sets []attribute.Set
		for r := range histRoutes {
			sets = append(sets, attribute.NewSet(attribute.String("route", fmt.Sprintf("/api/r%03d", r))))
		}
		return sets
	}()
	histBounds = []float64{0, 5, 10, 25, 50, 75, 100, 250, 500, 750, 1000, 2500, 5000, 7500, 10000}
)

// agentMetrics is an agent's n-th export: cumulative counters and
// histograms that grow with n, and a gauge.
func agentMetrics(res *resource.Resource, start time.Time, n int) *metricdata.ResourceMetrics {
	now := time.Now()
	sums := make([]metricdata.DataPoint[int64], len(counterAttrs))
	for i, attrs := range counterAttrs {
		sums[i] = metricdata.DataPoint[int64]{Attributes: attrs, StartTime: start, Time: now, Value: int64(n * (i%5 + 1))}
	}
	hists := make([]metricdata.HistogramDataPoint[float64], len(histAttrs))
	for i, attrs := range histAttrs {
		counts := make([]uint64, len(histBounds)+1)
		counts[i%len(counts)] = uint64(n)
		hists[i] = metricdata.HistogramDataPoint[float64]{
			Attributes: attrs, StartTime: start, Time: now,
			Count: uint64(n), Bounds: histBounds, BucketCounts: counts, Sum: float64(10 * n),
		}
	}
	return &metricdata.ResourceMetrics{
		Resource: res,
		ScopeMetrics: []metricdata.ScopeMetrics{{
			Scope: instrumentation.Scope{Name: "statsgate/soak"},
			Metrics: []metricdata.Metrics{
				{Name: "soak.requests", Data: metricdata.Sum[int64]{Temporality: metricdata.CumulativeTemporality, IsMonotonic: true, DataPoints: sums}},
				{Name: "soak.latency", Unit: "ms", Data: metricdata.Histogram[float64]{Temporality: metricdata.CumulativeTemporality, DataPoints: hists}},
				{Name: "soak.queue.depth", Data: metricdata.Gauge[int64]{DataPoints: []metricdata.DataPoint[int64]{{StartTime: start, Time: now, Value: int64(n % 7)}}}},
			},
		}},
	}
}

// scrapes is what the scraper saw.
type scrapes struct {
	// pause holds scrapes back while the live heap is read (sampleLoop): a
	// scrape's buffers and the scratch it leaves pooled are not the state
	// whose growth the soak looks for, and a reading with them is larger by
	// a megabyte or two at random, which the plateau would take for growth.
	pause        sync.RWMutex
	mu           sync.Mutex
	n            int
	skipped      int // ticks with maxInFlight scrapes still running
	failures     int
	firstFailure error
	empty        int
	overdue      int
	firstOverdue string
	durations    []time.Duration
	maxBytes     int
	maxInstances int
}

// loop starts a scrape every second, each checked by once. Scrapes run
// concurrently, so that the cadence does not depend on how fast this test
// parses; a tick that finds maxInFlight scrapes still running is skipped
// and counted.
func (s *scrapes) loop(ctx context.Context, url string, start time.Time, c *churn) {
	const maxInFlight = 4
	slots := make(chan struct{}, maxInFlight)
	var running sync.WaitGroup
	defer running.Wait()
	tick := time.NewTicker(scrapeInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		select {
		case slots <- struct{}{}:
		default:
			s.mu.Lock()
			s.skipped++
			s.mu.Unlock()
			continue
		}
		running.Go(func() {
			defer func() { <-slots }()
			s.once(ctx, url, start, c)
		})
	}
}

// once scrapes as Prometheus would, and checks that the response parses and
// serves no agent longer than expiryGrace after it left.
func (s *scrapes) once(ctx context.Context, url string, start time.Time, c *churn) {
	s.pause.RLock()
	began := time.Now()
	fams, size, took, err := gatewaytest.Scrape(url)
	s.pause.RUnlock()
	if ctx.Err() != nil {
		return // the soak is over
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	s.durations = append(s.durations, took)
	s.maxBytes = max(s.maxBytes, size)
	if err != nil {
		if s.failures == 0 {
			s.firstFailure = fmt.Errorf("after %v: %w", began.Sub(start).Round(time.Second), err)
		}
		s.failures++
		return
	}
	instances := map[string]bool{}
	for _, m := range fams["soak_requests_total"].GetMetric() {
		instances[gatewaytest.LabelValue(m, "instance")] = true
	}
	s.maxInstances = max(s.maxInstances, len(instances))
	// Agents are always connected once the first exports are in.
	if len(instances) == 0 && began.Sub(start) > 3*exportInterval {
		s.empty++
	}
	for inst := range instances {
		if left, ok := c.leftAt(inst); ok && began.Sub(left) > expiryGrace {
			if s.overdue == 0 {
				s.firstOverdue = fmt.Sprintf("%s served %v after it left", inst, began.Sub(left).Round(time.Millisecond))
			}
			s.overdue++
		}
	}
}

type sample struct {
	at                       time.Duration
	goroutines               int
	liveHeap, heap, rss      float64
	series, created, expired float64
}

// sampleLoop samples the gateway's goroutines (pprof), live heap (pprof,
// after a forced GC), heap and RSS and series counts (its own telemetry)
// about 30 times over the run, logging each sample as it goes.
func sampleLoop(t *testing.T, g *gatewaytest.Gateway, pprofURL, telemetryURL string, start time.Time, duration time.Duration, scrapes *sync.RWMutex) ([]sample, int) {
	t.Helper()
	every := min(max(duration/30, 2*time.Second), 20*time.Second)
	tick := time.NewTicker(every)
	defer tick.Stop()
	t.Logf("%8s %10s %12s %12s %10s %8s %10s %10s", "t", "goroutines", "live heap", "heap", "RSS", "series", "created", "expired")
	var samples []sample
	errs := 0
	for time.Since(start) < duration {
		select {
		case <-g.Done:
			t.Fatalf("gateway exited during the soak: %v", g.ExitErr)
		case <-tick.C:
		}
		s := sample{at: time.Since(start)}
		// Telemetry first: its heap reading is the one an operator sees,
		// before the forced GCs of liveHeap.
		fams, _, _, err := gatewaytest.Scrape(telemetryURL)
		if err != nil {
			t.Logf("telemetry: %v", err)
			errs++
			continue
		}
		if s.goroutines, err = goroutines(pprofURL); err != nil {
			t.Logf("goroutine profile: %v", err)
			errs++
			continue
		}
		scrapes.Lock()
		s.liveHeap, err = liveHeap(pprofURL)
		scrapes.Unlock()
		if err != nil {
			t.Logf("heap profile: %v", err)
			errs++
			continue
		}
		var ok [5]bool
		s.heap, ok[0] = gatewaytest.Value(fams, "otelcol_process_runtime_heap_alloc_bytes", nil)
		s.rss, ok[1] = gatewaytest.Value(fams, "otelcol_process_memory_rss", nil)
		s.series, ok[2] = gatewaytest.Value(fams, "otelcol_exporter_agentprometheus_series_active", nil)
		s.created, ok[3] = gatewaytest.Value(fams, "otelcol_exporter_agentprometheus_series_created", nil)
		s.expired, ok[4] = gatewaytest.Value(fams, "otelcol_exporter_agentprometheus_series_removed", map[string]string{"reason": "expired"})
		// Counters appear with their first increment: only the gauges must be there.
		if !ok[0] || !ok[1] || !ok[2] {
			t.Logf("telemetry lacks a process or series gauge: %v", ok)
			errs++
			continue
		}
		t.Logf("%8v %10d %12s %12s %10s %8.0f %10.0f %10.0f", s.at.Round(time.Second), s.goroutines,
			mib(s.liveHeap), mib(s.heap), mib(s.rss), s.series, s.created, s.expired)
		samples = append(samples, s)
	}
	require.NotEmpty(t, samples)
	return samples, errs
}

func mib(b float64) string { return fmt.Sprintf("%.1f MiB", b/(1<<20)) }

// assertPlateau checks that a sampled quantity levels off: its maximum over
// the last third of the run may not exceed plateauBound times its maximum
// over the middle third. The first third is warm-up (agents joining, the
// first expiries, the heap growing to its working size).
func assertPlateau(t *testing.T, name string, samples []sample, total time.Duration, get func(sample) float64) {
	t.Helper()
	var middle, last float64
	var nm, nl int
	for _, s := range samples {
		switch {
		case s.at < total/3:
		case s.at < 2*total/3:
			middle, nm = max(middle, get(s)), nm+1
		default:
			last, nl = max(last, get(s)), nl+1
		}
	}
	if !assert.Positive(t, nm, "no %s samples in the middle third", name) || !assert.Positive(t, nl, "no %s samples in the last third", name) {
		return
	}
	t.Logf("plateau %-10s middle-third max %s, last-third max %s: ratio %.2f (bound %.2f)", name+":", human(name, middle), human(name, last), last/middle, plateauBound)
	assert.LessOrEqual(t, last, plateauBound*middle, "%s keeps growing: last-third max %s > %.2f × middle-third max %s",
		name, human(name, last), plateauBound, human(name, middle))
}

func human(name string, v float64) string {
	if strings.Contains(name, "heap") || name == "RSS" {
		return mib(v)
	}
	return fmt.Sprintf("%.0f", v)
}
