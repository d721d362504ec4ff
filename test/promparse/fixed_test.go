package promparse

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter"
)

// fixedBase is the start time of the fixed batch's series; step s of the
// batch is 10 s later each.
var fixedBase = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func fixedAt(d time.Duration) pcommon.Timestamp {
	return pcommon.NewTimestampFromTime(fixedBase.Add(d))
}

// fixedBatch is step 1 or 2 of a batch of every kind of metric the
// exporter takes, each with what makes it hard to write: gauges with UTF-8,
// empty and invalid UTF-8 labels; a counter with exemplars, one whose
// exemplar has no labels; deltas that continue their run and one that
// starts another; histograms with exemplars in every bucket, a delta one, an
// exponential one and a delta exponential one that changes scale;
// a summary; attribute names that sanitise alike or are the exposition's
// own (le, quantile, __name__, job); two families whose names escape alike
// and a type conflict.
func fixedBatch(step int) pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	_ = rm.Resource().Attributes().FromRaw(map[string]any{
		"service.namespace": "shop", "service.name": "cart", "service.instance.id": "i-1",
		"deployment.environment": "prod",
	})
	sm := rm.ScopeMetrics().AppendEmpty()
	sm.Scope().SetName("fixed")
	sm.Scope().SetVersion("1.0")
	ms := sm.Metrics()
	ts := fixedAt(time.Duration(step) * 10 * time.Second)
	prev := fixedAt(time.Duration(step-1) * 10 * time.Second)
	start := fixedAt(0)
	traceID := pcommon.TraceID{0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 1, 2, 3, 4, 5, 6, 7, 8, 9, byte(step)}
	spanID := pcommon.SpanID{1, 2, 3, 4, 5, 6, 7, byte(step)}
	exemplar := func(es pmetric.ExemplarSlice, v float64, trace, span bool, at time.Duration) {
		e := es.AppendEmpty()
		e.SetDoubleValue(v)
		if trace {
			e.SetTraceID(traceID)
		}
		if span {
			e.SetSpanID(spanID)
		}
		if at != 0 {
			e.SetTimestamp(fixedAt(at))
		}
	}
	number := func(dps pmetric.NumberDataPointSlice, attrs map[string]any, v float64, start pcommon.Timestamp) pmetric.NumberDataPoint {
		dp := dps.AppendEmpty()
		_ = dp.Attributes().FromRaw(attrs)
		dp.SetStartTimestamp(start)
		dp.SetTimestamp(ts)
		dp.SetDoubleValue(v)
		return dp
	}
	newMetric := func(name, unit string) pmetric.Metric {
		m := ms.AppendEmpty()
		m.SetName(name)
		m.SetUnit(unit)
		m.SetDescription("The " + name + ".")
		return m
	}

	g := newMetric("queue.depth", "{item}").SetEmptyGauge().DataPoints()
	number(g, map[string]any{"http.route": "/a"}, 1.5*float64(step), 0)
	number(g, map[string]any{"http.route": "/b", "code": 200}, 7*float64(step), 0)
	number(g, map[string]any{"http.route": "", "code": "bad\xffutf8", `we"ird`: "x"}, math.Inf(-1), 0)

	sum := newMetric("café.orders", "ms").SetEmptySum()
	sum.SetIsMonotonic(true)
	sum.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	dp := number(sum.DataPoints(), map[string]any{"http.route": "/a"}, 10*float64(step), start)
	exemplar(dp.Exemplars(), 3.5, true, true, 1500*time.Millisecond)
	exemplar(dp.Exemplars(), 4, true, false, 2500*time.Millisecond)

	retries := newMetric("retries", "").SetEmptySum()
	retries.SetIsMonotonic(true)
	retries.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	exemplar(number(retries.DataPoints(), nil, float64(step), start).Exemplars(), 1, false, false, 0)

	// Deltas: requests continues its run (7 after both steps), restarts
	// starts another at step 2 (3).
	requests := newMetric("requests", "").SetEmptySum()
	requests.SetIsMonotonic(true)
	requests.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
	number(requests.DataPoints(), map[string]any{"job": "batch"}, float64(2+step), prev)
	restarts := newMetric("restarts", "").SetEmptySum()
	restarts.SetIsMonotonic(true)
	restarts.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
	restartStart := start
	if step == 2 {
		restartStart = fixedAt(15 * time.Second)
	}
	number(restarts.DataPoints(), nil, float64(7-step*step), restartStart)

	pool := newMetric("pool.size", "By").SetEmptySum()
	pool.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	number(pool.DataPoints(), map[string]any{"__name__": "x"}, 100*float64(step), start)

	h := newMetric("http.server.duration", "s").SetEmptyHistogram()
	h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	hp := h.DataPoints().AppendEmpty()
	_ = hp.Attributes().FromRaw(map[string]any{"http.route": "/a", "le": "x"})
	hp.SetStartTimestamp(start)
	hp.SetTimestamp(ts)
	hp.ExplicitBounds().FromRaw([]float64{0.1, 0.5, 1})
	hp.BucketCounts().FromRaw([]uint64{1, uint64(step), 3, 4})
	hp.SetCount(8 + uint64(step))
	hp.SetSum(12.5)
	exemplar(hp.Exemplars(), 0.05, true, true, time.Second)   // le=0.1
	exemplar(hp.Exemplars(), 0.3, false, true, 2*time.Second) // le=0.5, replaced
	exemplar(hp.Exemplars(), 0.4, true, false, 0)             // le=0.5
	exemplar(hp.Exemplars(), 7, false, true, 3*time.Second)   // +Inf

	// A delta histogram: le=1 1, le=10 4, +Inf 7, sum 50 after both steps.
	rpc := newMetric("rpc.latency", "ms").SetEmptyHistogram()
	rpc.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
	rp := rpc.DataPoints().AppendEmpty()
	rp.SetStartTimestamp(prev)
	rp.SetTimestamp(ts)
	rp.ExplicitBounds().FromRaw([]float64{1, 10})
	if step == 1 {
		rp.BucketCounts().FromRaw([]uint64{1, 0, 2})
		rp.SetCount(3)
		rp.SetSum(30)
	} else {
		rp.BucketCounts().FromRaw([]uint64{0, 3, 1})
		rp.SetCount(4)
		rp.SetSum(20)
		exemplar(rp.Exemplars(), 9, true, true, 4*time.Second) // le=10
	}

	// An exponential histogram: schema 1, zero bucket 1, buckets 0: 1 and
	// 2: 2 positive, 1: 1 negative (Prometheus' indices).
	e := newMetric("payload.size", "By").SetEmptyExponentialHistogram()
	e.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	ep := e.DataPoints().AppendEmpty()
	ep.SetStartTimestamp(start)
	ep.SetTimestamp(ts)
	ep.SetScale(1)
	ep.SetZeroCount(1)
	ep.Positive().SetOffset(-1)
	ep.Positive().BucketCounts().FromRaw([]uint64{1, 0, 2})
	ep.Negative().BucketCounts().FromRaw([]uint64{1})
	ep.SetCount(5)
	ep.SetSum(10)
	exemplar(ep.Exemplars(), 3, true, false, 5*time.Second)
	exemplar(ep.Exemplars(), 0.5, false, true, 0) // no timestamp: Prometheus drops it

	// A delta exponential histogram at scale 2, then 1: merged at schema 1,
	// bucket 1 (OTLP's 0) holds 3.
	d := newMetric("dispatch.size", "By").SetEmptyExponentialHistogram()
	d.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
	dd := d.DataPoints().AppendEmpty()
	dd.SetStartTimestamp(prev)
	dd.SetTimestamp(ts)
	if step == 1 {
		dd.SetScale(2)
		dd.Positive().BucketCounts().FromRaw([]uint64{1, 1})
		dd.SetCount(2)
		dd.SetSum(4)
	} else {
		dd.SetScale(1)
		dd.Positive().BucketCounts().FromRaw([]uint64{1})
		dd.SetCount(1)
		dd.SetSum(2)
	}

	sumy := newMetric("gc.pause", "s").SetEmptySummary().DataPoints().AppendEmpty()
	_ = sumy.Attributes().FromRaw(map[string]any{"quantile": "all"})
	sumy.SetStartTimestamp(start)
	sumy.SetTimestamp(ts)
	sumy.SetCount(20 * uint64(step))
	sumy.SetSum(0.75 * float64(step))
	for _, q := range [][2]float64{{0.5, 0.01 * float64(step)}, {0.99, 0.2}} {
		qv := sumy.QuantileValues().AppendEmpty()
		qv.SetQuantile(q[0])
		qv.SetValue(q[1])
	}

	// Attribute names that sanitise alike: one label, values joined in
	// key order.
	number(newMetric("temp", "").SetEmptyGauge().DataPoints(), map[string]any{"a.b": "x", "a_b": "y"}, 21, 0)

	// Names that escape alike: one family with both series under an
	// underscore strategy; under a UTF-8 one, disk.used keeps the name
	// and disk_used is dropped.
	number(newMetric("disk.used", "").SetEmptyGauge().DataPoints(), map[string]any{"device": "sda"}, 1, 0)
	number(newMetric("disk_used", "").SetEmptyGauge().DataPoints(), map[string]any{"device": "sdb"}, 2, 0)

	// A type conflict: the gauge is kept, the histogram's points dropped.
	number(newMetric("conflict", "").SetEmptyGauge().DataPoints(), nil, 3, 0)
	ch := newMetric("conflict", "").SetEmptyHistogram()
	ch.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	cp := ch.DataPoints().AppendEmpty()
	cp.SetTimestamp(ts)
	cp.SetCount(1)
	return md
}

// fixedNames are the names the fixed batch's café.orders and its label
// http.route are written with, by strategy and escaping scheme: stated here
// rather than derived, against a mistake the expectation and the exporter
// would share.
var fixedNames = map[agentprometheusexporter.TranslationStrategy]map[model.EscapingScheme][2]string{
	agentprometheusexporter.UnderscoreEscapingWithSuffixes: {
		model.NoEscaping:            {"caf_orders_milliseconds_total", "http_route"},
		model.UnderscoreEscaping:    {"caf_orders_milliseconds_total", "http_route"},
		model.DotsEscaping:          {"caf_orders_milliseconds_total", "http_route"},
		model.ValueEncodingEscaping: {"caf_orders_milliseconds_total", "http_route"},
	},
	agentprometheusexporter.UnderscoreEscapingWithoutSuffixes: {
		model.NoEscaping:            {"caf_orders", "http_route"},
		model.UnderscoreEscaping:    {"caf_orders", "http_route"},
		model.DotsEscaping:          {"caf_orders", "http_route"},
		model.ValueEncodingEscaping: {"caf_orders", "http_route"},
	},
	agentprometheusexporter.NoUTF8EscapingWithSuffixes: {
		model.NoEscaping:            {"café.orders_milliseconds_total", "http.route"},
		model.UnderscoreEscaping:    {"caf__orders_milliseconds_total", "http_route"},
		model.DotsEscaping:          {"caf___dot_orders__milliseconds__total", "http_dot_route"},
		model.ValueEncodingEscaping: {"U__caf_e9__2e_orders__milliseconds__total", "U__http_2e_route"},
	},
	agentprometheusexporter.NoTranslation: {
		model.NoEscaping:            {"café.orders", "http.route"},
		model.UnderscoreEscaping:    {"caf__orders", "http_route"},
		model.DotsEscaping:          {"caf___dot_orders", "http_dot_route"},
		model.ValueEncodingEscaping: {"U__caf_e9__2e_orders", "U__http_2e_route"},
	},
}

// The fixed batch, sent twice, is every scrape's whole exposition: each
// series with its value, timestamp and exemplars as the OTLP states them,
// nothing else; and café.orders is named as fixedNames says.
func TestPrometheusReadsFixedBatch(t *testing.T) {
	scrapers := prometheusScrapers(t)
	for _, strategy := range strategies {
		for _, openMetrics := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/enable_open_metrics=%v", strategy, openMetrics), func(t *testing.T) {
				exp, url := startExporter(t, strategy, openMetrics)
				for step := 1; step <= 2; step++ {
					require.NoError(t, exp.ConsumeMetrics(context.Background(), fixedBatch(step)))
				}
				want := expectOTLP(strategy, true, fixedBatch(1), fixedBatch(2))
				require.Empty(t, want.badFamilies)
				for _, s := range want.series {
					require.False(t, s.bad, s.family)
				}
				checkScrapes(t, url, scrapers, openMetrics, want)
				st := want.stats()
				t.Logf("%d families, %d series, in every format", st.families, st.series)
				require.Equal(t, 14, st.families)

				for scheme, names := range fixedNames[strategy] {
					s := scraper{name: "text 1.0.0, escaping=" + scheme.String(),
						accept: text100 + ";" + model.EscapingKey + "=" + scheme.String(), encoding: "gzip"}
					body, contentType := scrape(t, url, s)
					got, err := parse(body, contentType)
					require.NoError(t, err)
					k := key(names[0], [][2]string{
						{names[1], "/a"}, {"job", "shop/cart"}, {"instance", "i-1"},
						{"otel_scope_name", "fixed"}, {"otel_scope_version", "1.0"},
					})
					require.Contains(t, got.samples, k, "escaping=%s", scheme)
					require.Equal(t, sample{v: 20, ts: fixedBase.Add(20 * time.Second).UnixMilli(), hasTs: true}, got.samples[k])
				}
			})
		}
	}
}
