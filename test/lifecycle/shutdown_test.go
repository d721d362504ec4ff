// Package lifecycle runs the built otelcol-statsgate distribution through
// the faults of its life as a service: SIGTERM while a large scrape is being
// read or while agents are pushing, a restart on the same ports, and a
// config reload (SIGHUP, or a restart with the new config) while agents keep
// exporting.
//
// It needs the binary: `make test` builds it and sets STATSGATE_BINARY.
package lifecycle

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/statsgate/statsgate/test/internal/gatewaytest"
)

// shutdownBound is how long a SIGTERM may take to end the process while
// scrapers read on and agents push.
const shutdownBound = 10 * time.Second

// settings are the exporter options the tests vary.
type settings struct {
	gateway   string // value of the const label "gateway"
	maxSeries int
}

var defaults = settings{gateway: "a", maxSeries: 1_000_000}

// writeConfig writes the tests' config on the addresses a: the default
// processors, and the exporter with s.
func writeConfig(t *testing.T, path string, a gatewaytest.Addrs, s settings) {
	t.Helper()
	gatewaytest.Config{
		Addrs:      a,
		Processors: true,
		Exporter:   map[string]any{"max_series": s.maxSeries, "const_labels": map[string]any{"gateway": s.gateway}},
	}.Write(t, path)
}

// startDefault writes the default config and starts a healthy gateway on it.
func startDefault(t *testing.T, s settings) (*gatewaytest.Gateway, gatewaytest.Addrs, string) {
	t.Helper()
	p := gatewaytest.FreeAddrs(t)
	cfg := filepath.Join(t.TempDir(), "gateway.yaml")
	writeConfig(t, cfg, p, s)
	g := gatewaytest.Start(t, gatewaytest.Binary(t), cfg)
	gatewaytest.WaitHealthy(t, g, "http://"+p.Health+"/")
	return g, p, cfg
}

// counters is one OTLP request: n cumulative counter series of one
// resource, numbered from first, all with value v.
func counters(res *resource.Resource, first, n int, v int64) *metricdata.ResourceMetrics {
	now := time.Now()
	points := make([]metricdata.DataPoint[int64], n)
	for i := range points {
		points[i] = metricdata.DataPoint[int64]{
			Attributes: attribute.NewSet(attribute.Int("series", first+i)),
			StartTime:  now.Add(-time.Hour), Time: now, Value: v,
		}
	}
	return &metricdata.ResourceMetrics{
		Resource: res,
		ScopeMetrics: []metricdata.ScopeMetrics{{
			Scope: instrumentation.Scope{Name: "statsgate/lifecycle"},
			Metrics: []metricdata.Metrics{{
				Name: "lifecycle.load",
				Data: metricdata.Sum[int64]{Temporality: metricdata.CumulativeTemporality, IsMonotonic: true, DataPoints: points},
			}},
		}},
	}
}

func agentResource(name, instance string) *resource.Resource {
	return resource.NewSchemaless(attribute.String("service.name", name), attribute.String("service.instance.id", instance))
}

// load pushes resources×perResource counter series over OTLP gRPC, in
// requests of 5000 points, and waits until the exporter holds them all.
func load(t *testing.T, p gatewaytest.Addrs, resources, perResource int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	exp, err := otlpmetricgrpc.New(ctx, otlpmetricgrpc.WithEndpoint(p.OTLP), otlpmetricgrpc.WithInsecure())
	require.NoError(t, err)
	defer func() { _ = exp.Shutdown(ctx) }()
	const batch = 5000
	for r := range resources {
		res := agentResource("load", fmt.Sprintf("r%d", r))
		for first := 0; first < perResource; first += batch {
			require.NoError(t, exp.Export(ctx, counters(res, first, min(batch, perResource-first), 1)))
		}
	}
	want := float64(resources * perResource)
	deadline := time.Now().Add(30 * time.Second)
	for {
		fams, _, _, err := gatewaytest.Scrape("http://" + p.Telemetry + "/metrics")
		if err == nil {
			if active, _ := gatewaytest.Value(fams, "otelcol_exporter_agentprometheus_series_active", nil); active >= want {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the exporter never held %.0f series", want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// openScrape starts an uncompressed scrape (the largest body) and reads its
// first MiB, leaving the rest of the response in flight. A positive timeout
// is sent as Prometheus sends its scrape timeout.
func openScrape(t *testing.T, metrics string, timeout time.Duration) (*http.Response, []byte) {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	t.Cleanup(client.CloseIdleConnections)
	req, err := http.NewRequest(http.MethodGet, "http://"+metrics+"/metrics", nil)
	require.NoError(t, err)
	if timeout > 0 {
		req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", strconv.FormatFloat(timeout.Seconds(), 'f', -1, 64))
	}
	resp, err := client.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	require.Equal(t, http.StatusOK, resp.StatusCode)
	head := make([]byte, 1<<20)
	_, err = io.ReadFull(resp.Body, head)
	require.NoError(t, err)
	return resp, head
}

func TestShutdownDuringScrape(t *testing.T) {
	gatewaytest.Binary(t)
	// 200k series make a ~20 MiB text body, more than loopback socket
	// buffers hold: the exporter is still writing when SIGTERM arrives.
	const resources, perResource = 8, 25_000

	t.Run("scraper reads on", func(t *testing.T) {
		g, p, _ := startDefault(t, defaults)
		load(t, p, resources, perResource)
		resp, head := openScrape(t, p.Metrics, 0)

		sigAt := time.Now()
		require.NoError(t, g.Cmd.Process.Signal(syscall.SIGTERM))
		// Read on only once the collector is shutting down.
		waitLog(t, g, "Starting shutdown...", 1, shutdownBound)
		rest, err := io.ReadAll(resp.Body)
		require.NoError(t, err, "the in-flight scrape was cut off by the shutdown")
		took := g.WaitExit(t, sigAt, shutdownBound)

		// The scrape in flight completed: a whole, parseable exposition.
		parser := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := parser.TextToMetricFamilies(io.MultiReader(bytes.NewReader(head), bytes.NewReader(rest)))
		require.NoError(t, err)
		assert.Len(t, fams["lifecycle_load_total"].GetMetric(), resources*perResource)
		assertCleanShutdown(t, g)
		assertPortsFree(t, p.All()...)
		t.Logf("SIGTERM with a %.1f MiB scrape of %d series in flight: the scrape completed and the process exited 0 after %v",
			float64(len(head)+len(rest))/(1<<20), resources*perResource, took.Round(time.Millisecond))
	})

	t.Run("scraper stalls", func(t *testing.T) {
		// A scraper that stops reading is cut off after the exporter's 2 s
		// stall bound (or its scrape timeout, if sooner), and holds the
		// shutdown no longer than that.
		const scrapeTimeout = 3 * time.Second
		g, p, _ := startDefault(t, defaults)
		load(t, p, resources, perResource)
		resp, _ := openScrape(t, p.Metrics, scrapeTimeout)

		sigAt := time.Now()
		require.NoError(t, g.Cmd.Process.Signal(syscall.SIGTERM))
		took := g.WaitExit(t, sigAt, scrapeTimeout+5*time.Second)
		_, err := io.ReadAll(resp.Body)
		assert.Error(t, err, "the stalled scrape was not cut off")
		assertCleanShutdown(t, g)
		assertPortsFree(t, p.All()...)
		t.Logf("SIGTERM with a stalled scraper (scrape timeout %v): the scrape was cut off and the process exited 0 after %v", scrapeTimeout, took.Round(time.Millisecond))
	})
}

func TestShutdownDuringIngestion(t *testing.T) {
	g, p, _ := startDefault(t, defaults)

	// Clients push 2000-series requests back to back, without retries, so
	// that requests are in flight at every moment.
	const clients, perRequest = 8, 2000
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	var signalled atomic.Bool
	var okBefore, okAfter, failedAfter [clients]atomic.Int64
	var failedBefore atomic.Int64
	var firstErr atomic.Pointer[error]
	for c := range clients {
		wg.Go(func() {
			exp, err := otlpmetricgrpc.New(ctx, otlpmetricgrpc.WithEndpoint(p.OTLP), otlpmetricgrpc.WithInsecure(),
				otlpmetricgrpc.WithRetry(otlpmetricgrpc.RetryConfig{Enabled: false}))
			if err != nil {
				firstErr.CompareAndSwap(nil, &err)
				failedBefore.Add(1)
				return
			}
			defer func() { _ = exp.Shutdown(context.Background()) }()
			res := agentResource("ingest", fmt.Sprintf("c%d", c))
			for n := int64(1); ctx.Err() == nil; n++ {
				ectx, ecancel := context.WithTimeout(ctx, 5*time.Second)
				err := exp.Export(ectx, counters(res, 0, perRequest, n))
				ecancel()
				after := signalled.Load()
				switch {
				case ctx.Err() != nil:
				case err == nil && after:
					okAfter[c].Add(1)
				case err == nil:
					okBefore[c].Add(1)
				case after:
					failedAfter[c].Add(1)
				default:
					firstErr.CompareAndSwap(nil, &err)
					failedBefore.Add(1)
				}
			}
		})
	}
	require.Eventually(t, func() bool {
		for c := range clients {
			if okBefore[c].Load() < 3 {
				return false
			}
		}
		return true
	}, 30*time.Second, 20*time.Millisecond, "clients did not get requests through")

	signalled.Store(true)
	took := g.Stop(t, shutdownBound)
	cancel()
	wg.Wait()

	if first := firstErr.Load(); first != nil {
		t.Errorf("%d exports failed before the shutdown; first: %v", failedBefore.Load(), *first)
	}
	assertCleanShutdown(t, g)
	assertPortsFree(t, p.All()...)
	var ok, accepted, refused int64
	for c := range clients {
		ok += okBefore[c].Load()
		accepted += okAfter[c].Load()
		refused += failedAfter[c].Load()
	}
	// The clients were still sending when the signal came.
	assert.Positive(t, accepted+refused, "no export overlapped the shutdown")
	t.Logf("SIGTERM during ingestion by %d clients (%d requests accepted before it, %d after it while draining, %d refused once stopped): exited 0 after %v",
		clients, ok, accepted, refused, took.Round(time.Millisecond))
}

func TestRestartOnSamePorts(t *testing.T) {
	bin := gatewaytest.Binary(t)
	g1, p, cfg := startDefault(t, defaults)
	metricsURL := "http://" + p.Metrics + "/metrics"

	// Agents that outlive the gateway: each pushes an increasing sequence
	// number every 100ms and retries refused exports, as SDKs do.
	const agents = 3
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	stopLoad := func() { cancel(); wg.Wait() }
	t.Cleanup(stopLoad)
	for a := range agents {
		wg.Go(func() {
			exp, err := otlpmetricgrpc.New(ctx, otlpmetricgrpc.WithEndpoint(p.OTLP), otlpmetricgrpc.WithInsecure(),
				otlpmetricgrpc.WithRetry(otlpmetricgrpc.RetryConfig{Enabled: true, InitialInterval: 100 * time.Millisecond, MaxInterval: time.Second, MaxElapsedTime: 30 * time.Second}))
			if err != nil {
				t.Errorf("agent %d: %v", a, err)
				return
			}
			defer func() { _ = exp.Shutdown(context.Background()) }()
			res := agentResource("restart", fmt.Sprintf("agent-%d", a))
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for seq := int64(1); ; seq++ {
				_ = exp.Export(ctx, sequence(res, seq))
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
			}
		})
	}
	// Scrapes in flight at the moment of the stop.
	wg.Go(func() {
		for ctx.Err() == nil {
			if _, _, _, err := gatewaytest.Scrape(metricsURL); err != nil {
				time.Sleep(10 * time.Millisecond) // no gateway for a moment: don't spin
			}
		}
	})

	seen := map[string]float64{}
	require.Eventually(t, func() bool {
		seen = sequences(metricsURL)
		return len(seen) == agents
	}, 15*time.Second, 50*time.Millisecond, "the agents' data never appeared")

	stopTook := g1.Stop(t, shutdownBound)
	assertCleanShutdown(t, g1)
	restartAt := time.Now()
	g2 := gatewaytest.Start(t, bin, cfg)
	gatewaytest.WaitHealthy(t, g2, "http://"+p.Health+"/")
	healthyAfter := time.Since(restartAt)

	// The new process serves data that the same agents sent after the restart.
	require.Eventually(t, func() bool {
		now := sequences(metricsURL)
		for instance, before := range seen {
			if now[instance] <= before {
				return false
			}
		}
		return true
	}, 15*time.Second, 50*time.Millisecond, "the restarted gateway never served the agents' new data")
	resumedAfter := time.Since(restartAt)
	stopLoad()
	assert.NotContains(t, g2.Logs.String(), "address already in use")
	t.Logf("restart on the same ports: stop %v, healthy %v after start, agents' new data served %v after start",
		stopTook.Round(time.Millisecond), healthyAfter.Round(time.Millisecond), resumedAfter.Round(time.Millisecond))
}

func sequence(res *resource.Resource, seq int64) *metricdata.ResourceMetrics {
	return &metricdata.ResourceMetrics{
		Resource: res,
		ScopeMetrics: []metricdata.ScopeMetrics{{
			Scope: instrumentation.Scope{Name: "statsgate/lifecycle"},
			Metrics: []metricdata.Metrics{{
				Name: "lifecycle.sequence",
				Data: metricdata.Gauge[int64]{DataPoints: []metricdata.DataPoint[int64]{{Time: time.Now(), Value: seq}}},
			}},
		}},
	}
}

// sequences is each agent's latest sequence number on /metrics.
func sequences(url string) map[string]float64 {
	fams, _, _, err := gatewaytest.Scrape(url)
	if err != nil {
		return nil
	}
	seqs := map[string]float64{}
	for _, m := range fams["lifecycle_sequence"].GetMetric() {
		seqs[gatewaytest.LabelValue(m, "instance")] = m.GetGauge().GetValue()
	}
	return seqs
}
