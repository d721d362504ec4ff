package smoke

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	"go.yaml.in/yaml/v3"

	"github.com/statsgate/statsgate/internal/testnet"
	"github.com/statsgate/statsgate/test/internal/gatewaytest"
)

var (
	dropAttributeConfig = filepath.Join("..", "..", "testdata", "drop-attribute.yaml")
	aggregateConfig     = filepath.Join("..", "..", "testdata", "aggregate.yaml")
)

// The flood: otelgrpc's server call durations (semconv >= 1.39) with a
// user.id on every point, one series per user and method.
const (
	floodFamily = "rpc_server_call_duration_seconds"
	floodLabel  = "user_id"
	floodUsers  = 300
)

var floodMethods = []string{"shop.Cart/Add", "shop.Cart/Get"}

// totals are what a method's points add up to, whatever labels they carry.
type totals struct {
	count   uint64
	sum     float64
	buckets []uint64 // cumulative, as Prometheus's le buckets, +Inf last
}

// TestDropAttributeRemedy sends the same flooding agent to the default
// gateway, to testdata/drop-attribute.yaml and to testdata/aggregate.yaml:
// on the first the cardinality view names user_id as the label that floods
// the family and /metrics has a series per user; with either remedy user_id
// is in neither, one series per method is left, and its count, sum and
// buckets are the users' totals, at the agent's first export and at its
// second (cumulative: every user's calls grew). The aggregate, summed at
// the gateway across agents, has no instance of its own.
func TestDropAttributeRemedy(t *testing.T) {
	t.Run("the remedy is the default gateway plus metrics_transform", func(t *testing.T) {
		checkRemedyIsGatewayPlusProcessor(t)
	})
	t.Run("aggregate.yaml is the default gateway plus an aggregate rule", func(t *testing.T) {
		checkAggregateIsGatewayPlusRule(t)
	})
	for _, tc := range []struct {
		name, config string
		remedy       bool
		aggregate    bool
	}{
		{"default gateway", gatewayConfig, false, false},
		{"drop-attribute.yaml", dropAttributeConfig, true, false},
		{"aggregate.yaml", aggregateConfig, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			otlp, metrics, _, g := startGatewayProcess(t, tc.config)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			exp, err := otlpmetricgrpc.New(ctx, otlpmetricgrpc.WithEndpoint(otlp), otlpmetricgrpc.WithInsecure())
			require.NoError(t, err)
			defer func() { require.NoError(t, exp.Shutdown(ctx)) }()
			// The agent's run begins after the gateway started: an aggregate
			// counts it from zero (one older would count from its first
			// export, whoever counted it before).
			start := time.Now()

			var fam *dto.MetricFamily
			for round := 1; round <= 2; round++ {
				require.NoError(t, exp.Export(ctx, floodingAgent(start, time.Now(), round)), "OTLP export to the gateway failed")
				want := floodTotals(round)
				// Aggregated or not, each method's calls add up to what the agent counted.
				var got map[string]totals
				held := assert.Eventually(t, func() bool {
					fams, _, _, err := gatewaytest.Scrape("http://" + metrics + "/metrics")
					if fam = fams[floodFamily]; err != nil || fam == nil {
						return false
					}
					got, err = totalsByMethod(fam)
					return err == nil && sameTotals(want, got)
				}, 10*time.Second, 100*time.Millisecond)
				require.True(t, held, "export %d: %s never held the agent's totals %v; last seen %v", round, floodFamily, want, got)
			}

			series, withLabel := len(fam.GetMetric()), 0
			for _, m := range fam.GetMetric() {
				if gatewaytest.LabelValue(m, floodLabel) != "" {
					withLabel++
				}
			}
			labels := viewLabels(t, metrics, floodFamily)
			t.Logf("%d series of %s, %d with %s; the view's labels, most distinct values first: %v", series, floodFamily, withLabel, floodLabel, labels)
			if tc.remedy {
				assert.Equal(t, len(floodMethods), series, "one series per method")
				assert.Zero(t, withLabel, "series with %s", floodLabel)
				assert.NotContains(t, labels, floodLabel, "the view's labels of %s", floodFamily)
				for _, m := range fam.GetMetric() {
					if tc.aggregate {
						assert.Empty(t, gatewaytest.LabelValue(m, "instance"), "an aggregate has no instance: %v", m.GetLabel())
						assert.Equal(t, "shop", gatewaytest.LabelValue(m, "job"))
					} else {
						assert.Equal(t, "shop-1", gatewaytest.LabelValue(m, "instance"))
					}
				}
				if tc.aggregate {
					stopScraped(t, g, metrics)
				}
			} else {
				assert.Equal(t, len(floodMethods)*floodUsers, series, "one series per user and method")
				assert.Equal(t, series, withLabel, "series with %s", floodLabel)
				require.NotEmpty(t, labels)
				assert.Equal(t, floodLabel, labels[0], "the view names the label that floods %s first", floodFamily)
			}
		})
	}
}

// sameTotals compares totals: counts and buckets exactly, sums to a part in
// 10^12 (an aggregate adds the sums' increments in float64, whose rounding
// differs from adding the users' sums).
func sameTotals(want, got map[string]totals) bool {
	if len(want) != len(got) {
		return false
	}
	for k, w := range want {
		g, ok := got[k]
		if !ok || w.count != g.count || !slices.Equal(w.buckets, g.buckets) || math.Abs(w.sum-g.sum) > 1e-12*math.Abs(w.sum) {
			return false
		}
	}
	return true
}

// stopScraped stops a gateway holding aggregates, whose values exist
// nowhere else: on SIGTERM it waits until its scrapers, this test among
// them, took the last ones. The test scrapes on until it exits.
func stopScraped(t *testing.T, g *gatewaytest.Gateway, metrics string) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(100 * time.Millisecond):
				_, _, _, _ = gatewaytest.Scrape("http://" + metrics + "/metrics")
			}
		}
	}()
	took := g.Stop(t, 10*time.Second)
	close(done)
	t.Logf("stopped in %v, its scrapers having taken the last aggregates", took.Round(time.Millisecond))
}

// floodTotals are the totals of floodingAgent's export round for each method.
func floodTotals(round int) map[string]totals {
	want := map[string]totals{}
	for _, method := range floodMethods {
		tot := totals{buckets: make([]uint64, len(floodBounds)+1)}
		for u := range floodUsers {
			p := floodPoint(u, round)
			tot.count += p.Count
			tot.sum += p.Sum
			var cumulative uint64
			for i, n := range p.BucketCounts {
				cumulative += n
				tot.buckets[i] += cumulative
			}
		}
		want[method] = tot
	}
	return want
}

var floodBounds = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1}

// floodPoint is user u's calls of a method by export round (cumulative):
// 1 to 5 calls a round, all in one bucket, with sums that add up exactly.
func floodPoint(u, round int) metricdata.HistogramDataPoint[float64] {
	counts := make([]uint64, len(floodBounds)+1)
	n := uint64(round * (1 + u%5))
	b := u % len(floodBounds)
	counts[b] = n
	return metricdata.HistogramDataPoint[float64]{
		Count:        n,
		Sum:          float64(n) * floodBounds[b] / 2,
		Bounds:       floodBounds,
		BucketCounts: counts,
	}
}

// floodingAgent is an export of a gRPC server instrumented with otelgrpc
// whose application put the user's id on every measurement.
func floodingAgent(start, now time.Time, round int) *metricdata.ResourceMetrics {
	var points []metricdata.HistogramDataPoint[float64]
	for _, method := range floodMethods {
		for u := range floodUsers {
			p := floodPoint(u, round)
			p.Attributes = attribute.NewSet(
				attribute.String("rpc.system.name", "grpc"),
				attribute.String("rpc.method", method),
				attribute.String("rpc.response.status_code", "OK"),
				attribute.String("user.id", fmt.Sprintf("u-%04d", u)),
			)
			p.StartTime, p.Time = start, now
			points = append(points, p)
		}
	}
	return &metricdata.ResourceMetrics{
		Resource: resource.NewSchemaless(attribute.String("service.name", "shop"), attribute.String("service.instance.id", "shop-1")),
		ScopeMetrics: []metricdata.ScopeMetrics{{
			Scope: instrumentation.Scope{Name: "go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc", Version: "0.72.0"},
			Metrics: []metricdata.Metrics{{
				Name: "rpc.server.call.duration",
				Unit: "s",
				Data: metricdata.Histogram[float64]{Temporality: metricdata.CumulativeTemporality, DataPoints: points},
			}},
		}},
	}
}

// totalsByMethod adds up the family's histograms per rpc_method.
func totalsByMethod(fam *dto.MetricFamily) (map[string]totals, error) {
	bounds := append(slices.Clone(floodBounds), math.Inf(1))
	got := map[string]totals{}
	for _, m := range fam.GetMetric() {
		h := m.GetHistogram()
		if h == nil || len(h.GetBucket()) != len(bounds) {
			return nil, fmt.Errorf("%s: want histograms with the agent's %d buckets, got %v", fam.GetName(), len(bounds), m)
		}
		method := gatewaytest.LabelValue(m, "rpc_method")
		tot := got[method]
		tot.count += h.GetSampleCount()
		tot.sum += h.GetSampleSum()
		if tot.buckets == nil {
			tot.buckets = make([]uint64, len(bounds))
		}
		for i, b := range h.GetBucket() {
			if b.GetUpperBound() != bounds[i] {
				return nil, fmt.Errorf("%s: bucket %d has le %v, the agent's is %v", fam.GetName(), i, b.GetUpperBound(), bounds[i])
			}
			tot.buckets[i] += b.GetCumulativeCount()
		}
		got[method] = tot
	}
	return got, nil
}

// viewLabels asks the cardinality view, as JSON, for a family's labels,
// ranked by distinct values.
func viewLabels(t *testing.T, metrics, family string) []string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+metrics+"/cardinality?family="+family, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "application/json")
	resp, err := gatewaytest.HTTPClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	var report struct {
		Selection struct {
			Family struct {
				Name string `json:"name"`
			} `json:"family"`
			Labels []struct {
				Name string `json:"name"`
			} `json:"labels"`
			Scan struct {
				Complete bool `json:"complete"`
			} `json:"scan"`
		} `json:"selection"`
	}
	require.NoError(t, json.Unmarshal(body, &report), "%s", body)
	require.Equal(t, family, report.Selection.Family.Name)
	require.True(t, report.Selection.Scan.Complete, "the view read every series of %s", family)
	var labels []string
	for _, l := range report.Selection.Labels {
		labels = append(labels, l.Name)
	}
	return labels
}

// startGateway runs the distro on config with its listen addresses taken
// from the environment, as the shipped configs allow, and returns the OTLP
// gRPC and /metrics addresses once it is healthy.
func startGateway(t *testing.T, config string) (otlp, metrics, telemetry string) {
	t.Helper()
	otlp, metrics, telemetry, _ = startGatewayProcess(t, config)
	return otlp, metrics, telemetry
}

// startGatewayProcess is startGateway, with the process and its logs.
func startGatewayProcess(t *testing.T, config string) (otlp, metrics, telemetry string, g *gatewaytest.Gateway) {
	t.Helper()
	otlp, otlpHTTP, metrics, health := testnet.FreeEndpoint(t), testnet.FreeEndpoint(t), testnet.FreeEndpoint(t), testnet.FreeEndpoint(t)
	telemetry = testnet.FreeEndpoint(t)
	_, telemetryPort, err := net.SplitHostPort(telemetry)
	require.NoError(t, err)
	for k, v := range map[string]string{
		"STATSGATE_OTLP_GRPC_ENDPOINT": otlp,
		"STATSGATE_OTLP_HTTP_ENDPOINT": otlpHTTP,
		"STATSGATE_METRICS_ENDPOINT":   metrics,
		"STATSGATE_HEALTH_ENDPOINT":    health,
		"STATSGATE_TELEMETRY_PORT":     telemetryPort,
	} {
		t.Setenv(k, v)
	}
	g = gatewaytest.Start(t, gatewaytest.Binary(t), config)
	gatewaytest.WaitHealthy(t, g, "http://"+health+"/")
	return otlp, metrics, telemetry, g
}

// checkRemedyIsGatewayPlusProcessor: drop-attribute.yaml without its
// metrics_transform processor is testdata/gateway.yaml, and the processor
// comes right before grpcstats.
func checkRemedyIsGatewayPlusProcessor(t *testing.T) {
	read := func(path string) map[string]any {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		var cfg map[string]any
		require.NoError(t, yaml.Unmarshal(b, &cfg))
		return cfg
	}
	gateway, remedy := read(gatewayConfig), read(dropAttributeConfig)
	pipeline := remedy["service"].(map[string]any)["pipelines"].(map[string]any)["metrics"].(map[string]any)
	var processors []string
	for _, p := range pipeline["processors"].([]any) {
		processors = append(processors, p.(string))
	}
	require.Equal(t, []string{"memory_limiter", "metrics_transform", "grpcstats"}, processors)
	pipeline["processors"] = []any{"memory_limiter", "grpcstats"}
	delete(remedy["processors"].(map[string]any), "metrics_transform")
	assert.Equal(t, gateway, remedy, "drop-attribute.yaml differs from gateway.yaml elsewhere than its metrics_transform")
}

// checkAggregateIsGatewayPlusRule: aggregate.yaml without the exporter's
// aggregate list is testdata/gateway.yaml, and its rule keeps the service,
// method and status of the RPC call durations.
func checkAggregateIsGatewayPlusRule(t *testing.T) {
	read := func(path string) map[string]any {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		var cfg map[string]any
		require.NoError(t, yaml.Unmarshal(b, &cfg))
		return cfg
	}
	gateway, agg := read(gatewayConfig), read(aggregateConfig)
	exp := agg["exporters"].(map[string]any)["agentprometheus"].(map[string]any)
	rules := exp["aggregate"].([]any)
	require.Len(t, rules, 1)
	rule := rules[0].(map[string]any)
	assert.Contains(t, rule["metrics"], "rpc.server.call.duration")
	assert.Subset(t, rule["by"], []any{"service.name", "rpc.method", "rpc.status_code"})
	delete(exp, "aggregate")
	assert.Equal(t, gateway, agg, "aggregate.yaml differs from gateway.yaml elsewhere than its aggregate rule")
}
