package convert // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/convert"

import (
	"encoding/binary"
	"math"

	"github.com/cespare/xxhash/v2"
	"github.com/prometheus/prometheus/model/histogram"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/aggregate"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/prommodel"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
)

// aggregation is the worker's state while it aggregates a metric: the
// rule, the agent's table and the point being aggregated, which Group
// reads when the point's source is new.
type aggregation struct {
	table *aggregate.Table
	rule  *aggregate.Rule
	kind  aggregate.Kind
	// seed is the hash of everything but the point's attributes that makes
	// a source: the scope and the metric's name, type and temporality.
	seed  uint64
	attrs pcommon.Map
	// bounds and cum are the current classic histogram point's bounds and
	// cumulative counts; lastBounds remembers the bounds of the previous
	// point, which nearly always has the same.
	bounds     *store.Bounds
	cum        []uint64
	lastBounds *store.Bounds
	kept       pcommon.Map // the point attributes a group keeps
	base       []baseLabel
	digest     xxhash.Digest
}

// aggregateMetric aggregates a metric that rule takes, in place of storing
// each of its points as a series of the agent. Summaries and non-monotonic
// sums cannot be summed across agents into anything their agents meant.
func (w *worker) aggregateMetric(rule *aggregate.Rule, m pmetric.Metric, kind prommodel.Kind, name string, points int) {
	if m.Type() == pmetric.MetricTypeSummary || m.Type() == pmetric.MetricTypeSum && !m.Sum().IsMonotonic() {
		w.stats.drop(NotAggregatable, points)
		return
	}
	if !w.c.store.Write(&w.wr, name, kind, m.Description(), m.Unit(), w.c.store.Resource(aggregate.ResourceKey(rule), w.now), w.now) {
		w.conflict(name, points)
		return
	}
	defer w.wr.Close()
	ag := &w.agg
	if ag.table == nil {
		ag.table = w.c.agg.Open(w.res.ID(), w.agent, w.now)
	}
	ag.rule = rule
	var d xxhash.Digest
	d.Reset()
	_, _ = d.Write(binary.LittleEndian.AppendUint64(nil, w.scopeSeed))
	_, _ = d.WriteString(m.Name())
	_, _ = d.Write([]byte{0xff, byte(m.Type()), byte(temporality(m))})
	ag.seed = d.Sum64()
	t := ag.table
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		ag.kind = aggregate.KindGauge
		dps := m.Gauge().DataPoints()
		for i := 0; i < dps.Len(); i++ {
			dp := dps.At(i)
			if w.aggEnded(dp.Flags(), dp.Attributes()) {
				continue
			}
			w.aggregated(dp.Timestamp(), t.Gauge(&w.wr, w.sourceKey(dp.Attributes()), numberPoint(dp), w))
		}
	case pmetric.MetricTypeSum:
		ag.kind = aggregate.KindCounter
		dps := m.Sum().DataPoints()
		delta := m.Sum().AggregationTemporality() == pmetric.AggregationTemporalityDelta
		for i := 0; i < dps.Len(); i++ {
			dp := dps.At(i)
			if w.aggEnded(dp.Flags(), dp.Attributes()) {
				continue
			}
			if delta && dp.StartTimestamp() == 0 {
				w.stats.drop(Invalid, 1)
				continue
			}
			w.aggregated(dp.Timestamp(), t.Counter(&w.wr, w.sourceKey(dp.Attributes()), numberPoint(dp), delta, w))
		}
	case pmetric.MetricTypeHistogram:
		ag.kind = aggregate.KindHistogram
		dps := m.Histogram().DataPoints()
		delta := m.Histogram().AggregationTemporality() == pmetric.AggregationTemporalityDelta
		for i := 0; i < dps.Len(); i++ {
			dp := dps.At(i)
			if w.aggEnded(dp.Flags(), dp.Attributes()) {
				continue
			}
			bounds, counts := dp.ExplicitBounds(), dp.BucketCounts()
			if !bucketsMatchCount(counts, bounds.Len(), dp.Count()) || delta && dp.StartTimestamp() == 0 {
				w.stats.drop(Invalid, 1)
				continue
			}
			w.aggBounds(bounds, counts)
			p := aggregate.Hist{Start: int64(dp.StartTimestamp()), Time: int64(dp.Timestamp()), Count: dp.Count(), Sum: dp.Sum(), Bounds: ag.bounds, Cumulative: ag.cum}
			w.aggregated(dp.Timestamp(), t.Histogram(&w.wr, w.sourceKey(dp.Attributes()), p, delta, w))
		}
	case pmetric.MetricTypeExponentialHistogram:
		ag.kind = aggregate.KindNative
		ag.bounds = nil
		dps := m.ExponentialHistogram().DataPoints()
		delta := m.ExponentialHistogram().AggregationTemporality() == pmetric.AggregationTemporalityDelta
		for i := 0; i < dps.Len(); i++ {
			dp := dps.At(i)
			if w.aggEnded(dp.Flags(), dp.Attributes()) {
				continue
			}
			if !validNative(dp) || delta && dp.StartTimestamp() == 0 || math.IsNaN(dp.Sum()) {
				w.stats.drop(Invalid, 1)
				continue
			}
			p := aggregate.Native{Start: int64(dp.StartTimestamp()), Time: int64(dp.Timestamp()), H: floatNative(dp)}
			w.aggregated(dp.Timestamp(), t.Native(&w.wr, w.sourceKey(dp.Attributes()), p, delta, w))
		}
	}
}

func temporality(m pmetric.Metric) pmetric.AggregationTemporality {
	switch m.Type() {
	case pmetric.MetricTypeSum:
		return m.Sum().AggregationTemporality()
	case pmetric.MetricTypeHistogram:
		return m.Histogram().AggregationTemporality()
	case pmetric.MetricTypeExponentialHistogram:
		return m.ExponentialHistogram().AggregationTemporality()
	}
	return pmetric.AggregationTemporalityUnspecified
}

func numberPoint(dp pmetric.NumberDataPoint) aggregate.Number {
	return aggregate.Number{Start: int64(dp.StartTimestamp()), Time: int64(dp.Timestamp()), Value: numberValue(dp)}
}

// aggEnded handles a point flagged as having no value: its source ended.
// What it counted stays in its group; a gauge leaves its group.
func (w *worker) aggEnded(flags pmetric.DataPointFlags, attrs pcommon.Map) bool {
	if !flags.NoRecordedValue() {
		return false
	}
	w.agg.table.End(&w.wr, w.sourceKey(attrs), w.agg.kind)
	return true
}

// aggregated counts what became of an aggregated point.
func (w *worker) aggregated(ts pcommon.Timestamp, r aggregate.Reason) {
	switch r {
	case aggregate.Aggregated:
		w.stats.Aggregated++
		w.newest = max(w.newest, int64(ts))
	case aggregate.OutOfOrder:
		w.stats.drop(OutOfOrder, 1)
	case aggregate.Invalid:
		w.stats.drop(Invalid, 1)
	case aggregate.BoundsMismatch:
		w.stats.drop(BoundsMismatch, 1)
	case aggregate.MaxSources:
		w.stats.drop(MaxSources, 1)
	case aggregate.Overflow:
		w.stats.drop(Overflow, 1)
	case aggregate.GroupRefused:
		// Counted by Group under the store's reason.
	}
}

// sourceKey identifies the source of a point among its agent's: the seed
// of its scope and metric, and its attributes in any order (each pair
// hashed alone, the hashes added up).
func (w *worker) sourceKey(attrs pcommon.Map) uint64 {
	ag := &w.agg
	ag.attrs = attrs
	var sum uint64
	var num [8]byte
	for k, v := range attrs.All() {
		d := &ag.digest
		d.Reset()
		_, _ = d.WriteString(k)
		_, _ = d.Write([]byte{0xff, byte(v.Type())})
		switch v.Type() {
		case pcommon.ValueTypeStr:
			_, _ = d.WriteString(v.Str())
		case pcommon.ValueTypeInt:
			binary.LittleEndian.PutUint64(num[:], uint64(v.Int()))
			_, _ = d.Write(num[:])
		case pcommon.ValueTypeDouble:
			binary.LittleEndian.PutUint64(num[:], math.Float64bits(v.Double()))
			_, _ = d.Write(num[:])
		case pcommon.ValueTypeBool:
			if v.Bool() {
				num[0] = 1
			} else {
				num[0] = 0
			}
			_, _ = d.Write(num[:1])
		default:
			_, _ = d.WriteString(v.AsString())
		}
		sum += d.Sum64()
	}
	h := (ag.seed ^ sum) * 0x9e3779b97f4a7c15
	return h ^ h>>29
}

// aggBounds sets the current histogram point's bounds and cumulative
// counts; the bounds of the previous point are checked first.
func (w *worker) aggBounds(bounds pcommon.Float64Slice, counts pcommon.UInt64Slice) {
	ag := &w.agg
	if counts.Len() == 0 {
		ag.bounds, ag.cum = nil, ag.cum[:0]
		return
	}
	if ag.lastBounds == nil || !boundsEqual(ag.lastBounds, bounds) {
		ag.lastBounds = w.c.bounds.get(bounds)
	}
	h := store.Histogram{Bounds: ag.lastBounds, Cumulative: ag.cum[:0]}
	if cap(h.Cumulative) < len(ag.lastBounds.Values) {
		h.Cumulative = make([]uint64, len(ag.lastBounds.Values))
	}
	h.Cumulative = h.Cumulative[:len(ag.lastBounds.Values)]
	w.c.bounds.fill(&h, bounds, counts)
	ag.bounds, ag.cum = ag.lastBounds, h.Cumulative
}

// floatNative is an exponential histogram point in Prometheus' float layout.
func floatNative(dp pmetric.ExponentialHistogramDataPoint) *histogram.FloatHistogram {
	schema := min(dp.Scale(), maxSchema)
	down := dp.Scale() - schema
	zt := dp.ZeroThreshold()
	if zt == 0 {
		zt = defaultZeroThreshold
	}
	n := store.NativeHistogram{
		Schema: schema, ZeroThreshold: zt, ZeroCount: dp.ZeroCount(),
		Positive: fromOTLP(dp.Positive(), down), Negative: fromOTLP(dp.Negative(), down),
	}
	return aggregate.Float(&n, dp.Count(), dp.Sum())
}

// Group is the group of the point being aggregated (aggregate.Grouper):
// the labels of its series are the point's as the rule keeps them, its
// agent's job and the resource attributes the rule keeps, without an
// instance; they are written as every other series' are.
func (w *worker) Group() *aggregate.Group {
	ag := &w.agg
	if ag.kept == (pcommon.Map{}) {
		ag.kept = pcommon.NewMap()
	}
	ag.kept.Clear()
	for k, v := range ag.attrs.All() {
		if ag.rule.Keeps(k) {
			v.CopyTo(ag.kept.PutEmpty(k))
		}
	}
	base, baseSig := w.base, w.baseSig
	w.base, w.baseSig = w.aggregateBase()
	w.last = nil
	ok := w.labels(w.wr.Family(), ag.kept)
	w.base, w.baseSig, w.last = base, baseSig, nil
	if !ok {
		w.stats.drop(InvalidName, 1)
		return nil
	}
	g, outcome, mismatch := w.c.agg.Group(&w.wr, ag.rule, ag.kind, ag.bounds, w.pointLabels(), w.now)
	switch {
	case mismatch:
		w.stats.drop(BoundsMismatch, 1)
	case g == nil:
		w.refused(outcome)
	case outcome == store.Created:
		w.stats.Created++
	}
	return g
}

// aggregateBase is the base labels of a group of the current rule: the
// constant labels, and of the agent's resource and scope labels the ones
// the rule keeps — never instance. Its values go into the arena.
func (w *worker) aggregateBase() ([]baseLabel, uint64) {
	ag := &w.agg
	r := ag.rule
	base := ag.base[:0]
	attrs := w.resAttrs
	if name, ok := attrs.Get(serviceName); ok && r.Keeps(aggregate.ServiceName) {
		start := len(w.arena)
		if ns, ok := attrs.Get(serviceNamespace); ok && r.Keeps(aggregate.ServiceNamespace) {
			w.arena = append(appendRaw(w.arena, ns), '/')
		}
		w.arena = validUTF8(appendRaw(w.arena, name), start)
		job := w.arena[start:]
		w.arena = w.arena[:start]
		base = append(base, baseLabel{name: "job", value: w.arenaEscaped(append([]byte(nil), job...))})
	}
	if r.By() {
		for k, v := range attrs.All() {
			if !isServiceAttribute(k) && r.Keeps(k) {
				if name, err := w.c.names.label(k); err == nil {
					base = append(base, baseLabel{name: name, override: k, value: w.arenaValue(v)})
				}
			}
		}
	} else {
		for _, b := range w.resourceBase {
			if b.override != "" && r.Keeps(b.override) {
				base = append(base, b)
			}
		}
	}
	if !w.c.opts.WithoutScopeInfo {
		scope := w.scopeMetrics.Scope()
		for k, v := range scope.Attributes().All() {
			if k == "name" || k == "version" || k == "schema_url" || !r.Keeps("otel.scope."+k) {
				continue
			}
			if name, err := w.c.names.label("otel_scope_" + k); err == nil {
				base = append(base, baseLabel{name: name, value: w.arenaValue(v)})
			}
		}
		for _, l := range [...]struct{ key, name, value string }{
			{aggregate.ScopeName, "otel_scope_name", scope.Name()},
			{aggregate.ScopeVersion, "otel_scope_version", scope.Version()},
			{aggregate.ScopeSchemaURL, "otel_scope_schema_url", w.scopeMetrics.SchemaUrl()},
		} {
			if r.Keeps(l.key) {
				base = append(base, baseLabel{name: l.name, value: w.arenaEscaped([]byte(l.value))})
			}
		}
	}
	base = append(base, w.c.constLabels...)
	ag.base = base
	return base, baseSignature(base)
}
