// Package otlprand writes random OTLP metrics for the tests that compare
// the exposition writers with expfmt and with Prometheus' parsers: a plan of
// metrics made once, then batches of it, so that the same series come again
// (cumulative points update, delta points accumulate or begin new runs).
// Names, keys and values come from pools of what is hard to write: UTF-8 and
// escaped characters, names that sanitise alike, names the exposition
// reserves.
package otlprand // import "github.com/statsgate/statsgate/internal/otlprand"

import (
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// Gen is a plan of random metrics; Batch writes it at a step.
type Gen struct {
	r       *rand.Rand
	base    time.Time
	metrics []plannedMetric
	// resources are the resource attribute maps of the batches.
	resources []map[string]any
}

type plannedMetric struct {
	name, unit, help string
	typ              pmetric.MetricType
	temporality      pmetric.AggregationTemporality
	monotonic        bool
	points           []plannedPoint
}

type plannedPoint struct {
	resource int
	attrs    map[string]any
	bounds   []float64
	start    int // how the start time is set: 0 none, 1 tiny, 2 fixed, 3 previous timestamp
}

var (
	randomNames = []string{
		"requests", "latency", "up", "http.server.duration", "café.orders", "queue:depth",
		`we"ird\name`, "9lives", "a.b", "a_b", "requests_total", "process.cpu.time", "line\nbreak", "x_dot_y",
	}
	randomUnits  = []string{"", "", "s", "ms", "By", "1", "{request}"}
	randomHelps  = []string{"", "Help text.", `with "quotes" and \ backslash`, "two\nlines", "caf\xe9 bad"}
	randomKeys   = []string{"code", "method", "http.route", "café", `q"k`, "q.x", `back\k`, "new\nkey", "new.key", "a.b", "a_b", "a:b", "1x", "__name__", "le", "quantile", "x_dot_y", "U__x", "job"}
	randomValues = []string{"", "200", "GET", `x"y`, `back\slash`, "new\nline", "bad\xffutf8", "é", "a;b", "=,{}"}
	randomFloats = []float64{
		0, math.Copysign(0, -1), 1, -1, 0.5, 1.5, 12.25, 1e6, 1234567, 1e15, 1e-7, 3e21,
		math.NaN(), math.Inf(1), math.Inf(-1), -42, 999999, 1000001,
	}
	randomBounds = []float64{math.Inf(-1), -10, -1, math.Copysign(0, -1), 0, 0.005, 0.25, 0.5, 1, 2.5, 10, 1e6, 1234567, math.NaN(), math.Inf(1)}
)

// New plans the metrics of seed.
func New(seed uint64) *Gen {
	g := &Gen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), base: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	for i := range 1 + g.r.IntN(3) {
		res := map[string]any{"service.name": pick(g.r, []string{"svc", "shop.web", "caf\xe9"}), "service.instance.id": []string{"i-1", "i-2", "i-3"}[i]}
		if g.r.IntN(2) == 0 {
			res[pick(g.r, randomKeys)] = pick(g.r, randomValues)
		}
		g.resources = append(g.resources, res)
	}
	types := []pmetric.MetricType{pmetric.MetricTypeGauge, pmetric.MetricTypeSum, pmetric.MetricTypeHistogram, pmetric.MetricTypeExponentialHistogram, pmetric.MetricTypeSummary}
	for range 1 + g.r.IntN(8) {
		m := plannedMetric{name: pick(g.r, randomNames), unit: pick(g.r, randomUnits), help: pick(g.r, randomHelps), typ: pick(g.r, types)}
		m.temporality = pmetric.AggregationTemporalityCumulative
		if g.r.IntN(2) == 0 {
			m.temporality = pmetric.AggregationTemporalityDelta
		}
		m.monotonic = g.r.IntN(4) != 0
		for range 1 + g.r.IntN(4) {
			p := plannedPoint{resource: g.r.IntN(len(g.resources)), attrs: map[string]any{}, start: g.r.IntN(4)}
			for range g.r.IntN(4) {
				switch k := pick(g.r, randomKeys); g.r.IntN(6) {
				case 0:
					p.attrs[k] = g.r.IntN(3)
				case 1:
					p.attrs[k] = g.r.IntN(2) == 0
				default:
					p.attrs[k] = pick(g.r, randomValues)
				}
			}
			if g.r.IntN(4) == 0 {
				// Names that underscore escaping makes one label.
				p.attrs["a.b"], p.attrs["a_b"] = pick(g.r, randomValues), pick(g.r, randomValues)
			}
			for _, b := range randomBounds {
				if g.r.IntN(3) == 0 {
					p.bounds = append(p.bounds, b)
				}
			}
			if g.r.IntN(4) != 0 {
				slices.Sort(p.bounds)
			}
			m.points = append(m.points, p)
		}
		g.metrics = append(g.metrics, m)
	}
	return g
}

func pick[T any](r *rand.Rand, from []T) T { return from[r.IntN(len(from))] }

// Batch writes the planned metrics at step: points 10 s apart, and delta
// points that continue the previous step's run unless their start says not.
func (g *Gen) Batch(step int) pmetric.Metrics {
	md := pmetric.NewMetrics()
	scopes := make([]pmetric.ScopeMetrics, len(g.resources))
	for i, res := range g.resources {
		rm := md.ResourceMetrics().AppendEmpty()
		_ = rm.Resource().Attributes().FromRaw(res)
		scopes[i] = rm.ScopeMetrics().AppendEmpty()
		scopes[i].Scope().SetName("scope")
	}
	at := func(s int) pcommon.Timestamp {
		return pcommon.NewTimestampFromTime(g.base.Add(time.Duration(s) * 10 * time.Second))
	}
	for _, pm := range g.metrics {
		ms := make([]pmetric.Metric, len(g.resources))
		for _, p := range pm.points {
			m := ms[p.resource]
			if m == (pmetric.Metric{}) {
				m = scopes[p.resource].Metrics().AppendEmpty()
				m.SetName(pm.name)
				m.SetUnit(pm.unit)
				m.SetDescription(pm.help)
				switch pm.typ {
				case pmetric.MetricTypeGauge:
					m.SetEmptyGauge()
				case pmetric.MetricTypeSum:
					m.SetEmptySum().SetAggregationTemporality(pm.temporality)
					m.Sum().SetIsMonotonic(pm.monotonic)
				case pmetric.MetricTypeHistogram:
					m.SetEmptyHistogram().SetAggregationTemporality(pm.temporality)
				case pmetric.MetricTypeExponentialHistogram:
					m.SetEmptyExponentialHistogram().SetAggregationTemporality(pm.temporality)
				case pmetric.MetricTypeSummary:
					m.SetEmptySummary()
				}
				ms[p.resource] = m
			}
			ts := at(step + 1)
			var start pcommon.Timestamp
			switch p.start {
			case 1:
				start = 5 // nanoseconds after the epoch: no created time
			case 2:
				start = at(0)
			case 3:
				start = at(step)
			}
			switch pm.typ {
			case pmetric.MetricTypeGauge:
				g.number(m.Gauge().DataPoints().AppendEmpty(), p, start, ts, false)
			case pmetric.MetricTypeSum:
				g.number(m.Sum().DataPoints().AppendEmpty(), p, start, ts, true)
			case pmetric.MetricTypeHistogram:
				g.histogram(m.Histogram().DataPoints().AppendEmpty(), p, start, ts)
			case pmetric.MetricTypeExponentialHistogram:
				g.exponential(m.ExponentialHistogram().DataPoints().AppendEmpty(), p, start, ts)
			case pmetric.MetricTypeSummary:
				g.summary(m.Summary().DataPoints().AppendEmpty(), p, start, ts)
			}
		}
	}
	return md
}

func (g *Gen) number(dp pmetric.NumberDataPoint, p plannedPoint, start, ts pcommon.Timestamp, exemplars bool) {
	_ = dp.Attributes().FromRaw(p.attrs)
	dp.SetStartTimestamp(start)
	dp.SetTimestamp(ts)
	if g.r.IntN(2) == 0 {
		dp.SetIntValue(int64(g.r.IntN(3_000_000)))
	} else {
		dp.SetDoubleValue(math.Abs(pick(g.r, randomFloats)))
	}
	if exemplars {
		g.exemplars(dp.Exemplars(), 10)
	}
}

func (g *Gen) histogram(dp pmetric.HistogramDataPoint, p plannedPoint, start, ts pcommon.Timestamp) {
	_ = dp.Attributes().FromRaw(p.attrs)
	dp.SetStartTimestamp(start)
	dp.SetTimestamp(ts)
	dp.ExplicitBounds().FromRaw(p.bounds)
	var count uint64
	if g.r.IntN(8) != 0 {
		counts := make([]uint64, len(p.bounds)+1)
		for i := range counts {
			counts[i] = uint64(g.r.IntN(3))
			if g.r.IntN(10) == 0 {
				counts[i] = 1_500_000
			}
			count += counts[i]
		}
		dp.BucketCounts().FromRaw(counts)
	} else {
		count = uint64(g.r.IntN(5))
	}
	dp.SetCount(count)
	dp.SetSum(pick(g.r, randomFloats))
	top := 1.0
	for _, b := range p.bounds {
		if !math.IsInf(b, 0) && !math.IsNaN(b) {
			top = max(top, b)
		}
	}
	// Some exemplars lie above every bound: they go to the +Inf bucket.
	g.exemplars(dp.Exemplars(), top*2)
}

func (g *Gen) exponential(dp pmetric.ExponentialHistogramDataPoint, p plannedPoint, start, ts pcommon.Timestamp) {
	_ = dp.Attributes().FromRaw(p.attrs)
	dp.SetStartTimestamp(start)
	dp.SetTimestamp(ts)
	dp.SetScale(int32(g.r.IntN(8) - 2))
	count := uint64(g.r.IntN(3))
	dp.SetZeroCount(count)
	if g.r.IntN(2) == 0 {
		dp.SetZeroThreshold(1e-9)
	}
	for _, b := range []pmetric.ExponentialHistogramDataPointBuckets{dp.Positive(), dp.Negative()} {
		b.SetOffset(int32(g.r.IntN(10) - 5))
		for range g.r.IntN(5) {
			c := uint64(g.r.IntN(3))
			b.BucketCounts().Append(c)
			count += c
		}
	}
	dp.SetCount(count)
	dp.SetSum(float64(g.r.IntN(100)) / 4)
	g.exemplars(dp.Exemplars(), 10)
}

func (g *Gen) summary(dp pmetric.SummaryDataPoint, p plannedPoint, start, ts pcommon.Timestamp) {
	_ = dp.Attributes().FromRaw(p.attrs)
	dp.SetStartTimestamp(start)
	dp.SetTimestamp(ts)
	dp.SetCount(uint64(g.r.IntN(100)))
	dp.SetSum(pick(g.r, randomFloats))
	for _, q := range []float64{0, 0.5, 0.9, 0.99, 1} {
		if g.r.IntN(2) == 0 {
			qv := dp.QuantileValues().AppendEmpty()
			qv.SetQuantile(q)
			qv.SetValue(pick(g.r, randomFloats))
		}
	}
}

// exemplars appends none to three exemplars below or above top, with or
// without trace and span ids and a timestamp.
func (g *Gen) exemplars(es pmetric.ExemplarSlice, top float64) {
	for range g.r.IntN(4) {
		e := es.AppendEmpty()
		switch g.r.IntN(3) {
		case 0:
			e.SetIntValue(int64(g.r.IntN(5)))
		case 1:
			e.SetDoubleValue(top * (1 + g.r.Float64()))
		default:
			e.SetDoubleValue(g.r.Float64() * top)
		}
		if g.r.IntN(4) != 0 {
			e.SetTraceID(pcommon.TraceID{byte(g.r.IntN(256)), 1})
		}
		if g.r.IntN(3) != 0 {
			e.SetSpanID(pcommon.SpanID{byte(g.r.IntN(256)), 2})
		}
		if g.r.IntN(2) == 0 {
			e.SetTimestamp(pcommon.NewTimestampFromTime(g.base.Add(time.Duration(g.r.IntN(1e6)) * time.Millisecond)))
		}
	}
}
