package soak

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/statsgate/statsgate/internal/testnet"
	"github.com/statsgate/statsgate/test/internal/gatewaytest"
	"github.com/statsgate/statsgate/test/internal/proctest"
)

const (
	// idleSeries per load, from idleResources agents: 5,000 series each,
	// under the default max_series_per_resource (50,000).
	idleSeries    = 100_000
	idleResources = 20
	idleBatch     = 5_000

	// idleExpiration lets two loads expire within the test; the control's
	// lets nothing expire during it.
	idleExpiration        = 20 * time.Second
	idleControlExpiration = 10 * time.Minute
	// idleExpiryBound: a series is removed by the sweep (every expiration/4)
	// after its expiration, counted from the end of the load.
	idleExpiryBound = idleExpiration + idleExpiration/4 + 10*time.Second
)

// idleEnv is the gateways' runtime settings: Go's defaults, pinned so that
// a GOGC or GOMEMLIMIT in the test's environment does not change the
// figures, and Go's GC trace, which operators turn on to watch the
// collector's own GCs: it reports each GC's marked live heap and changes
// no GC decision. With the defaults nothing but allocation starts a GC (or
// sysmon, 2 minutes after the last one; never with GOGC=off), so the
// heap figure of the telemetry (HeapAlloc) keeps expired series' garbage
// until something allocates; the test relies on the second load's own
// allocation to start the GCs that find them gone.
var idleEnv = []string{"GOGC=100", "GOMEMLIMIT=off", "GODEBUG=gctrace=1"}

// TestMemoryWithoutScrapes: nothing scrapes /metrics. The series of agents
// that stopped must expire and their memory be reused: after they expire
// the live heap is back where it started, and a second load of as many new
// series (new agents, new label values) needs no more memory than the
// first. contrib's exporter keeps its series until a scrape, so without
// scrapes its memory grows with every generation of agents.
//
// A control gateway, the same but with a metric_expiration of 10 minutes,
// gets the same loads at the same time, and every check must fail on it:
// the checks can tell memory that is reused from memory that is held.
func TestMemoryWithoutScrapes(t *testing.T) {
	bin := gatewaytest.Binary(t)
	began := time.Now()
	dir := t.TempDir()
	expiring := startIdle(t, bin, dir, "expiring", idleExpiration)
	control := startIdle(t, bin, dir, "control", idleControlExpiration)
	gws := []*idleGateway{expiring, control}
	readAll := func(phase string, liveHeap bool) {
		t.Helper()
		for _, g := range gws {
			g.read(t, phase, liveHeap)
		}
	}

	readAll("started", true)
	loadAll(t, gws, 1)
	loaded := time.Now()
	expiring.waitActive(t, idleSeries, time.Minute)
	control.waitActive(t, idleSeries, time.Minute)
	readAll("loaded", true)

	// Read through the collector's telemetry, not the exporter's /metrics:
	// that would be a scrape. No live heap reading here: its forced GCs
	// would do for the second load what the runtime must do by itself.
	expiring.waitActive(t, 0, time.Until(loaded.Add(idleExpiryBound)))
	readAll("expired", false)

	loadAll(t, gws, 2)
	loaded = time.Now()
	expiring.waitActive(t, idleSeries, time.Minute)
	control.waitActive(t, 2*idleSeries, time.Minute)
	readAll("reloaded", true)

	expiring.waitActive(t, 0, time.Until(loaded.Add(idleExpiryBound)))
	readAll("expired again", true)

	t.Logf("%-8s %-13s %8s %8s %6s %10s %12s %10s %10s", "gateway", "phase", "active", "expired", "GC no.", "live heap", "heap (tel.)", "VmRSS", "VmHWM")
	for _, g := range gws {
		for _, r := range g.readings {
			live := "-"
			if r.liveHeap > 0 {
				live = mib(r.liveHeap)
			}
			t.Logf("%-8s %-13s %8.0f %8.0f %6d %10s %12s %10s %10s", g.name, r.phase, r.active, r.expired, r.gcs, live, mib(r.heapAlloc), mib(r.rss), mib(r.hwm))
		}
	}
	for _, g := range gws {
		require.NoError(t, g.proc.Running())
	}
	// What an operator's dashboard shows once the series are gone: the
	// heap figure waits for a GC, and none runs while nothing allocates.
	_, idle, err := expiring.naturalGCs("loaded", "expired")
	require.NoError(t, err)
	t.Logf("expiring, series expired: heap figure of the telemetry %s (live heap before: %s); GCs started by the runtime since the load: %d",
		mib(expiring.at("expired").heapAlloc), mib(expiring.at("loaded").liveHeap), idle)
	assert.Equal(t, float64(2*idleSeries), expiring.at("expired again").expired, "expiring: series expired")
	assert.Equal(t, float64(idleSeries), control.at("expired").active, "control: series held after the expiring gateway's expired")
	assert.Equal(t, float64(2*idleSeries), control.at("expired again").active, "control: series held at the end")

	for _, g := range gws {
		load := g.at("loaded").liveHeap - g.at("started").liveHeap
		// The bounds are fractions of what one load holds: it must be
		// large enough to tell apart from the gateway's own noise.
		require.Greater(t, load, 10.0*(1<<20), "%s: the first load holds only %s of live heap", g.name, mib(load))
		natural, n, err := g.naturalGCs("expired", "reloaded")
		require.NoError(t, err)
		require.Positive(t, n, "%s: the runtime ran no GC during the second load", g.name)
		for _, c := range idleChecks(g, load, natural) {
			verdict := "within"
			if !c.ok() {
				verdict = "BEYOND"
			}
			t.Logf("%-8s %-66s %9s %s %9s", g.name, c.what+":", mib(c.got), verdict, mib(c.bound))
			if g == expiring {
				assert.True(t, c.ok(), "%s: %s is %s, beyond %s", g.name, c.what, mib(c.got), mib(c.bound))
			} else {
				assert.False(t, c.ok(), "%s: %s is %s, within %s: the check cannot tell held memory from reused", g.name, c.what, mib(c.got), mib(c.bound))
			}
		}
	}
	t.Logf("took %v", time.Since(began).Round(time.Second))
}

// idleCheck is one bound, in bytes.
type idleCheck struct {
	what       string
	got, bound float64
}

func (c idleCheck) ok() bool { return c.got <= c.bound }

// idleChecks are the bounds, in loads: load is the live heap one load of
// series adds (18.5 MiB, ~195 B a series). Measured on 2 shared cores,
// the expiring gateway against the control:
//
//   - Back where it started once both loads expired: within a tenth of a
//     load, for what expired series may leave behind (measured: +0.1 MiB;
//     the control holds 2 loads).
//   - After the second load, one load's live heap, not two: within 1.25
//     loads, for connection buffers and pools that differ between loads
//     (measured: 1.00 loads; the control 2.00).
//   - The GCs the runtime started by itself during the second load found
//     the first one gone: the least live heap one of them marked is below
//     one load, which is what the control's GCs mark at least, load 1
//     being held (measured: 5–9 MiB, the first GC early in the load; the
//     control 27–34 MiB).
//   - VmRSS and VmHWM grow on the second load by less than 2/3 of a load.
//     Holding the first load, the heap needs a load more and the GC's goal
//     grows with it (measured: +22.1 to +35.2 MiB, 1.2 to 1.9 loads);
//     reusing it, the pages grow only by those the heap had mapped but not
//     yet touched, or that the scavenger returned between the loads
//     (measured: -1.4 to +6.4 MiB, up to 0.35 loads). 2/3 is about the
//     geometric middle of the two.
func idleChecks(g *idleGateway, load, natural float64) []idleCheck {
	started, loaded, reloaded, expired := g.at("started"), g.at("loaded"), g.at("reloaded"), g.at("expired again")
	return []idleCheck{
		{"live heap after both loads expired, above the start", expired.liveHeap - started.liveHeap, load / 10},
		{"live heap after the second load, above the start", reloaded.liveHeap - started.liveHeap, 1.25 * load},
		{"least live heap of the runtime's GCs in load 2, above the start", natural - started.liveHeap, load},
		{"VmRSS growth from the first load to the second", reloaded.rss - loaded.rss, 2 * load / 3},
		{"VmHWM growth from the first load to the second", reloaded.hwm - loaded.hwm, 2 * load / 3},
	}
}

// idleGateway is a gateway under test and what was read from it.
type idleGateway struct {
	name     string
	cfg      gatewaytest.Config
	proc     *proctest.Proc
	readings []memReading
}

// memReading is a gateway's memory and series at one phase of the test.
type memReading struct {
	phase           string
	active, expired float64
	// gcs is the number of the last GC the trace reported.
	gcs int
	// heapAlloc is HeapAlloc from the collector's telemetry, as an
	// operator's dashboard shows it: live objects and whatever garbage
	// no GC has found yet.
	heapAlloc float64
	// rss and hwm are VmRSS and VmHWM (its peak) from /proc/PID/status.
	rss, hwm float64
	// liveHeap is HeapAlloc right after GCs forced through the pprof
	// extension (liveHeap); 0 when not read.
	liveHeap float64
}

func startIdle(t *testing.T, bin, dir, name string, expiration time.Duration) *idleGateway {
	t.Helper()
	g := &idleGateway{name: name, cfg: gatewaytest.Config{
		Addrs:      gatewaytest.FreeAddrs(t),
		Pprof:      testnet.FreeEndpoint(t),
		Processors: true,
		Exporter:   map[string]any{"metric_expiration": expiration.String()},
	}}
	cfgFile := g.cfg.WriteTemp(t)
	g.proc = proctest.Start(t, dir, name, idleEnv, bin, "--config", cfgFile)
	proctest.Poll(t, 30*time.Second, name+" healthy", func() error {
		if err := g.proc.Running(); err != nil {
			return err
		}
		resp, err := gatewaytest.HTTPClient.Get("http://" + g.cfg.Health + "/")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("health check: %d", resp.StatusCode)
		}
		return nil
	})
	return g
}

func (g *idleGateway) at(phase string) memReading {
	for _, r := range g.readings {
		if r.phase == phase {
			return r
		}
	}
	panic("no reading " + phase)
}

// telemetry reads the collector's own metrics.
func (g *idleGateway) telemetry() (active, expired, heapAlloc float64, err error) {
	fams, _, _, err := gatewaytest.Scrape("http://" + g.cfg.Telemetry + "/metrics")
	if err != nil {
		return 0, 0, 0, err
	}
	var ok bool
	if active, ok = gatewaytest.Value(fams, "otelcol_exporter_agentprometheus_series_active", nil); !ok {
		return 0, 0, 0, errors.New("no series_active in the telemetry")
	}
	if heapAlloc, ok = gatewaytest.Value(fams, "otelcol_process_runtime_heap_alloc_bytes", nil); !ok {
		return 0, 0, 0, errors.New("no heap_alloc_bytes in the telemetry")
	}
	// A counter appears with its first increment.
	expired, _ = gatewaytest.Value(fams, "otelcol_exporter_agentprometheus_series_removed", map[string]string{"reason": "expired"})
	return active, expired, heapAlloc, nil
}

func (g *idleGateway) waitActive(t *testing.T, want float64, bound time.Duration) {
	t.Helper()
	proctest.Poll(t, bound, fmt.Sprintf("%s: series_active = %.0f", g.name, want), func() error {
		if err := g.proc.Running(); err != nil {
			return err
		}
		active, expired, _, err := g.telemetry()
		if err != nil {
			return err
		}
		if active != want {
			return fmt.Errorf("series_active = %.0f (%.0f expired)", active, expired)
		}
		return nil
	})
}

// read records a phase's figures: RSS, the GC trace and the telemetry
// first, before the GCs that the live heap reading forces.
func (g *idleGateway) read(t *testing.T, phase string, withLiveHeap bool) {
	t.Helper()
	r := memReading{phase: phase}
	var err error
	r.rss, r.hwm, err = procMemory(g.proc.Cmd.Process.Pid)
	require.NoError(t, err)
	gcs, err := gcTrace(g.proc.Log)
	require.NoError(t, err)
	if len(gcs) > 0 {
		r.gcs = gcs[len(gcs)-1].n
	}
	r.active, r.expired, r.heapAlloc, err = g.telemetry()
	require.NoError(t, err)
	if withLiveHeap {
		r.liveHeap, err = liveHeap("http://" + g.cfg.Pprof)
		require.NoError(t, err)
		// The figures are of one state only if no series came or went
		// meanwhile: on a slow enough machine a load's first series
		// expire while it is read.
		active, expired, _, err := g.telemetry()
		require.NoError(t, err)
		require.True(t, active == r.active && expired == r.expired,
			"%s, %s: series changed while reading (active %.0f → %.0f, expired %.0f → %.0f): the machine is too slow for a %v expiration",
			g.name, phase, r.active, active, r.expired, expired, idleExpiration)
	}
	g.readings = append(g.readings, r)
}

// naturalGCs is the least live heap, in bytes, marked by the GCs the
// runtime started by itself between the readings from and to, and how
// many there were (+Inf and 0 for none). The trace truncates to whole MiB:
// a MiB is added, so that the figure is never below what was marked.
func (g *idleGateway) naturalGCs(from, to string) (least float64, n int, err error) {
	gcs, err := gcTrace(g.proc.Log)
	if err != nil {
		return 0, 0, err
	}
	least = math.Inf(1)
	for _, gc := range gcs {
		if gc.n > g.at(from).gcs && gc.n <= g.at(to).gcs && !gc.forced {
			least, n = min(least, (gc.liveMiB+1)*(1<<20)), n+1
		}
	}
	return least, n, nil
}

// gcLine is one line of GODEBUG=gctrace=1: "gc 17 @25.339s 0%: ...,
// 35->36->6 MB, 41 MB goal, ... 2 P", "(forced)" at the end for a
// runtime.GC call. The MB are whole MiB, truncated, the last of the three
// the heap marked live.
type gcLine struct {
	n       int
	liveMiB float64
	forced  bool
}

var gcLineRE = regexp.MustCompile(`^gc (\d+) @.* \d+->\d+->(\d+) MB, \d+ MB goal,`)

// gcTrace reads the GC trace lines from the gateway's output, in order.
func gcTrace(log string) ([]gcLine, error) {
	b, err := os.ReadFile(log)
	if err != nil {
		return nil, err
	}
	var gcs []gcLine
	for line := range strings.Lines(string(b)) {
		m := gcLineRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[1])
		live, _ := strconv.ParseFloat(m[2], 64)
		gcs = append(gcs, gcLine{n: n, liveMiB: live, forced: strings.HasSuffix(strings.TrimSpace(line), "(forced)")})
	}
	return gcs, nil
}

// procMemory reads VmRSS and VmHWM, in bytes, from /proc/pid/status.
func procMemory(pid int) (rss, hwm float64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	found := 0
	for sc.Scan() {
		key, value, _ := strings.Cut(sc.Text(), ":")
		if key != "VmRSS" && key != "VmHWM" {
			continue
		}
		kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 64)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %w", key, err)
		}
		if key == "VmRSS" {
			rss = kb * 1024
		} else {
			hwm = kb * 1024
		}
		found++
	}
	if err := sc.Err(); err != nil {
		return 0, 0, err
	}
	if found != 2 {
		return 0, 0, fmt.Errorf("/proc/%d/status lacks VmRSS or VmHWM", pid)
	}
	return rss, hwm, nil
}

// loadAll pushes the gen-th load into every gateway at once.
func loadAll(t *testing.T, gws []*idleGateway, gen int) {
	t.Helper()
	start := time.Now()
	errs := make([]error, len(gws))
	var wg sync.WaitGroup
	for i, g := range gws {
		wg.Go(func() { errs[i] = loadIdle(g.cfg.OTLP, gen) })
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	t.Logf("load %d: %d series into each gateway in %v", gen, idleSeries, time.Since(start).Round(time.Millisecond))
}

// loadIdle exports idleSeries cumulative counter series once each, as
// agents that then stop: each generation gen has agents
// (service.instance.id) and label values of its own.
func loadIdle(endpoint string, gen int) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// On a busy machine an export can take longer than the exporter's
	// default timeout (10 s); a load that takes longer than the expiration
	// fails anyway, when its first series expire before its last arrive.
	exp, err := otlpmetricgrpc.New(ctx, otlpmetricgrpc.WithEndpoint(endpoint), otlpmetricgrpc.WithInsecure(),
		otlpmetricgrpc.WithTimeout(idleExpiration))
	if err != nil {
		return err
	}
	defer func() { _ = exp.Shutdown(ctx) }()
	perResource := idleSeries / idleResources
	start := time.Now().Add(-time.Hour)
	for r := range idleResources {
		res := resource.NewSchemaless(
			attribute.String("service.name", "idle-agent"),
			attribute.String("service.instance.id", fmt.Sprintf("gen%d-agent%02d", gen, r)),
		)
		for first := 0; first < perResource; first += idleBatch {
			n := min(idleBatch, perResource-first)
			if err := exp.Export(ctx, idleCounters(res, gen, start, first, n)); err != nil {
				return fmt.Errorf("load %d, agent %d: %w", gen, r, err)
			}
		}
	}
	return nil
}

func idleCounters(res *resource.Resource, gen int, start time.Time, first, n int) *metricdata.ResourceMetrics {
	now := time.Now()
	points := make([]metricdata.DataPoint[int64], n)
	for i := range points {
		points[i] = metricdata.DataPoint[int64]{
			Attributes: attribute.NewSet(
				attribute.String("route", fmt.Sprintf("/gen%d/items/%06d", gen, first+i)),
				attribute.String("code", "200"),
			),
			StartTime: start, Time: now, Value: int64(first + i + 1),
		}
	}
	return &metricdata.ResourceMetrics{
		Resource: res,
		ScopeMetrics: []metricdata.ScopeMetrics{{
			Scope: instrumentation.Scope{Name: "statsgate/soak"},
			Metrics: []metricdata.Metrics{{
				Name: "idle.requests",
				Data: metricdata.Sum[int64]{Temporality: metricdata.CumulativeTemporality, IsMonotonic: true, DataPoints: points},
			}},
		}},
	}
}
