package conformance

import (
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// Fixed times keep the expected output stable. Both exporters expire series
// by the wall-clock time they were received, not by their timestamps, so old
// timestamps are not dropped.
var (
	t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	t1 = t0.Add(time.Minute)
	t2 = t1.Add(time.Minute)
	t3 = t2.Add(time.Minute)
)

func ts(t time.Time) pcommon.Timestamp { return pcommon.NewTimestampFromTime(t) }

// defaultResource is the resource of most cases: job "shop/checkout",
// instance "pod-1".
var defaultResource = map[string]any{
	"service.name":        "checkout",
	"service.namespace":   "shop",
	"service.instance.id": "pod-1",
}

// addResource appends a resource with the given attributes and one scope
// named "conformance", version "1.0.0".
func addResource(md pmetric.Metrics, attrs map[string]any) pmetric.ScopeMetrics {
	rm := md.ResourceMetrics().AppendEmpty()
	if err := rm.Resource().Attributes().FromRaw(attrs); err != nil {
		panic(err)
	}
	sm := rm.ScopeMetrics().AppendEmpty()
	sm.Scope().SetName("conformance")
	sm.Scope().SetVersion("1.0.0")
	return sm
}

// single builds one batch with the default resource and scope.
func single(fill func(sm pmetric.ScopeMetrics)) func() []pmetric.Metrics {
	return func() []pmetric.Metrics {
		md := pmetric.NewMetrics()
		fill(addResource(md, defaultResource))
		return []pmetric.Metrics{md}
	}
}

func newMetric(sm pmetric.ScopeMetrics, name, unit, desc string) pmetric.Metric {
	m := sm.Metrics().AppendEmpty()
	m.SetName(name)
	m.SetUnit(unit)
	m.SetDescription(desc)
	return m
}

func gauge(sm pmetric.ScopeMetrics, name, unit, desc string) pmetric.NumberDataPointSlice {
	return newMetric(sm, name, unit, desc).SetEmptyGauge().DataPoints()
}

func sum(sm pmetric.ScopeMetrics, name, unit, desc string, monotonic bool, temp pmetric.AggregationTemporality) pmetric.NumberDataPointSlice {
	s := newMetric(sm, name, unit, desc).SetEmptySum()
	s.SetIsMonotonic(monotonic)
	s.SetAggregationTemporality(temp)
	return s.DataPoints()
}

func counter(sm pmetric.ScopeMetrics, name, unit, desc string) pmetric.NumberDataPointSlice {
	return sum(sm, name, unit, desc, true, pmetric.AggregationTemporalityCumulative)
}

func setAttrs(m pcommon.Map, attrs map[string]any) {
	if err := m.FromRaw(attrs); err != nil {
		panic(err)
	}
}

// intPoint appends a point covering [t0, t1].
func intPoint(dps pmetric.NumberDataPointSlice, v int64, attrs map[string]any) pmetric.NumberDataPoint {
	dp := dps.AppendEmpty()
	dp.SetStartTimestamp(ts(t0))
	dp.SetTimestamp(ts(t1))
	dp.SetIntValue(v)
	setAttrs(dp.Attributes(), attrs)
	return dp
}

// doublePoint appends a point covering [t0, t1].
func doublePoint(dps pmetric.NumberDataPointSlice, v float64, attrs map[string]any) pmetric.NumberDataPoint {
	dp := dps.AppendEmpty()
	dp.SetStartTimestamp(ts(t0))
	dp.SetTimestamp(ts(t1))
	dp.SetDoubleValue(v)
	setAttrs(dp.Attributes(), attrs)
	return dp
}

func histogram(sm pmetric.ScopeMetrics, name, unit, desc string, temp pmetric.AggregationTemporality) pmetric.HistogramDataPointSlice {
	h := newMetric(sm, name, unit, desc).SetEmptyHistogram()
	h.SetAggregationTemporality(temp)
	return h.DataPoints()
}

// histPoint appends a histogram point covering [t0, t1]; count is the sum of
// counts.
func histPoint(dps pmetric.HistogramDataPointSlice, bounds []float64, counts []uint64, total float64, attrs map[string]any) pmetric.HistogramDataPoint {
	dp := dps.AppendEmpty()
	dp.SetStartTimestamp(ts(t0))
	dp.SetTimestamp(ts(t1))
	dp.ExplicitBounds().FromRaw(bounds)
	dp.BucketCounts().FromRaw(counts)
	var n uint64
	for _, c := range counts {
		n += c
	}
	dp.SetCount(n)
	dp.SetSum(total)
	setAttrs(dp.Attributes(), attrs)
	return dp
}

func summary(sm pmetric.ScopeMetrics, name, unit, desc string) pmetric.SummaryDataPointSlice {
	return newMetric(sm, name, unit, desc).SetEmptySummary().DataPoints()
}

// summaryPoint appends a summary point covering [t0, t1]; quantiles holds
// quantile, value pairs.
func summaryPoint(dps pmetric.SummaryDataPointSlice, count uint64, total float64, quantiles [][2]float64, attrs map[string]any) pmetric.SummaryDataPoint {
	dp := dps.AppendEmpty()
	dp.SetStartTimestamp(ts(t0))
	dp.SetTimestamp(ts(t1))
	dp.SetCount(count)
	dp.SetSum(total)
	for _, q := range quantiles {
		qv := dp.QuantileValues().AppendEmpty()
		qv.SetQuantile(q[0])
		qv.SetValue(q[1])
	}
	setAttrs(dp.Attributes(), attrs)
	return dp
}

// traceID and spanID are fixed exemplar ids.
var (
	traceID = pcommon.TraceID([16]byte{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36})
	spanID  = pcommon.SpanID([8]byte{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7})
)

// addExemplar appends an exemplar with fixed trace and span ids at t1.
func addExemplar(es pmetric.ExemplarSlice, v float64) {
	e := es.AppendEmpty()
	e.SetTimestamp(ts(t1))
	e.SetDoubleValue(v)
	e.SetTraceID(traceID)
	e.SetSpanID(spanID)
}
