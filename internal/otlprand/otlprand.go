// Package otlprand builds random OTLP metric batches that reach into the
// corners of the agentprometheus exporter: every metric type, cumulative and
// delta, exemplars (above every bound too), exponential histograms with gaps,
// negative and zero buckets, empty, escaped and invalid UTF-8 label values,
// attribute and metric names that only UTF-8 exposition keeps as they are.
// It serves the exporter's tests and test/promparse (a module of its own,
// which cannot import the exporter's internal packages).
package otlprand // import "github.com/statsgate/statsgate/internal/otlprand"

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// Metrics returns a batch of 1–3 agents with points stamped at, start times
// (where a point has one) at start. The same r state gives the same batch, so
// two calls with equally seeded generators and a later at send the same
// series again: cumulative points move on, delta points accumulate.
func Metrics(r *rand.Rand, start, at time.Time) pmetric.Metrics {
	g := gen{r: r, start: pcommon.NewTimestampFromTime(start), at: pcommon.NewTimestampFromTime(at)}
	md := pmetric.NewMetrics()
	for a := range 1 + r.IntN(3) {
		rm := md.ResourceMetrics().AppendEmpty()
		attrs := rm.Resource().Attributes()
		attrs.PutStr("service.name", pick(r, "api", "caf\u00e9", "a.b"))
		attrs.PutStr("service.namespace", "shop")
		attrs.PutStr("service.instance.id", fmt.Sprint("i-", a))
		for range r.IntN(3) {
			g.putAttr(attrs)
		}
		sm := rm.ScopeMetrics().AppendEmpty()
		sm.Scope().SetName(pick(r, "lib", "go.opentelemetry.io/otel"))
		sm.Scope().SetVersion("1.0")
		for range 1 + r.IntN(8) {
			g.metric(sm.Metrics().AppendEmpty())
		}
	}
	return md
}

type gen struct {
	r         *rand.Rand
	start, at pcommon.Timestamp
}

func pick[T any](r *rand.Rand, choices ...T) T { return choices[r.IntN(len(choices))] }

// Names that every strategy keeps, that underscore escaping changes, and
// that collide once escaped.
var (
	metricNames = []string{"requests", "queue_depth", "http.server.duration", "caf\u00e9.orders", "a.b", "a_b", "le", "bytes"}
	attrKeys    = []string{"code", "method", "route", "k.dotted", "\u043a\u043b\u044e\u0447", `q"uote`, `back\slash`, "le", "quantile", "__name__", "a:b", "empty"}
	attrValues  = []string{"", "x", "200", `a"b`, `back\slash\`, "new\nline", "\u00e9t\u00e9", "\xff\xfe", "/api/v1/items", "1.5"}
	units       = []string{"", "s", "By", "1", "{request}"}
)

func (g *gen) putAttr(m pcommon.Map) {
	key := pick(g.r, attrKeys...)
	switch g.r.IntN(4) {
	case 0:
		m.PutInt(key, g.r.Int64N(1000)-500)
	case 1:
		m.PutBool(key, g.r.IntN(2) == 0)
	default:
		m.PutStr(key, pick(g.r, attrValues...))
	}
}

func (g *gen) attrs(m pcommon.Map) {
	for range g.r.IntN(4) {
		g.putAttr(m)
	}
}

func (g *gen) value() float64 {
	switch g.r.IntN(10) {
	case 0:
		return math.NaN()
	case 1:
		return math.Inf(pick(g.r, 1, -1))
	case 2:
		return 0
	case 3:
		return float64(g.r.Int64N(1 << 40))
	default:
		return g.r.NormFloat64() * 1000
	}
}

func (g *gen) temporality() pmetric.AggregationTemporality {
	return pick(g.r, pmetric.AggregationTemporalityCumulative, pmetric.AggregationTemporalityDelta)
}

func (g *gen) metric(m pmetric.Metric) {
	name := pick(g.r, metricNames...)
	if g.r.IntN(3) > 0 {
		// Mostly names of their own; the bare ones collide across types.
		name += fmt.Sprint("_", g.r.IntN(20))
	}
	m.SetName(name)
	m.SetUnit(pick(g.r, units...))
	m.SetDescription(pick(g.r, "", "what it counts", "a \\ backslash\nand a newline"))
	points := 1 + g.r.IntN(4)
	switch g.r.IntN(5) {
	case 0:
		dps := m.SetEmptyGauge().DataPoints()
		for range points {
			g.number(dps.AppendEmpty(), false)
		}
	case 1:
		s := m.SetEmptySum()
		s.SetIsMonotonic(g.r.IntN(4) > 0)
		s.SetAggregationTemporality(g.temporality())
		for range points {
			g.number(s.DataPoints().AppendEmpty(), s.IsMonotonic())
		}
	case 2:
		dps := m.SetEmptySummary().DataPoints()
		for range points {
			g.summary(dps.AppendEmpty())
		}
	case 3:
		h := m.SetEmptyHistogram()
		h.SetAggregationTemporality(g.temporality())
		for range points {
			g.histogram(h.DataPoints().AppendEmpty())
		}
	default:
		h := m.SetEmptyExponentialHistogram()
		h.SetAggregationTemporality(g.temporality())
		for range points {
			g.exponential(h.DataPoints().AppendEmpty())
		}
	}
}

// stamp sets the point's times: a start time on most points.
func (g *gen) stamp(start interface{ SetStartTimestamp(pcommon.Timestamp) }, at interface{ SetTimestamp(pcommon.Timestamp) }) {
	if g.r.IntN(4) > 0 {
		start.SetStartTimestamp(g.start)
	}
	at.SetTimestamp(g.at)
}

func (g *gen) number(dp pmetric.NumberDataPoint, monotonic bool) {
	g.attrs(dp.Attributes())
	g.stamp(dp, dp)
	if g.r.IntN(2) == 0 {
		dp.SetIntValue(g.r.Int64N(1 << 20))
	} else if monotonic {
		dp.SetDoubleValue(math.Abs(g.r.NormFloat64()) * 100)
	} else {
		dp.SetDoubleValue(g.value())
	}
	g.exemplars(dp.Exemplars(), nil)
}

func (g *gen) exemplars(es pmetric.ExemplarSlice, bounds []float64) {
	for range g.r.IntN(4) {
		e := es.AppendEmpty()
		v := g.r.NormFloat64() * 10
		if len(bounds) > 0 && g.r.IntN(3) == 0 {
			v = bounds[len(bounds)-1] + 1 + g.r.Float64() // above every bound
		}
		if g.r.IntN(5) == 0 {
			e.SetIntValue(int64(v))
		} else {
			e.SetDoubleValue(v)
		}
		if g.r.IntN(4) > 0 {
			e.SetTimestamp(g.at)
		}
		if g.r.IntN(4) > 0 {
			e.SetTraceID(pcommon.TraceID{byte(g.r.IntN(256)), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
			e.SetSpanID(pcommon.SpanID{byte(g.r.IntN(256)), 1, 2, 3, 4, 5, 6, 7})
		}
	}
}

func (g *gen) summary(dp pmetric.SummaryDataPoint) {
	g.attrs(dp.Attributes())
	g.stamp(dp, dp)
	dp.SetCount(uint64(g.r.IntN(1000)))
	dp.SetSum(g.r.Float64() * 100)
	for _, q := range []float64{0, 0.5, 0.9, 0.99, 1}[:g.r.IntN(6)] {
		qv := dp.QuantileValues().AppendEmpty()
		qv.SetQuantile(q)
		qv.SetValue(g.value())
	}
}

func (g *gen) histogram(dp pmetric.HistogramDataPoint) {
	g.attrs(dp.Attributes())
	g.stamp(dp, dp)
	bounds := make([]float64, 0, 6)
	for range g.r.IntN(6) {
		bounds = append(bounds, math.Round(g.r.NormFloat64()*100)/10)
	}
	slices.Sort(bounds)
	bounds = slices.Compact(bounds)
	counts := make([]uint64, len(bounds)+1)
	var total uint64
	for i := range counts {
		counts[i] = uint64(g.r.IntN(3) * g.r.IntN(50))
		total += counts[i]
	}
	dp.ExplicitBounds().FromRaw(bounds)
	dp.BucketCounts().FromRaw(counts)
	dp.SetCount(total)
	if g.r.IntN(5) > 0 {
		dp.SetSum(g.r.Float64() * float64(total))
	}
	g.exemplars(dp.Exemplars(), bounds)
}

func (g *gen) exponential(dp pmetric.ExponentialHistogramDataPoint) {
	g.attrs(dp.Attributes())
	g.stamp(dp, dp)
	dp.SetScale(int32(g.r.IntN(14) - 4)) // beyond 8 too: downscaled
	var total uint64
	buckets := func(b pmetric.ExponentialHistogramDataPointBuckets) {
		b.SetOffset(int32(g.r.IntN(40) - 20))
		counts := make([]uint64, g.r.IntN(8))
		for i := range counts {
			if g.r.IntN(3) > 0 { // leave gaps
				counts[i] = uint64(1 + g.r.IntN(20))
				total += counts[i]
			}
		}
		b.BucketCounts().FromRaw(counts)
	}
	buckets(dp.Positive())
	if g.r.IntN(2) == 0 {
		buckets(dp.Negative())
	}
	if g.r.IntN(2) == 0 {
		dp.SetZeroCount(uint64(g.r.IntN(5)))
		total += dp.ZeroCount()
	}
	if g.r.IntN(3) == 0 {
		dp.SetZeroThreshold(1e-6)
	}
	dp.SetCount(total)
	if g.r.IntN(5) > 0 {
		dp.SetSum(g.r.NormFloat64() * float64(total))
	}
	g.exemplars(dp.Exemplars(), nil)
}
