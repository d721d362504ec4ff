package grpcstatsprocessor

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/statsgate/statsgate/internal/grpcstatstest"
	"github.com/statsgate/statsgate/processor/grpcstatsprocessor/internal/dialect"
	"github.com/statsgate/statsgate/processor/grpcstatsprocessor/internal/metadatatest"
)

// Every metric of a bad-input batch carries its expected outcome in its
// description, which the processor never changes: "pass:..." leaves
// exactly as it came, "convert:..." leaves in the target form, "drop:..."
// does not leave.
const (
	outcomePass    = "pass:"
	outcomeConvert = "convert:"
	outcomeDrop    = "drop:"
)

func described(ms pmetric.MetricSlice, id, name, unit string) pmetric.Metric {
	m := ms.AppendEmpty()
	m.SetName(name)
	m.SetUnit(unit)
	m.SetDescription(id)
	return m
}

// histogram appends a cumulative histogram metric with one point of two
// calls, 1.5 and 2 in the metric's unit.
func histogram(ms pmetric.MetricSlice, id, name, unit string, attrs map[string]any) pmetric.HistogramDataPoint {
	h := described(ms, id, name, unit).SetEmptyHistogram()
	h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	dp := h.DataPoints().AppendEmpty()
	_ = dp.Attributes().FromRaw(attrs)
	dp.SetStartTimestamp(pcommon.Timestamp(time.Second))
	dp.SetTimestamp(pcommon.Timestamp(time.Minute))
	dp.SetCount(2)
	dp.SetSum(3.5)
	dp.SetMin(1.5)
	dp.SetMax(2)
	dp.ExplicitBounds().FromRaw([]float64{0, 5, 10})
	dp.BucketCounts().FromRaw([]uint64{0, 2, 0, 0})
	return dp
}

func unrelated(ms pmetric.MetricSlice, id, name string, attrs map[string]any) pmetric.NumberDataPoint {
	dp := described(ms, id, name, "").SetEmptyGauge().DataPoints().AppendEmpty()
	dp.SetIntValue(7)
	_ = dp.Attributes().FromRaw(attrs)
	return dp
}

var legacyAttrs = map[string]any{"rpc.system": "grpc", "rpc.service": "shop.Cart", "rpc.method": "Add", "rpc.grpc.status_code": int64(0)}

// withAttrs returns base with changes: a nil value removes the key.
func withAttrs(base map[string]any, changes map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range changes {
		if v == nil {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	return out
}

// procRow is one kind of bad input. The batch holds it among good points:
// a legacy otelgrpc server duration and unrelated gauges before and after
// it in the "cart" resource, and a grpc-go client duration and a gauge in
// a second resource, "web".
type procRow struct {
	name      string
	configure func(*Config)
	// bad appends the bad input to cart's otelgrpc scope.
	bad func(sm pmetric.ScopeMetrics)
	// web appends bad input to web's scope.
	web func(sm pmetric.ScopeMetrics)
	// check asserts the converted bad input; convert returns the metric
	// the input with that description id became.
	check func(t *testing.T, convert func(id string) pmetric.Metric)
	// converted, passed and duplicates are the processor's counts for the
	// whole batch, good points included.
	converted  map[string]int64
	passed     int64
	duplicates map[string]int64
}

// The good points: cart's legacy server duration (semconv_legacy) and
// web's grpc-go client duration (grpc_native) are converted; the three
// unrelated gauges pass through.
const goodPassed = 3

func goodConverted(extra map[string]int64) map[string]int64 {
	out := map[string]int64{string(dialect.SemconvLegacy): 1, string(dialect.GRPCNative): 1}
	for d, n := range extra {
		out[d] += n
	}
	return out
}

func procBatch(row procRow) pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("service.name", "cart")
	sm := rm.ScopeMetrics().AppendEmpty()
	sm.Scope().SetName(grpcstatstest.OtelgrpcScope)
	sm.Scope().SetVersion("0.64.0")
	histogram(sm.Metrics(), outcomeConvert+"good legacy", "rpc.server.duration", "ms", legacyAttrs)
	unrelated(sm.Metrics(), outcomePass+"good gauge", "app.queue.depth", map[string]any{"queue": "a"})
	if row.bad != nil {
		row.bad(sm)
	}
	unrelated(sm.Metrics(), outcomePass+"good after", "app.after", nil)

	rm = md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("service.name", "web")
	sm = rm.ScopeMetrics().AppendEmpty()
	sm.Scope().SetName("grpc-go")
	histogram(sm.Metrics(), outcomeConvert+"good native", "grpc.client.call.duration", "s",
		map[string]any{"grpc.method": "shop.Cart/Add", "grpc.status": "OK", "grpc.target": "dns:///cart:443"})
	unrelated(sm.Metrics(), outcomePass+"good web gauge", "app.queue.depth", nil)
	if row.web != nil {
		row.web(sm)
	}
	return md
}

// byDescription indexes the metrics of md by description.
func byDescription(t *testing.T, md pmetric.Metrics) map[string]pmetric.Metric {
	t.Helper()
	out := map[string]pmetric.Metric{}
	eachMetric(md, func(_ pcommon.InstrumentationScope, m pmetric.Metric) {
		require.NotContains(t, out, m.Description(), "two metrics are described %q", m.Description())
		out[m.Description()] = m
	})
	return out
}

// processorCounts reads the processor's telemetry: points converted and
// duplicates dropped by dialect, points passed through.
func processorCounts(t *testing.T, tel *componenttest.Telemetry) (converted, duplicates map[string]int64, passed int64) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, tel.Reader.Collect(context.Background(), &rm))
	converted, duplicates = map[string]int64{}, map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
				d, _ := dp.Attributes.Value("dialect")
				switch m.Name {
				case "otelcol_processor_grpcstats_points_converted":
					converted[d.AsString()] += dp.Value
				case "otelcol_processor_grpcstats_duplicates_dropped":
					duplicates[d.AsString()] += dp.Value
				case "otelcol_processor_grpcstats_points_passed_through":
					passed += dp.Value
				}
			}
		}
	}
	return converted, duplicates, passed
}

func TestBadInput(t *testing.T) {
	for _, row := range procRows() {
		t.Run(row.name, func(t *testing.T) {
			cfg := createDefaultConfig().(*Config)
			if row.configure != nil {
				row.configure(cfg)
			}
			tel := componenttest.NewTelemetry()
			t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
			sink := new(consumertest.MetricsSink)
			p, err := NewFactory().CreateMetrics(context.Background(), metadatatest.NewSettings(tel), cfg, sink)
			require.NoError(t, err)
			md := procBatch(row)
			in := byDescription(t, cloneMetrics(md))
			require.NoError(t, p.ConsumeMetrics(context.Background(), md))
			out := byDescription(t, sink.AllMetrics()[0])

			target := cfg.Target
			canonical := map[string]bool{}
			for c := range dialect.NumConcepts {
				canonical[target.Name(c)] = true
			}
			dropped := 0
			for id, m := range in {
				got, ok := out[id]
				switch {
				case strings.HasPrefix(id, outcomePass):
					if assert.True(t, ok, "%s is missing", id) {
						assert.Equal(t, metricJSON(t, m), metricJSON(t, got), "%s must pass untouched", id)
					}
				case strings.HasPrefix(id, outcomeDrop):
					assert.False(t, ok, "%s must be dropped", id)
					dropped++
				case strings.HasPrefix(id, outcomeConvert):
					if assert.True(t, ok, "%s is missing", id) {
						assert.True(t, canonical[got.Name()], "%s: %q is not a target name", id, got.Name())
					}
				default:
					t.Fatalf("metric %q has no outcome", id)
				}
			}
			assert.Len(t, out, len(in)-dropped, "no metric but the dropped ones is lost, none is added")

			convert := func(id string) pmetric.Metric {
				t.Helper()
				require.Contains(t, out, outcomeConvert+id)
				return out[outcomeConvert+id]
			}
			// The good points, whatever the bad input did.
			if target == dialect.TargetSemconv {
				assertPoint(t, convert("good legacy"), "rpc.server.call.duration",
					map[string]any{"rpc.method": "shop.Cart/Add", "rpc.status_code": "OK", "rpc.system.name": "grpc"})
				assertPoint(t, convert("good native"), "rpc.client.call.duration",
					map[string]any{"rpc.method": "shop.Cart/Add", "rpc.status_code": "OK", "rpc.system.name": "grpc", "server.address": "cart", "server.port": int64(443)})
				_, dp := onlyPoint(t, convert("good legacy"))
				assert.Equal(t, 0.0035, dp.Sum(), "ms are converted into s")
			}
			if row.check != nil {
				row.check(t, convert)
			}

			converted, duplicates, passed := processorCounts(t, tel)
			assert.Equal(t, row.converted, converted, "points converted by dialect")
			want := row.duplicates
			if want == nil {
				want = map[string]int64{}
			}
			assert.Equal(t, want, duplicates, "duplicate points dropped by dialect")
			assert.Equal(t, row.passed, passed, "points passed through")
		})
	}
}

func onlyPoint(t *testing.T, m pmetric.Metric) (pmetric.Metric, pmetric.HistogramDataPoint) {
	t.Helper()
	require.Equal(t, pmetric.MetricTypeHistogram, m.Type())
	require.Equal(t, 1, m.Histogram().DataPoints().Len())
	return m, m.Histogram().DataPoints().At(0)
}

// assertPoint checks the name and the attributes of a converted metric's
// only point.
func assertPoint(t *testing.T, m pmetric.Metric, name string, attrs map[string]any) {
	t.Helper()
	_, dp := onlyPoint(t, m)
	assert.Equal(t, name, m.Name())
	assert.Equal(t, "s", m.Unit())
	assert.Equal(t, attrs, dp.Attributes().AsRaw())
}

func procRows() []procRow {
	legacy := func(id string, changes map[string]any) func(sm pmetric.ScopeMetrics) {
		return func(sm pmetric.ScopeMetrics) {
			histogram(sm.Metrics(), outcomeConvert+id, "rpc.server.duration", "ms", withAttrs(legacyAttrs, changes))
		}
	}
	semconvServer := map[string]any{"rpc.method": "shop.Cart/Add", "rpc.response.status_code": "OK", "rpc.system.name": "grpc"}
	return []procRow{
		{
			name: "metric names that are empty, invalid or near a dialect's pass through untouched",
			bad: func(sm pmetric.ScopeMetrics) {
				for i, name := range []string{"", "!!!", "rpc.server.duración", "rpc.server.duration ", "RPC.SERVER.DURATION", "rpc.server.duration\xff"} {
					histogram(sm.Metrics(), fmt.Sprint(outcomePass, "name ", i), name, "ms", legacyAttrs)
				}
			},
			converted: goodConverted(nil),
			passed:    goodPassed + 6,
		},
		{
			name: "attribute names and values of any shape pass untouched, and stay on converted points",
			bad: func(sm pmetric.ScopeMetrics) {
				odd := map[string]any{
					"a.b": "dot", "a_b": "underscore", "": "empty key", "quote": `say "hi"`, "backslash": `C:\temp\`,
					"newline": "two\nlines", "badutf8": "ok\xffok", "long": strings.Repeat("x", 64<<10), "bad\xffkey": "v",
				}
				unrelated(sm.Metrics(), outcomePass+"odd gauge", "app.odd", odd)
				wide := withAttrs(legacyAttrs, odd)
				for i := range 500 {
					wide[fmt.Sprintf("attr.%03d", i)] = int64(i)
				}
				legacy("wide", wide)(sm)
			},
			check: func(t *testing.T, convert func(string) pmetric.Metric) {
				_, dp := onlyPoint(t, convert("wide"))
				got := dp.Attributes().AsRaw()
				assert.Len(t, got, 500+9+3, "500 + 9 odd attributes kept, the dialect's 4 replaced by 3")
				assert.Equal(t, "ok\xffok", got["badutf8"], "values are not the processor's to repair")
				assert.Equal(t, strings.Repeat("x", 64<<10), got["long"])
				assert.Equal(t, int64(499), got["attr.499"])
				assert.Equal(t, "shop.Cart/Add", got["rpc.method"])
			},
			converted: goodConverted(map[string]int64{"semconv_legacy": 1}),
			passed:    goodPassed + 1,
		},
		{
			name: "NaN, infinite and negative values are converted as sent",
			bad: func(sm pmetric.ScopeMetrics) {
				dp := histogram(sm.Metrics(), outcomeConvert+"special", "rpc.server.duration", "ms", legacyAttrs)
				dp.SetSum(math.NaN())
				dp.SetMin(math.Inf(-1))
				dp.SetMax(math.Inf(1))
				dp.Exemplars().AppendEmpty().SetIntValue(-3)
				c := described(sm.Metrics(), outcomePass+"negative counter", "app.requests", "").SetEmptySum()
				c.SetIsMonotonic(true)
				c.DataPoints().AppendEmpty().SetDoubleValue(-5)
			},
			check: func(t *testing.T, convert func(string) pmetric.Metric) {
				_, dp := onlyPoint(t, convert("special"))
				assert.True(t, math.IsNaN(dp.Sum()))
				assert.Equal(t, math.Inf(-1), dp.Min())
				assert.Equal(t, math.Inf(1), dp.Max())
				assert.Equal(t, -0.003, dp.Exemplars().At(0).DoubleValue())
			},
			converted: goodConverted(map[string]int64{"semconv_legacy": 1}),
			passed:    goodPassed + 1,
		},
		{
			name:      "histograms whose buckets disagree with their count or bounds are converted with their buckets as sent",
			configure: func(c *Config) { c.HistogramBounds = BoundsCommon },
			bad: func(sm pmetric.ScopeMetrics) {
				for id, layout := range map[string]struct {
					bounds []float64
					counts []uint64
				}{
					"count mismatch": {[]float64{1, 5, 10}, []uint64{1, 1, 1, 1}}, // 4 observations, count 2
					"missing count":  {[]float64{5, 10}, []uint64{2, 0}},
					"unordered":      {[]float64{10, 1, 5}, []uint64{0, 1, 1, 0}},
					"no buckets":     {nil, nil},
				} {
					dp := histogram(sm.Metrics(), outcomeConvert+id, "rpc.server.duration", "ms", legacyAttrs)
					dp.ExplicitBounds().FromRaw(layout.bounds)
					dp.BucketCounts().FromRaw(layout.counts)
				}
			},
			check: func(t *testing.T, convert func(string) pmetric.Metric) {
				layout := func(id string) ([]float64, []uint64) {
					_, dp := onlyPoint(t, convert(id))
					return dp.ExplicitBounds().AsRaw(), dp.BucketCounts().AsRaw()
				}
				// Re-bucketed onto the common bounds: 1 ms is not one.
				bounds, counts := layout("count mismatch")
				assert.Equal(t, []float64{0.005, 0.01}, bounds)
				assert.Equal(t, []uint64{2, 1, 1}, counts)
				// Malformed layouts are scaled, not re-bucketed.
				bounds, counts = layout("missing count")
				assert.Equal(t, []float64{0.005, 0.01}, bounds)
				assert.Equal(t, []uint64{2, 0}, counts)
				bounds, counts = layout("unordered")
				assert.Equal(t, []float64{0.01, 0.001, 0.005}, bounds) // in the order sent
				assert.Equal(t, []uint64{0, 1, 1, 0}, counts)
				bounds, counts = layout("no buckets")
				assert.Empty(t, bounds)
				assert.Empty(t, counts)
			},
			converted: goodConverted(map[string]int64{"semconv_legacy": 4}),
			passed:    goodPassed,
		},
		{
			name: "an empty dialect histogram is converted and does not make another dialect's points duplicates",
			bad: func(sm pmetric.ScopeMetrics) {
				// otelgrpc (semconv) outranks grpc-go's plugin, but reports no
				// calls here: the plugin's points are the only ones.
				h := described(sm.Metrics(), outcomeConvert+"empty semconv", "rpc.client.call.duration", "s").SetEmptyHistogram()
				h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
				histogram(sm.Metrics(), outcomeConvert+"native client", "grpc.client.call.duration", "s",
					map[string]any{"grpc.method": "shop.Cart/Get", "grpc.status": "OK"})
			},
			check: func(t *testing.T, convert func(string) pmetric.Metric) {
				m := convert("empty semconv")
				assert.Equal(t, "rpc.client.call.duration", m.Name())
				assert.Zero(t, m.Histogram().DataPoints().Len())
				assertPoint(t, convert("native client"), "rpc.client.call.duration",
					map[string]any{"rpc.method": "shop.Cart/Get", "rpc.status_code": "OK", "rpc.system.name": "grpc"})
			},
			converted: goodConverted(map[string]int64{"grpc_native": 1}),
			passed:    goodPassed,
		},
		{
			name: "the same calls in a dialect of lower precedence are dropped and counted",
			bad: func(sm pmetric.ScopeMetrics) {
				histogram(sm.Metrics(), outcomeConvert+"semconv", "rpc.client.call.duration", "s", semconvServer)
				histogram(sm.Metrics(), outcomeDrop+"native", "grpc.client.call.duration", "s", map[string]any{"grpc.method": "shop.Cart/Add", "grpc.status": "OK"})
			},
			converted:  goodConverted(map[string]int64{"semconv": 1}),
			duplicates: map[string]int64{"grpc_native": 1},
			passed:     goodPassed,
		},
		{
			name: "exponential histograms and summaries under a dialect's name pass through untouched",
			bad: func(sm pmetric.ScopeMetrics) {
				e := described(sm.Metrics(), outcomePass+"exponential", "rpc.server.duration", "ms").SetEmptyExponentialHistogram()
				e.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
				dp := e.DataPoints().AppendEmpty()
				dp.SetScale(30) // beyond what a native histogram can hold
				dp.SetCount(1)
				dp.Positive().BucketCounts().FromRaw([]uint64{1})
				_ = dp.Attributes().FromRaw(legacyAttrs)
				s := described(sm.Metrics(), outcomePass+"summary", "grpc.server.call.duration", "s").SetEmptySummary().DataPoints().AppendEmpty()
				s.SetCount(1)
			},
			converted: goodConverted(nil),
			passed:    goodPassed + 2,
		},
		{
			name: "a dialect's metric with another type or unit passes through untouched, from any resource",
			configure: func(c *Config) {
				c.Target = dialect.TargetGRPC // so that started counters are recognised
			},
			bad: func(sm pmetric.ScopeMetrics) {
				s := described(sm.Metrics(), outcomePass+"sum", "rpc.server.duration", "ms").SetEmptySum()
				s.SetIsMonotonic(true)
				s.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
				s.DataPoints().AppendEmpty().SetIntValue(3)
				histogram(sm.Metrics(), outcomePass+"legacy in s", "rpc.server.duration", "s", legacyAttrs)
				histogram(sm.Metrics(), outcomePass+"semconv in ms", "rpc.server.call.duration", "ms", semconvServer)
				g := described(sm.Metrics(), outcomePass+"started gauge", "grpc.server.call.started", "{call}").SetEmptyGauge()
				g.DataPoints().AppendEmpty().SetIntValue(4)
				n := described(sm.Metrics(), outcomePass+"started non-monotonic", "grpc.server.call.started", "{call}").SetEmptySum()
				n.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
				n.DataPoints().AppendEmpty().SetIntValue(4)
			},
			web: func(sm pmetric.ScopeMetrics) {
				// Another agent sends the name cart converts as a gauge.
				unrelated(sm.Metrics(), outcomePass+"web legacy gauge", "rpc.server.duration", nil)
			},
			converted: goodConverted(nil),
			passed:    goodPassed + 6,
		},
		{
			name: "deltas without start times, out-of-order and repeated timestamps are converted as sent",
			bad: func(sm pmetric.ScopeMetrics) {
				h := described(sm.Metrics(), outcomeConvert+"deltas", "rpc.server.duration", "ms").SetEmptyHistogram()
				h.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
				for _, at := range []time.Duration{2 * time.Minute, time.Minute, time.Minute} {
					dp := h.DataPoints().AppendEmpty()
					_ = dp.Attributes().FromRaw(legacyAttrs)
					dp.SetTimestamp(pcommon.Timestamp(at))
					dp.SetCount(1)
					dp.SetSum(5)
				}
			},
			check: func(t *testing.T, convert func(string) pmetric.Metric) {
				m := convert("deltas")
				assert.Equal(t, pmetric.AggregationTemporalityDelta, m.Histogram().AggregationTemporality())
				dps := m.Histogram().DataPoints()
				require.Equal(t, 3, dps.Len())
				for i, at := range []time.Duration{2 * time.Minute, time.Minute, time.Minute} {
					assert.Zero(t, dps.At(i).StartTimestamp())
					assert.Equal(t, pcommon.Timestamp(at), dps.At(i).Timestamp())
					assert.Equal(t, 0.005, dps.At(i).Sum())
				}
			},
			converted: goodConverted(map[string]int64{"semconv_legacy": 3}),
			passed:    goodPassed,
		},
		{
			name: "missing attributes are converted without the facts they carry",
			bad: func(sm pmetric.ScopeMetrics) {
				legacy("no method", map[string]any{"rpc.method": nil})(sm)
				legacy("no service", map[string]any{"rpc.service": nil})(sm)
				legacy("no status", map[string]any{"rpc.grpc.status_code": nil})(sm)
				legacy("no attributes", map[string]any{"rpc.method": nil, "rpc.service": nil, "rpc.grpc.status_code": nil, "rpc.system": nil})(sm)
			},
			web: func(sm pmetric.ScopeMetrics) {
				histogram(sm.Metrics(), outcomeConvert+"native target only", "grpc.client.call.duration", "s", map[string]any{"grpc.target": "dns:///cart:443"})
			},
			check: func(t *testing.T, convert func(string) pmetric.Metric) {
				assertPoint(t, convert("no method"), "rpc.server.call.duration", map[string]any{"rpc.status_code": "OK", "rpc.system.name": "grpc"})
				assertPoint(t, convert("no service"), "rpc.server.call.duration", map[string]any{"rpc.method": "Add", "rpc.status_code": "OK", "rpc.system.name": "grpc"})
				assertPoint(t, convert("no status"), "rpc.server.call.duration", map[string]any{"rpc.method": "shop.Cart/Add", "rpc.system.name": "grpc"})
				assertPoint(t, convert("no attributes"), "rpc.server.call.duration", map[string]any{"rpc.system.name": "grpc"})
				assertPoint(t, convert("native target only"), "rpc.client.call.duration", map[string]any{"rpc.system.name": "grpc", "server.address": "cart", "server.port": int64(443)})
			},
			converted: goodConverted(map[string]int64{"semconv_legacy": 4, "grpc_native": 1}),
			passed:    goodPassed,
		},
		{
			name: "points of RPC systems other than gRPC and Connect are left alone but for their system",
			bad: func(sm pmetric.ScopeMetrics) {
				legacy("dubbo", map[string]any{"rpc.system": "apache_dubbo"})(sm)
			},
			web: func(sm pmetric.ScopeMetrics) {
				histogram(sm.Metrics(), outcomeConvert+"jsonrpc", "rpc.server.call.duration", "s",
					map[string]any{"rpc.method": "sum", "rpc.response.status_code": "-32602", "rpc.system.name": "jsonrpc", "error.type": "-32602"})
			},
			check: func(t *testing.T, convert func(string) pmetric.Metric) {
				assertPoint(t, convert("dubbo"), "rpc.server.call.duration", map[string]any{
					"rpc.system.name": "dubbo", "rpc.service": "shop.Cart", "rpc.method": "Add", "rpc.grpc.status_code": int64(0),
				})
				assertPoint(t, convert("jsonrpc"), "rpc.server.call.duration", map[string]any{
					"rpc.method": "sum", "rpc.response.status_code": "-32602", "rpc.system.name": "jsonrpc", "error.type": "-32602",
				})
			},
			converted: goodConverted(map[string]int64{"semconv_legacy": 1, "semconv": 1}),
			passed:    goodPassed,
		},
		{
			name: "wrong-typed attributes are read in their string form, and values that are no fact are dropped",
			bad: func(sm pmetric.ScopeMetrics) {
				legacy("status as string", map[string]any{"rpc.grpc.status_code": "5"})(sm)
				legacy("status as double", map[string]any{"rpc.grpc.status_code": 14.0})(sm)
				legacy("status unknown", map[string]any{"rpc.grpc.status_code": "Bogus"})(sm)
				legacy("status as map", map[string]any{"rpc.grpc.status_code": map[string]any{"code": 5}})(sm)
				legacy("method as int", map[string]any{"rpc.method": int64(42)})(sm)
				legacy("method as list", map[string]any{"rpc.method": []any{"Add"}})(sm)
				c := described(sm.Metrics(), outcomeConvert+"client ports", "rpc.client.duration", "ms").SetEmptyHistogram()
				c.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
				for _, port := range []any{"8443", "abc", "99999", 99999.0, int64(-1)} {
					dp := c.DataPoints().AppendEmpty()
					_ = dp.Attributes().FromRaw(withAttrs(legacyAttrs, map[string]any{"net.peer.name": "cart", "net.peer.port": port}))
				}
			},
			web: func(sm pmetric.ScopeMetrics) {
				histogram(sm.Metrics(), outcomeConvert+"native typed", "grpc.client.call.duration", "s",
					map[string]any{"grpc.method": true, "grpc.status": int64(5), "grpc.target": int64(7)})
			},
			check: func(t *testing.T, convert func(string) pmetric.Metric) {
				server := func(changes map[string]any) map[string]any {
					return withAttrs(map[string]any{"rpc.method": "shop.Cart/Add", "rpc.status_code": "OK", "rpc.system.name": "grpc"}, changes)
				}
				assertPoint(t, convert("status as string"), "rpc.server.call.duration", server(map[string]any{"rpc.status_code": "NOT_FOUND"}))
				assertPoint(t, convert("status as double"), "rpc.server.call.duration", server(map[string]any{"rpc.status_code": "UNAVAILABLE", "error.type": "UNAVAILABLE"}))
				assertPoint(t, convert("status unknown"), "rpc.server.call.duration", server(map[string]any{"rpc.status_code": "Bogus"}))
				assertPoint(t, convert("status as map"), "rpc.server.call.duration", server(map[string]any{"rpc.status_code": nil}))
				assertPoint(t, convert("method as int"), "rpc.server.call.duration", server(map[string]any{"rpc.method": "shop.Cart/42"}))
				assertPoint(t, convert("method as list"), "rpc.server.call.duration", server(map[string]any{"rpc.method": nil}))
				dps := convert("client ports").Histogram().DataPoints()
				require.Equal(t, 5, dps.Len())
				client := map[string]any{"rpc.method": "shop.Cart/Add", "rpc.status_code": "OK", "rpc.system.name": "grpc", "server.address": "cart"}
				assert.Equal(t, withAttrs(client, map[string]any{"server.port": int64(8443)}), dps.At(0).Attributes().AsRaw())
				for i := 1; i < 5; i++ {
					assert.Equal(t, client, dps.At(i).Attributes().AsRaw(), "no port in point %d", i)
				}
				assertPoint(t, convert("native typed"), "rpc.client.call.duration", map[string]any{
					"rpc.method": "true", "rpc.status_code": "NOT_FOUND", "error.type": "NOT_FOUND",
					"rpc.system.name": "grpc", "server.address": "7",
				})
			},
			converted: goodConverted(map[string]int64{"semconv_legacy": 6 + 5, "grpc_native": 1}),
			passed:    goodPassed,
		},
	}
}
