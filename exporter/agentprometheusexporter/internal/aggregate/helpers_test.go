package aggregate_test

import (
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/aggregate"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/storetest"
)

// The tests feed OTLP batches through the converter, as the exporter does,
// and read the groups back from the store.

// t0 is the agents' clock; at(s) is s seconds after it.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(s float64) pcommon.Timestamp {
	return pcommon.NewTimestampFromTime(t0.Add(time.Duration(s * float64(time.Second))))
}

// batch is one agent's export: job api, its instance, a pod name.
type batch struct {
	md pmetric.Metrics
	ms pmetric.MetricSlice
}

func agentBatch(instance string) *batch {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	attrs := rm.Resource().Attributes()
	attrs.PutStr("service.name", "api")
	attrs.PutStr("service.instance.id", instance)
	attrs.PutStr("k8s.pod.name", "pod-"+instance)
	return &batch{md: md, ms: rm.ScopeMetrics().AppendEmpty().Metrics()}
}

// pt is where a point sits: its attributes, start and time in seconds.
type pt struct {
	attrs      map[string]any
	start, end float64
}

func (p pt) set(attrs pcommon.Map, setStart func(pcommon.Timestamp), setTime func(pcommon.Timestamp)) {
	if err := attrs.FromRaw(p.attrs); err != nil {
		panic(err)
	}
	if p.start != 0 {
		setStart(at(p.start))
	}
	setTime(at(p.end))
}

func (b *batch) metric(name string) pmetric.Metric {
	for i := 0; i < b.ms.Len(); i++ {
		if b.ms.At(i).Name() == name {
			return b.ms.At(i)
		}
	}
	m := b.ms.AppendEmpty()
	m.SetName(name)
	return m
}

func (b *batch) sum(name string, temporality pmetric.AggregationTemporality, monotonic bool, p pt, v float64) *batch {
	m := b.metric(name)
	if m.Type() != pmetric.MetricTypeSum {
		m.SetEmptySum().SetIsMonotonic(monotonic)
		m.Sum().SetAggregationTemporality(temporality)
	}
	dp := m.Sum().DataPoints().AppendEmpty()
	p.set(dp.Attributes(), dp.SetStartTimestamp, dp.SetTimestamp)
	dp.SetDoubleValue(v)
	return b
}

func (b *batch) counter(name string, p pt, v float64) *batch {
	return b.sum(name, pmetric.AggregationTemporalityCumulative, true, p, v)
}

func (b *batch) delta(name string, p pt, v float64) *batch {
	return b.sum(name, pmetric.AggregationTemporalityDelta, true, p, v)
}

func (b *batch) gauge(name string, p pt, v float64) *batch {
	m := b.metric(name)
	if m.Type() != pmetric.MetricTypeGauge {
		m.SetEmptyGauge()
	}
	dp := m.Gauge().DataPoints().AppendEmpty()
	p.set(dp.Attributes(), dp.SetStartTimestamp, dp.SetTimestamp)
	dp.SetDoubleValue(v)
	return b
}

// ended is a gauge point that says its series ended.
func (b *batch) ended(name string, p pt) *batch {
	b.gauge(name, p, 0)
	dps := b.metric(name).Gauge().DataPoints()
	dps.At(dps.Len() - 1).SetFlags(pmetric.DefaultDataPointFlags.WithNoRecordedValue(true))
	return b
}

func (b *batch) histogram(name string, temporality pmetric.AggregationTemporality, p pt, bounds []float64, counts []uint64, sum float64) *batch {
	m := b.metric(name)
	if m.Type() != pmetric.MetricTypeHistogram {
		m.SetEmptyHistogram().SetAggregationTemporality(temporality)
	}
	dp := m.Histogram().DataPoints().AppendEmpty()
	p.set(dp.Attributes(), dp.SetStartTimestamp, dp.SetTimestamp)
	dp.ExplicitBounds().FromRaw(bounds)
	dp.BucketCounts().FromRaw(counts)
	var n uint64
	for _, c := range counts {
		n += c
	}
	dp.SetCount(n)
	dp.SetSum(sum)
	return b
}

// exp is an exponential histogram point: scale, positive buckets from
// offset, zero count, sum.
type exp struct {
	scale     int32
	offset    int32
	buckets   []uint64
	zeroCount uint64
	sum       float64
}

func (b *batch) exponential(name string, p pt, e exp) *batch {
	m := b.metric(name)
	if m.Type() != pmetric.MetricTypeExponentialHistogram {
		m.SetEmptyExponentialHistogram().SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	}
	dp := m.ExponentialHistogram().DataPoints().AppendEmpty()
	p.set(dp.Attributes(), dp.SetStartTimestamp, dp.SetTimestamp)
	dp.SetScale(e.scale)
	dp.Positive().SetOffset(e.offset)
	dp.Positive().BucketCounts().FromRaw(e.buckets)
	dp.SetZeroCount(e.zeroCount)
	n := e.zeroCount
	for _, c := range e.buckets {
		n += c
	}
	dp.SetCount(n)
	dp.SetSum(e.sum)
	return b
}

// gateway is a store with the aggregator of rules, alone unless cfg says.
func gateway(t testing.TB, cfg aggregate.Config, rules ...aggregate.RuleConfig) *storetest.Store {
	return storetest.New(t, storetest.Options{WithoutScopeInfo: true, Aggregate: rules, Aggregation: cfg})
}

// byMethod keeps job and method of the metrics named.
func byMethod(metrics ...string) aggregate.RuleConfig {
	return aggregate.RuleConfig{Metrics: metrics, By: []string{"service.name", "method"}}
}

// value is the group's value, and whether it is served.
func value(st *storetest.Store, family, labels string) (float64, bool) {
	s, ok := st.Series(family)[labels]
	return s.Value, ok
}
