package lifecycle

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/statsgate/statsgate/test/internal/gatewaytest"
)

const (
	reloadAgents = 5
	reloadRoutes = 10
	// recoveryBound: after a reload the exporter starts empty and each
	// series comes back with its agent's next export; an export refused
	// during the reload is retried by the SDK after ~5s (its default).
	recoveryBound = 30 * time.Second
)

// A reload changes the const label (so every series is seen to move to the
// new config) and lowers max_series to a value that still covers the agents.
var (
	beforeReload = settings{gateway: "before", maxSeries: 1_000_000}
	afterReload  = settings{gateway: "after", maxSeries: 10_000}
)

func TestConfigReload(t *testing.T) {
	bin := gatewaytest.Binary(t)
	t.Run("SIGHUP", func(t *testing.T) {
		testReload(t, func(t *testing.T, g *gatewaytest.Gateway, _ string, _ gatewaytest.Addrs) *gatewaytest.Gateway {
			// otelcol re-reads the config file on SIGHUP and restarts the
			// service in the same process.
			require.NoError(t, g.Cmd.Process.Signal(syscall.SIGHUP))
			waitLog(t, g, "Config updated, restart service", 1, 10*time.Second)
			waitLog(t, g, "Everything is ready", 2, 10*time.Second)
			return g
		})
	})
	t.Run("restart", func(t *testing.T) {
		testReload(t, func(t *testing.T, g *gatewaytest.Gateway, cfg string, p gatewaytest.Addrs) *gatewaytest.Gateway {
			g.Stop(t, shutdownBound)
			assertCleanShutdown(t, g)
			g2 := gatewaytest.Start(t, bin, cfg)
			gatewaytest.WaitHealthy(t, g2, "http://"+p.Health+"/")
			return g2
		})
	})
}

// testReload runs agents that export cumulative counters and histograms
// every second through a config change applied by reload, and checks that
// every series they had on /metrics before comes back under the new config
// within recoveryBound, none lower than before; and that a client exporting
// back to back through the reload loses no export: none fails for good, and
// the last one acknowledged is the one served.
func testReload(t *testing.T, reload func(t *testing.T, g *gatewaytest.Gateway, cfg string, p gatewaytest.Addrs) *gatewaytest.Gateway) {
	p := gatewaytest.FreeAddrs(t)
	cfg := filepath.Join(t.TempDir(), "gateway.yaml")
	writeConfig(t, cfg, p, beforeReload)
	g := gatewaytest.Start(t, gatewaytest.Binary(t), cfg)
	gatewaytest.WaitHealthy(t, g, "http://"+p.Health+"/")
	metricsURL := "http://" + p.Metrics + "/metrics"

	ag := startAgents(t, p.OTLP)
	pu := startPusher(t, p.OTLP)
	var before map[string]float64
	require.Eventually(t, func() bool {
		fams, _, _, err := gatewaytest.Scrape(metricsURL)
		if err != nil {
			return false
		}
		var n int
		before, n = snapshot(fams, beforeReload.gateway)
		return n == reloadAgents*(reloadRoutes+2)
	}, 15*time.Second, 100*time.Millisecond, "the agents' series never all appeared")

	writeConfig(t, cfg, p, afterReload)
	reloadAt := time.Now()
	g = reload(t, g, cfg, p)
	reloaded := time.Since(reloadAt)
	// Nothing is acknowledged while no receiver runs: this is the old
	// config's last acknowledgement, or the new one's first.
	ackedAtReload := pu.acked.Load()

	// Poll until every series is back. On every scrape on the way, no
	// series may be lower than it was before the reload.
	var after map[string]float64
	var firstCoverage int
	var backwards []string
	firstScrape := true
	deadline := time.Now().Add(recoveryBound)
	for {
		fams, _, _, err := gatewaytest.Scrape(metricsURL)
		if err == nil {
			after, _ = snapshot(fams, afterReload.gateway)
			present := 0
			for key, v := range before {
				if now, ok := after[key]; ok {
					present++
					if now < v {
						backwards = append(backwards, fmt.Sprintf("%s: %v -> %v", key, v, now))
					}
				}
			}
			if firstScrape {
				firstCoverage, firstScrape = present, false
			}
			if present == len(before) {
				assert.Zero(t, countLabel(fams, "gateway", beforeReload.gateway), "series with the old config's const label still served")
				break
			}
		}
		if time.Now().After(deadline) {
			var missing []string
			for key := range before {
				if _, ok := after[key]; !ok {
					missing = append(missing, key)
				}
			}
			slices.Sort(missing)
			t.Fatalf("%d of %d series never came back within %v of the reload, e.g. %v", len(missing), len(before), recoveryBound, missing[:min(5, len(missing))])
		}
		time.Sleep(50 * time.Millisecond)
	}
	recovered := time.Since(reloadAt)
	assert.Empty(t, backwards, "series went backwards across the reload")

	ag.stop(t)
	assert.Zero(t, ag.failures(), "agent exports failed for good: %v", ag.firstErr)

	// The pusher's exports get through the new config too (its gRPC
	// connection reconnects with backoff), and the last one acknowledged
	// is the one served.
	require.Eventually(t, func() bool { return pu.acked.Load() > ackedAtReload+1 }, recoveryBound, 50*time.Millisecond,
		"no export acknowledged after the reload")
	acked, exports, gap, perr := pu.stop()
	assert.NoError(t, perr, "an export across the reload failed for good")
	// stop cancels the export in flight, if any: it may have been stored
	// without its acknowledgement arriving, so acked+1 may be served too.
	require.Eventually(t, func() bool {
		fams, _, _, err := gatewaytest.Scrape(metricsURL)
		if err != nil {
			return false
		}
		v, ok := gatewaytest.Value(fams, "reload_sequence", map[string]string{"gateway": afterReload.gateway})
		return ok && (v == float64(acked) || v == float64(acked+1))
	}, 5*time.Second, 50*time.Millisecond, "the last acknowledged export (%d) is not served", acked)

	g.Stop(t, shutdownBound)
	assertCleanShutdown(t, g)
	t.Logf("reload applied in %v; all %d series back (none lower) %v after it; the first scrape after the reload had %d of them; "+
		"a client exporting every 5ms had %d exports acknowledged, none lost, and waited at most %v for an acknowledgement",
		reloaded.Round(time.Millisecond), len(before), recovered.Round(time.Millisecond), firstCoverage,
		exports, gap.Round(time.Millisecond))
}

// pusher exports a gauge carrying an increasing sequence number every 5ms,
// back to back, so that exports are in flight through the whole reload; the
// exporter retries refused exports as SDK exporters do by default, at a
// shorter interval.
type pusher struct {
	cancel  context.CancelFunc
	done    chan struct{}
	acked   atomic.Int64 // the last sequence number acknowledged
	exports int
	maxGap  time.Duration
	err     error
}

func startPusher(t *testing.T, endpoint string) *pusher {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	exp, err := otlpmetricgrpc.New(ctx, otlpmetricgrpc.WithEndpoint(endpoint), otlpmetricgrpc.WithInsecure(),
		otlpmetricgrpc.WithRetry(otlpmetricgrpc.RetryConfig{Enabled: true, InitialInterval: 50 * time.Millisecond, MaxInterval: 500 * time.Millisecond, MaxElapsedTime: 10 * time.Second}))
	require.NoError(t, err)
	pu := &pusher{cancel: cancel, done: make(chan struct{})}
	// Stops a pusher the test left running; its figures are then of no interest.
	t.Cleanup(func() { pu.cancel(); <-pu.done })
	res := agentResource("reload-pusher", "pusher")
	go func() {
		defer close(pu.done)
		defer func() { _ = exp.Shutdown(context.Background()) }()
		for seq := int64(1); ctx.Err() == nil; seq++ {
			rm := &metricdata.ResourceMetrics{
				Resource: res,
				ScopeMetrics: []metricdata.ScopeMetrics{{
					Scope: instrumentation.Scope{Name: "statsgate/reload"},
					Metrics: []metricdata.Metrics{{
						Name: "reload.sequence",
						Data: metricdata.Gauge[int64]{DataPoints: []metricdata.DataPoint[int64]{{Time: time.Now(), Value: seq}}},
					}},
				}},
			}
			began := time.Now()
			err := exp.Export(ctx, rm)
			took := time.Since(began)
			switch {
			case ctx.Err() != nil:
				return
			case err != nil:
				pu.err = err
				return
			}
			pu.acked.Store(seq)
			pu.exports++
			pu.maxGap = max(pu.maxGap, took)
			time.Sleep(5 * time.Millisecond)
		}
	}()
	return pu
}

// stop ends the pushing and returns the last acknowledged sequence number,
// the exports acknowledged, the longest wait for one, and the error that
// ended the pushing early, if any.
func (pu *pusher) stop() (acked int64, exports int, maxGap time.Duration, err error) {
	pu.cancel()
	<-pu.done
	return pu.acked.Load(), pu.exports, pu.maxGap, pu.err
}

// countLabel counts the series on a scrape that carry label=value.
func countLabel(fams map[string]*dto.MetricFamily, label, value string) int {
	n := 0
	for _, fam := range fams {
		for _, m := range fam.GetMetric() {
			if gatewaytest.LabelValue(m, label) == value {
				n++
			}
		}
	}
	return n
}

// snapshot maps each agent series on a scrape that carries the const label
// gateway=label (target_info carries no const labels) to its value, keyed
// by its other labels; histograms contribute their count, sum and buckets.
// n counts the series (counters, histograms and target_info) found.
func snapshot(fams map[string]*dto.MetricFamily, label string) (values map[string]float64, n int) {
	values = map[string]float64{}
	for name, fam := range fams {
		if !strings.HasPrefix(name, "reload_") && name != "target_info" {
			continue
		}
		for _, m := range fam.GetMetric() {
			if gatewaytest.LabelValue(m, "job") != "reload-agent" {
				continue
			}
			if name != "target_info" && gatewaytest.LabelValue(m, "gateway") != label {
				continue
			}
			var labels []string
			for _, l := range m.GetLabel() {
				if l.GetName() != "gateway" {
					labels = append(labels, l.GetName()+"="+l.GetValue())
				}
			}
			slices.Sort(labels)
			key := name + "{" + strings.Join(labels, ",") + "}"
			n++
			switch {
			case m.Counter != nil:
				values[key] = m.GetCounter().GetValue()
			case m.Gauge != nil:
				values[key] = m.GetGauge().GetValue()
			case m.Histogram != nil:
				h := m.GetHistogram()
				values[key+" count"] = float64(h.GetSampleCount())
				values[key+" sum"] = h.GetSampleSum()
				for _, b := range h.GetBucket() {
					values[fmt.Sprintf("%s le=%g", key, b.GetUpperBound())] = float64(b.GetCumulativeCount())
				}
			}
		}
	}
	return values, n
}

// agents are OpenTelemetry SDK meter providers as services run them: a
// periodic reader exporting cumulative data every second over OTLP gRPC,
// with the exporter's default retries.
type agents struct {
	providers []*sdkmetric.MeterProvider
	cancel    context.CancelFunc
	wg        sync.WaitGroup

	mu       sync.Mutex
	errs     int
	firstErr error
}

func startAgents(t *testing.T, endpoint string) *agents {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	a := &agents{cancel: cancel}
	t.Cleanup(func() { a.stop(t) })
	for i := range reloadAgents {
		exp, err := otlpmetricgrpc.New(ctx, otlpmetricgrpc.WithEndpoint(endpoint), otlpmetricgrpc.WithInsecure())
		require.NoError(t, err)
		mp := sdkmetric.NewMeterProvider(
			sdkmetric.WithResource(agentResource("reload-agent", fmt.Sprintf("agent-%d", i))),
			sdkmetric.WithReader(sdkmetric.NewPeriodicReader(&countingExporter{Exporter: exp, a: a}, sdkmetric.WithInterval(time.Second))),
		)
		a.providers = append(a.providers, mp)
		meter := mp.Meter("statsgate/reload")
		requests, err := meter.Int64Counter("reload.requests")
		require.NoError(t, err)
		latency, err := meter.Float64Histogram("reload.latency", metric.WithUnit("ms"))
		require.NoError(t, err)
		routes := make([]metric.AddOption, reloadRoutes)
		for r := range routes {
			routes[r] = metric.WithAttributes(attribute.String("route", fmt.Sprintf("/r%d", r)))
		}
		a.wg.Go(func() {
			tick := time.NewTicker(50 * time.Millisecond)
			defer tick.Stop()
			for n := 0; ; n++ {
				for _, route := range routes {
					requests.Add(ctx, 1, route)
				}
				latency.Record(ctx, float64(n%300))
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
			}
		})
	}
	return a
}

// stop ends the load and shuts the providers down (a last export each).
func (a *agents) stop(t *testing.T) {
	a.cancel()
	a.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, mp := range a.providers {
		assert.NoError(t, mp.Shutdown(ctx))
	}
	a.providers = nil
}

func (a *agents) failures() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.errs
}

// countingExporter counts the exports that failed after the SDK's retries.
type countingExporter struct {
	sdkmetric.Exporter
	a *agents
}

func (e *countingExporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	err := e.Exporter.Export(ctx, rm)
	if err != nil {
		e.a.mu.Lock()
		if e.a.errs == 0 {
			e.a.firstErr = err
		}
		e.a.errs++
		e.a.mu.Unlock()
	}
	return err
}
