package convert_test

import (
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/convert"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/storetest"
)

// The tests of this package feed OTLP batches through the converter into a
// store and read the store back: family names, label sets as
// store.LabelSet.Text writes them, values, and the Stats of each batch.

// t0 is the time of the points; at(s) is s seconds after it.
var t0 = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

func at(s int) pcommon.Timestamp {
	return pcommon.NewTimestampFromTime(t0.Add(time.Duration(s) * time.Second))
}

// ns is at(s) as the store keeps times, in unix nanoseconds.
func ns(s int) int64 { return t0.Add(time.Duration(s) * time.Second).UnixNano() }

// agent is the resource most tests send from: job="api", instance="i-1".
const agentLabels = `instance="i-1",job="api"`

func agent() map[string]any {
	return map[string]any{"service.name": "api", "service.instance.id": "i-1"}
}

// batch is one resource with one scope (no name, no version) holding the
// metrics that the add functions append.
func batch(resource map[string]any, add ...func(pmetric.MetricSlice)) pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	putAll(rm.Resource().Attributes(), resource)
	ms := rm.ScopeMetrics().AppendEmpty().Metrics()
	for _, a := range add {
		a(ms)
	}
	return md
}

// putAll puts attributes in a Go map's random order: a test where the
// order matters puts them one by one.
func putAll(m pcommon.Map, attrs map[string]any) {
	if err := m.FromRaw(attrs); err != nil {
		panic(err)
	}
}

// pt is one number point: value v at end, from start (seconds after t0),
// with attributes; noValue sets the NoRecordedValue flag.
type pt struct {
	attrs      map[string]any
	start, end int
	v          float64
	noValue    bool
	exemplars  []ex
}

// ex is an exemplar: value, time in seconds, trace and span id bytes.
type ex struct {
	v     float64
	at    int
	trace pcommon.TraceID
	span  pcommon.SpanID
}

func setNumber(dp pmetric.NumberDataPoint, p pt) {
	putAll(dp.Attributes(), p.attrs)
	if p.start != 0 {
		dp.SetStartTimestamp(at(p.start))
	}
	dp.SetTimestamp(at(p.end))
	dp.SetDoubleValue(p.v)
	if p.noValue {
		dp.SetFlags(pmetric.DefaultDataPointFlags.WithNoRecordedValue(true))
	}
	addExemplars(dp.Exemplars(), p.exemplars)
}

func addExemplars(es pmetric.ExemplarSlice, src []ex) {
	for _, x := range src {
		e := es.AppendEmpty()
		e.SetDoubleValue(x.v)
		e.SetTimestamp(at(x.at))
		e.SetTraceID(x.trace)
		e.SetSpanID(x.span)
	}
}

func gauge(name, unit string, points ...pt) func(pmetric.MetricSlice) {
	return func(ms pmetric.MetricSlice) {
		m := ms.AppendEmpty()
		m.SetName(name)
		m.SetUnit(unit)
		g := m.SetEmptyGauge()
		for _, p := range points {
			setNumber(g.DataPoints().AppendEmpty(), p)
		}
	}
}

func sum(name, unit string, temporality pmetric.AggregationTemporality, monotonic bool, points ...pt) func(pmetric.MetricSlice) {
	return func(ms pmetric.MetricSlice) {
		m := ms.AppendEmpty()
		m.SetName(name)
		m.SetUnit(unit)
		s := m.SetEmptySum()
		s.SetAggregationTemporality(temporality)
		s.SetIsMonotonic(monotonic)
		for _, p := range points {
			setNumber(s.DataPoints().AppendEmpty(), p)
		}
	}
}

// counter is a cumulative monotonic sum.
func counter(name, unit string, points ...pt) func(pmetric.MetricSlice) {
	return sum(name, unit, pmetric.AggregationTemporalityCumulative, true, points...)
}

// hp is one explicit-bucket histogram point.
type hp struct {
	attrs      map[string]any
	start, end int
	bounds     []float64
	counts     []uint64
	count      uint64
	sum        float64
	noValue    bool
	exemplars  []ex
}

func histogram(name, unit string, temporality pmetric.AggregationTemporality, points ...hp) func(pmetric.MetricSlice) {
	return func(ms pmetric.MetricSlice) {
		m := ms.AppendEmpty()
		m.SetName(name)
		m.SetUnit(unit)
		h := m.SetEmptyHistogram()
		h.SetAggregationTemporality(temporality)
		for _, p := range points {
			dp := h.DataPoints().AppendEmpty()
			putAll(dp.Attributes(), p.attrs)
			if p.start != 0 {
				dp.SetStartTimestamp(at(p.start))
			}
			dp.SetTimestamp(at(p.end))
			dp.ExplicitBounds().FromRaw(p.bounds)
			dp.BucketCounts().FromRaw(p.counts)
			dp.SetCount(p.count)
			dp.SetSum(p.sum)
			if p.noValue {
				dp.SetFlags(pmetric.DefaultDataPointFlags.WithNoRecordedValue(true))
			}
			addExemplars(dp.Exemplars(), p.exemplars)
		}
	}
}

// ep is one exponential histogram point.
type ep struct {
	scale         int32
	zeroThreshold float64
	zeroCount     uint64
	posOffset     int32
	pos           []uint64
	negOffset     int32
	neg           []uint64
	count         uint64
	sum           float64
}

func exponential(name string, points ...ep) func(pmetric.MetricSlice) {
	return func(ms pmetric.MetricSlice) {
		m := ms.AppendEmpty()
		m.SetName(name)
		h := m.SetEmptyExponentialHistogram()
		h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		for i, p := range points {
			dp := h.DataPoints().AppendEmpty()
			dp.Attributes().PutInt("point", int64(i))
			dp.SetStartTimestamp(at(1))
			dp.SetTimestamp(at(10))
			dp.SetScale(p.scale)
			dp.SetZeroThreshold(p.zeroThreshold)
			dp.SetZeroCount(p.zeroCount)
			dp.Positive().SetOffset(p.posOffset)
			dp.Positive().BucketCounts().FromRaw(p.pos)
			dp.Negative().SetOffset(p.negOffset)
			dp.Negative().BucketCounts().FromRaw(p.neg)
			dp.SetCount(p.count)
			dp.SetSum(p.sum)
		}
	}
}

// dropped is a Stats' Dropped with the given counts.
func dropped(counts map[convert.Reason]int64) [convert.NumReasons]int64 {
	var out [convert.NumReasons]int64
	for r, n := range counts {
		out[r] = n
	}
	return out
}

// newStore is a store of naming without the otel_scope_* labels, which
// most tests leave out of their label sets.
func newStore(t *testing.T, naming storetest.Naming) *storetest.Store {
	return storetest.New(t, storetest.Options{Naming: naming, WithoutScopeInfo: true})
}
