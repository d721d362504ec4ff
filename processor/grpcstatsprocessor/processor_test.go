package grpcstatsprocessor

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/statsgate/statsgate/internal/grpcstatstest"
	"github.com/statsgate/statsgate/processor/grpcstatsprocessor/internal/dialect"
	"github.com/statsgate/statsgate/processor/grpcstatsprocessor/internal/metadata"
	"github.com/statsgate/statsgate/processor/grpcstatsprocessor/internal/metadatatest"
)

// newTestProcessor returns the processor with a clock the test sets.
func newTestProcessor(t *testing.T, cfg *Config) (*grpcStatsProcessor, *consumertest.MetricsSink, *int64) {
	t.Helper()
	sink := new(consumertest.MetricsSink)
	p, err := NewFactory().CreateMetrics(context.Background(), processortest.NewNopSettings(metadata.Type), cfg, sink)
	require.NoError(t, err)
	gp := p.(*grpcStatsProcessor)
	now := new(int64)
	gp.now = func() int64 { return *now }
	return gp, sink, now
}

// legacyServer builds one otelgrpc v0.64 server duration point.
func legacyServer(service, method string, code int64) pmetric.Metrics {
	md, dps := grpcstatstest.LegacyServer()
	dp := dps.AppendEmpty()
	dp.Attributes().PutStr("rpc.system", "grpc")
	dp.Attributes().PutStr("rpc.service", service)
	dp.Attributes().PutStr("rpc.method", method)
	dp.Attributes().PutInt("rpc.grpc.status_code", code)
	dp.Attributes().PutStr("net.sock.peer.addr", "10.0.0.9")
	dp.Attributes().PutStr("tenant", "blue")
	dp.SetCount(2)
	dp.SetSum(3.5)
	dp.SetMin(1.5)
	dp.SetMax(2)
	dp.ExplicitBounds().FromRaw([]float64{0, 5, 10})
	dp.BucketCounts().FromRaw([]uint64{0, 2, 0, 0})
	return md
}

// server builds one server duration point of the "cart" resource under the
// given metric name, with the given attributes.
func server(name string, attrs map[string]any) pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("service.name", "cart")
	m := rm.ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	m.SetName(name)
	m.SetUnit("s")
	dp := m.SetEmptyHistogram().DataPoints().AppendEmpty()
	_ = dp.Attributes().FromRaw(attrs)
	dp.SetCount(2)
	return md
}

func nativeServer(method, status string) pmetric.Metrics {
	return server("grpc.server.call.duration", map[string]any{"grpc.method": method, "grpc.status": status})
}

func semconvServer(method, status string) pmetric.Metrics {
	return server("rpc.server.call.duration", map[string]any{"rpc.method": method, "rpc.response.status_code": status, "rpc.system.name": "grpc"})
}

func firstPoint(t *testing.T, md pmetric.Metrics) (pmetric.Metric, pmetric.HistogramDataPoint) {
	t.Helper()
	m := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0)
	return m, m.Histogram().DataPoints().At(0)
}

func TestLegacyPointBecomesCanonical(t *testing.T) {
	p, sink, _ := newTestProcessor(t, createDefaultConfig().(*Config))
	require.NoError(t, p.ConsumeMetrics(context.Background(), legacyServer("shop.Cart", "Add", 5)))
	m, dp := firstPoint(t, sink.AllMetrics()[0])
	assert.Equal(t, "rpc.server.call.duration", m.Name())
	assert.Equal(t, "s", m.Unit())
	assert.Equal(t, map[string]any{
		"rpc.method":      "shop.Cart/Add",
		"rpc.status_code": "NOT_FOUND",
		"rpc.system.name": "grpc",
		"tenant":          "blue", // not the dialect's: kept
	}, dp.Attributes().AsRaw(), "the peer address is in drop_attributes")
	assert.Equal(t, 0.0035, dp.Sum())
	assert.Equal(t, 0.0015, dp.Min())
	assert.Equal(t, 0.002, dp.Max())
	assert.Equal(t, []float64{0, 0.005, 0.01}, dp.ExplicitBounds().AsRaw())
	assert.Equal(t, []uint64{0, 2, 0, 0}, dp.BucketCounts().AsRaw())
}

func TestDuplicatesAcrossBatchesWithinWindow(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.DuplicateWindow = time.Minute
	p, sink, now := newTestProcessor(t, cfg)
	ctx := context.Background()

	// otelgrpc (semconv, highest precedence) has been seen for the resource...
	require.NoError(t, p.ConsumeMetrics(ctx, semconvServer("shop.Cart/Add", "OK")))
	// ...so grpc's plugin reporting the same calls 30 s later is dropped.
	*now = int64(30 * time.Second)
	require.NoError(t, p.ConsumeMetrics(ctx, nativeServer("shop.Cart/Add", "OK")))
	assert.Equal(t, 0, sink.AllMetrics()[1].MetricCount())

	// Once the window has passed without otelgrpc, the plugin's data is kept.
	*now = int64(2 * time.Minute)
	require.NoError(t, p.ConsumeMetrics(ctx, nativeServer("shop.Cart/Add", "OK")))
	m, _ := firstPoint(t, sink.AllMetrics()[2])
	assert.Equal(t, "rpc.server.call.duration", m.Name())
}

func TestDuplicatesKeep(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.Duplicates = DuplicatesKeep
	md, _ := loadFixture(t, "otelgrpc_and_grpc_native")
	out := process(t, cfg, md)[0]
	_, n := counts(out, "rpc.server.call.duration", shapes[dialect.TargetSemconv], true)
	assert.Equal(t, 2, n, "both dialects' server durations are kept, both converted")
}

func TestMethodGuardCollapsesBeyondTheBound(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.Methods = MethodsConfig{MaxPerService: 2, Allow: []string{"grpc.health.v1.Health/*"}}
	p, sink, _ := newTestProcessor(t, cfg)
	for _, m := range []string{"A", "B", "C", "A", "D"} {
		require.NoError(t, p.ConsumeMetrics(context.Background(), legacyServer("shop.Cart", m, 0)))
	}
	require.NoError(t, p.ConsumeMetrics(context.Background(), legacyServer("grpc.health.v1.Health", "Check", 0)))
	var got []string
	for _, md := range sink.AllMetrics() {
		_, dp := firstPoint(t, md)
		v, _ := dp.Attributes().Get("rpc.method")
		got = append(got, v.Str())
	}
	assert.Equal(t, []string{"shop.Cart/A", "shop.Cart/B", "_OTHER", "shop.Cart/A", "_OTHER", "grpc.health.v1.Health/Check"}, got)
}

// TestMethodGuardInOneBatch sends one batch with several points per method,
// two metrics and two services: every point of a method beyond the bound
// is collapsed, in every metric of its service, and counted once per point;
// a method the handler did not know stays the target's other method without
// counting against the bound.
func TestMethodGuardInOneBatch(t *testing.T) {
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	cfg := createDefaultConfig().(*Config)
	cfg.Methods = MethodsConfig{MaxPerService: 2, Allow: []string{"grpc.health.v1.Health/*"}}
	sink := new(consumertest.MetricsSink)
	p, err := NewFactory().CreateMetrics(context.Background(), metadatatest.NewSettings(tel), cfg, sink)
	require.NoError(t, err)

	md, server := grpcstatstest.LegacyServer()
	point := func(dps pmetric.HistogramDataPointSlice, attrs map[string]any) {
		require.NoError(t, dps.AppendEmpty().Attributes().FromRaw(attrs))
	}
	for i, m := range []string{"A", "B", "C", "A", "C", "D", "A"} {
		point(server, map[string]any{"rpc.service": "shop.Cart", "rpc.method": m, "rpc.grpc.status_code": int64(i % 2)})
	}
	point(server, map[string]any{"rpc.service": "grpc.health.v1.Health", "rpc.method": "Check", "rpc.grpc.status_code": int64(0)})
	client := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().AppendEmpty()
	client.SetName("rpc.client.call.duration")
	client.SetUnit("s")
	clientPoints := client.SetEmptyHistogram().DataPoints()
	for _, m := range []string{"shop.Cart/C", "_OTHER", "shop.Cart/B"} {
		point(clientPoints, map[string]any{"rpc.method": m, "rpc.response.status_code": "OK"})
	}
	web := md.ResourceMetrics().AppendEmpty()
	web.Resource().Attributes().PutStr("service.name", "web")
	webServer := web.ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	webServer.SetName("rpc.server.call.duration")
	webServer.SetUnit("s")
	point(webServer.SetEmptyHistogram().DataPoints(), map[string]any{"rpc.method": "shop.Cart/D", "rpc.response.status_code": "OK"})

	require.NoError(t, p.ConsumeMetrics(context.Background(), md))
	methodsOf := func(m pmetric.Metric) []string {
		var out []string
		dps := m.Histogram().DataPoints()
		for i := 0; i < dps.Len(); i++ {
			v, _ := dps.At(i).Attributes().Get("rpc.method")
			out = append(out, v.Str())
		}
		return out
	}
	out := sink.AllMetrics()[0]
	cart := out.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics()
	assert.Equal(t, []string{"shop.Cart/A", "shop.Cart/B", "_OTHER", "shop.Cart/A", "_OTHER", "_OTHER", "shop.Cart/A",
		"grpc.health.v1.Health/Check"}, methodsOf(cart.At(0)))
	assert.Equal(t, []string{"_OTHER", "_OTHER", "shop.Cart/B"}, methodsOf(cart.At(1)))
	assert.Equal(t, []string{"shop.Cart/D"}, methodsOf(out.ResourceMetrics().At(1).ScopeMetrics().At(0).Metrics().At(0)),
		"the bound is per service")
	// C twice and D once on the server, C once on the client.
	metadatatest.AssertEqualProcessorGrpcstatsMethodsCollapsed(t, tel,
		[]metricdata.DataPoint[int64]{{Value: 4}}, metricdatatest.IgnoreTimestamp())
}

// TestCreateRefusesAnUnknownDialect: a config that did not go through
// Validate cannot turn an unknown dialect into another one.
func TestCreateRefusesAnUnknownDialect(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.Sinks = []dialect.Dialect{dialect.Semconv, "prometheus"}
	_, err := NewFactory().CreateMetrics(context.Background(), processortest.NewNopSettings(metadata.Type), cfg, consumertest.NewNop())
	assert.EqualError(t, err, `sinks[1]: unknown dialect "prometheus"`)
}

func TestNoSinksHandsBatchesOnUntouched(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.Sinks, cfg.noSinks = nil, true
	p, sink, _ := newTestProcessor(t, cfg)
	assert.False(t, p.Capabilities().MutatesData)
	md := legacyServer("shop.Cart", "Add", 0)
	want := cloneMetrics(md)
	require.NoError(t, p.ConsumeMetrics(context.Background(), md))
	assert.Equal(t, want, sink.AllMetrics()[0])
}

func TestGRPCTargetFromLegacy(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.Target = dialect.TargetGRPC
	p, sink, _ := newTestProcessor(t, cfg)
	require.NoError(t, p.ConsumeMetrics(context.Background(), legacyServer("shop.Cart", "Add", 0)))
	m, dp := firstPoint(t, sink.AllMetrics()[0])
	assert.Equal(t, "grpc.server.call.duration", m.Name())
	assert.Equal(t, map[string]any{"grpc.method": "shop.Cart/Add", "grpc.status": "OK", "tenant": "blue"}, dp.Attributes().AsRaw())
}

func TestCanonicalClientAttributesMatchOtelgrpc(t *testing.T) {
	// The client points converted from grpc's plugin carry exactly the keys
	// of otelgrpc v0.72's points for the same calls once converted.
	keysOf := func(md pmetric.Metrics) map[string][]string {
		out := map[string][]string{}
		eachMetric(md, func(_ pcommon.InstrumentationScope, m pmetric.Metric) {
			if m.Name() != "rpc.client.call.duration" {
				return
			}
			dps := m.Histogram().DataPoints()
			for i := 0; i < dps.Len(); i++ {
				status, _ := dps.At(i).Attributes().Get("rpc.status_code")
				var keys []string
				for k := range dps.At(i).Attributes().All() {
					keys = append(keys, k)
				}
				slices.Sort(keys)
				out[status.Str()] = keys
			}
		})
		return out
	}
	native, _ := loadFixture(t, "grpc_native")
	v72, _ := loadFixture(t, "otelgrpc_v0.72")
	cfg := createDefaultConfig().(*Config)
	assert.Equal(t, keysOf(process(t, cfg, v72)[0]), keysOf(process(t, cfg, native)[0]))
}

func TestTelemetry(t *testing.T) {
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	p, err := NewFactory().CreateMetrics(context.Background(), metadatatest.NewSettings(tel), createDefaultConfig(), consumertest.NewNop())
	require.NoError(t, err)
	md, _ := loadFixture(t, "otelgrpc_and_grpc_native")
	require.NoError(t, p.ConsumeMetrics(context.Background(), md))

	dialectSet := func(d string) attribute.Set { return attribute.NewSet(attribute.String("dialect", d)) }
	// otelgrpc: 5 server + 6 client points converted; grpc's plugin: its 5
	// server and 6 client duration points dropped as duplicates.
	metadatatest.AssertEqualProcessorGrpcstatsPointsConverted(t, tel,
		[]metricdata.DataPoint[int64]{{Attributes: dialectSet("semconv"), Value: 11}}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualProcessorGrpcstatsDuplicatesDropped(t, tel,
		[]metricdata.DataPoint[int64]{{Attributes: dialectSet("grpc_native"), Value: 11}}, metricdatatest.IgnoreTimestamp())
	// The plugin's attempt durations, sizes and started counters pass through.
	metadatatest.AssertEqualProcessorGrpcstatsPointsPassedThrough(t, tel,
		[]metricdata.DataPoint[int64]{{Value: 6 + 6 + 6 + 5 + 5 + 5 + 5}}, metricdatatest.IgnoreTimestamp())
}

func TestCommonBoundsMakeDialectsSummable(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.HistogramBounds = BoundsCommon
	cfg.Duplicates = DuplicatesKeep // keep both dialects' server durations to compare them
	for _, name := range []string{"otelgrpc_and_grpc_native", "otelgrpc_v0.64_legacy", "opencensus", "grpc_prometheus"} {
		t.Run(name, func(t *testing.T) {
			in, _ := loadFixture(t, name)
			out := process(t, cfg, in)[0]
			eachMetric(out, func(_ pcommon.InstrumentationScope, m pmetric.Metric) {
				if m.Name() != "rpc.server.call.duration" && m.Name() != "rpc.client.call.duration" {
					return
				}
				dps := m.Histogram().DataPoints()
				for i := 0; i < dps.Len(); i++ {
					dp := dps.At(i)
					assert.Equal(t, dialect.CommonBounds, dp.ExplicitBounds().AsRaw(), m.Name())
					var total uint64
					for _, c := range dp.BucketCounts().AsRaw() {
						total += c
					}
					assert.Equal(t, dp.Count(), total, "re-bucketing keeps every observation")
				}
			})
		})
	}
}

func TestRebucketIsLossless(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.HistogramBounds = BoundsCommon
	p, sink, _ := newTestProcessor(t, cfg)
	md := legacyServer("shop.Cart", "Add", 0)
	dp := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).Histogram().DataPoints().At(0)
	// 0 5 10 25 40 ms: 0 and 40 ms are not common bounds; their buckets
	// merge into the next kept one.
	dp.ExplicitBounds().FromRaw([]float64{0, 5, 10, 25, 40})
	dp.BucketCounts().FromRaw([]uint64{1, 2, 3, 4, 5, 6})
	dp.SetCount(21)
	require.NoError(t, p.ConsumeMetrics(context.Background(), md))
	_, got := firstPoint(t, sink.AllMetrics()[0])
	assert.Equal(t, []float64{0.005, 0.01, 0.025}, got.ExplicitBounds().AsRaw())
	assert.Equal(t, []uint64{1 + 2, 3, 4, 5 + 6}, got.BucketCounts().AsRaw())
}
