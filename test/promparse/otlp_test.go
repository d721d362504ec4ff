package promparse

import (
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/otlptranslator"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter"
)

// This file builds, from the OTLP a test sent and nothing of the exporter,
// the series every scrape must show: names and label names as otlptranslator
// translates them and prometheus/common/model escapes them for a scraper,
// values as OTLP carries them, and the exporter's documented rules where
// Prometheus leaves a choice (README: Names and labels, the bad-input table).
// Where the outcome depends on something else — a type conflict, names that
// another family takes — the family is left out of the expectation, not
// guessed.

// kind is a family's type in the exposition.
type kind int

const (
	kindGauge kind = iota
	kindCounter
	kindHistogram // classic and exponential alike: one family holds both
	kindSummary
)

// label is one label of a series: the attribute key it comes from (which
// orders the values of names that coincide) and its name as translated.
type label struct{ key, name, value string }

// classic is an explicit-bucket histogram's buckets as the exposition holds
// them: distinct bounds in order, cumulative counts.
type classic struct {
	bounds []float64
	cum    []uint64
}

// wantSeries is the state of one series after the points sent.
type wantSeries struct {
	family string
	kind   kind
	labels []label // point attributes, then the resource's and scope's labels
	// resource is the job and instance of its resource, which has a
	// target_info while it holds series.
	resource string
	// ts is the latest point's, in nanoseconds.
	ts        int64
	delta     bool // its points are deltas (a mix is unpredictable)
	value     float64
	count     uint64
	sum       float64
	buckets   *classic // nil without bucket counts
	rawBounds []float64
	native    *native
	quantiles [][2]float64
	exemplars []exemplarValue // of the latest point
	bad       bool            // its outcome is not predicted
}

// wantTarget is a target_info series.
type wantTarget struct {
	labels []label
	bad    bool
}

// otlpWant is what a scrape must hold of the OTLP sent.
type otlpWant struct {
	series  map[string]*wantSeries // by family and translated labels
	order   []string
	targets map[string]*wantTarget // by job and instance
	// badFamilies are the translated family names left out, and why.
	badFamilies map[string]string
	// dropped are the families the exporter drops, an earlier family having
	// taken their names (complete only).
	dropped map[string]bool
	// complete says that the exposition holds nothing else.
	complete bool
	// nativeExemplars says that the exemplars of native histograms are
	// predicted: Prometheus' protobuf parser reads them whole only for the
	// first native histogram of a family (see expected).
	nativeExemplars bool
}

// namers are otlptranslator's namers for a translation_strategy, as contrib's
// prometheusexporter configures them (label names keep repeated
// underscores while its PermissiveLabelSanitization gate is off).
func namers(strategy agentprometheusexporter.TranslationStrategy) (otlptranslator.MetricNamer, otlptranslator.LabelNamer) {
	var suffixes, utf8Allowed bool
	switch strategy {
	case agentprometheusexporter.UnderscoreEscapingWithSuffixes:
		suffixes = true
	case agentprometheusexporter.NoUTF8EscapingWithSuffixes:
		suffixes, utf8Allowed = true, true
	case agentprometheusexporter.NoTranslation:
		utf8Allowed = true
	}
	return otlptranslator.MetricNamer{WithMetricSuffixes: suffixes, UTF8Allowed: utf8Allowed},
		otlptranslator.LabelNamer{UTF8Allowed: utf8Allowed, PreserveMultipleUnderscores: true}
}

// expectOTLP builds the expectation of batches sent in order to an
// exporter with strategy. complete states a batch made for it (fixed_test.go)
// whole: a family whose type or names an earlier family took is dropped, as
// the README states (the bad-input table), rather than left out, and the
// exemplars of native histograms are predicted.
func expectOTLP(strategy agentprometheusexporter.TranslationStrategy, complete bool, batches ...pmetric.Metrics) *otlpWant {
	metricNamer, labelNamer := namers(strategy)
	w := &otlpWant{
		series: map[string]*wantSeries{}, targets: map[string]*wantTarget{}, badFamilies: map[string]string{},
		dropped: map[string]bool{}, complete: complete, nativeExemplars: complete,
	}
	// labelName translates an attribute key as the exporter names labels:
	// otlptranslator's name; __name__, which no parser takes in a label
	// set, as exported___name__, and le and quantile where the exposition
	// writes its own, as exported_le and exported_quantile (Prometheus'
	// renaming of clashing labels); a ':' as '_' in UTF-8 names (README: the
	// bad-input table).
	labelName := func(k string, fk kind) (string, bool) {
		name, err := labelNamer.Build(k)
		if err != nil {
			return "", false
		}
		if labelNamer.UTF8Allowed {
			name = strings.ReplaceAll(name, ":", "_")
		}
		if name == model.MetricNameLabel || name == model.BucketLabel && fk == kindHistogram || name == model.QuantileLabel && fk == kindSummary {
			name = "exported_" + name
		}
		return name, true
	}
	families := map[string]kind{} // translated name → kind
	var familyOrder []string
	for _, md := range batches {
		rms := md.ResourceMetrics()
		for i := range rms.Len() {
			rm := rms.At(i)
			res := rm.Resource().Attributes()
			var base []label
			job, hasJob := resourceJob(res)
			instance, hasInstance := res.Get("service.instance.id")
			if hasJob {
				base = append(base, label{name: model.JobLabel, value: job})
			}
			if hasInstance {
				base = append(base, label{name: model.InstanceLabel, value: validUTF8(instance.AsString())})
			}
			var resource string
			if hasJob && hasInstance {
				resource = w.target(res, base, labelNamer)
			}
			sms := rm.ScopeMetrics()
			for j := range sms.Len() {
				sm := sms.At(j)
				scopeBase := slices.Clone(base)
				scope := sm.Scope()
				for k, v := range scope.Attributes().All() {
					if k == "name" || k == "version" || k == "schema_url" {
						continue
					}
					if name, err := labelNamer.Build("otel_scope_" + k); err == nil {
						scopeBase = append(scopeBase, label{name: name, value: validUTF8(v.AsString())})
					}
				}
				scopeBase = append(scopeBase,
					label{name: "otel_scope_name", value: validUTF8(scope.Name())},
					label{name: "otel_scope_version", value: validUTF8(scope.Version())},
					label{name: "otel_scope_schema_url", value: validUTF8(sm.SchemaUrl())})
				ms := sm.Metrics()
				for k := range ms.Len() {
					w.metric(ms.At(k), resource, scopeBase, metricNamer, labelName, families, &familyOrder)
				}
			}
		}
	}
	// A family whose names another family takes, in any escaping, keeps
	// them or loses them by which came first: dropped when complete, else
	// left out, both.
	claims := map[string]string{"target_info": ""}
	for _, name := range familyOrder {
		var taken []string
		for _, c := range claimedNames(name) {
			if other, ok := claims[c]; ok && other != name {
				taken = append(taken, c)
			}
		}
		if len(taken) > 0 && complete {
			w.dropped[name] = true
			continue
		}
		for _, c := range taken {
			why := fmt.Sprintf("%s is a name of %q too", c, claims[c])
			w.badFamilies[name] = why
			if claims[c] != "" {
				w.badFamilies[claims[c]] = why
			}
		}
		for _, c := range claimedNames(name) {
			if _, ok := claims[c]; !ok {
				claims[c] = name
			}
		}
	}
	return w
}

// claimedNames are the sample and family names a family may write in any
// escaping scheme and format.
func claimedNames(name string) []string {
	var out []string
	for _, s := range allSchemes {
		e := escapeName(name, s)
		out = append(out, e, e+"_bucket", e+"_sum", e+"_count", e+"_created", e+"_total", strings.TrimSuffix(e, "_total"))
	}
	return out
}

// escapeName is a metric or label name as expfmt escapes it for a scraper
// (model.EscapeMetricFamily's rule): a legacy name as it is, any other by
// model.EscapeName.
func escapeName(name string, scheme model.EscapingScheme) string {
	if scheme == model.NoEscaping || model.LegacyValidation.IsValidMetricName(name) {
		return name
	}
	return model.EscapeName(name, scheme)
}

// validUTF8 is a label value as every format carries it: invalid UTF-8
// replaced by U+FFFD (README: the bad-input table).
func validUTF8(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }

// resourceJob is the job of a resource: service.namespace/service.name, or
// service.name.
func resourceJob(res pcommon.Map) (string, bool) {
	name, ok := res.Get("service.name")
	if !ok {
		return "", false
	}
	job := name.AsString()
	if ns, ok := res.Get("service.namespace"); ok {
		job = ns.AsString() + "/" + job
	}
	return validUTF8(job), true
}

// target records the target_info of a resource: its attributes other than
// those of job and instance, and job and instance. It returns the
// resource's key.
func (w *otlpWant) target(res pcommon.Map, base []label, labelNamer otlptranslator.LabelNamer) string {
	t := &wantTarget{labels: slices.Clone(base)}
	names := map[string]bool{}
	for k, v := range res.All() {
		if k == "service.name" || k == "service.namespace" || k == "service.instance.id" {
			continue
		}
		name, err := labelNamer.Build(k)
		switch {
		case err != nil, name == model.JobLabel, name == model.InstanceLabel:
			// Dropped: not predicted.
			t.bad = true
			continue
		case labelNamer.UTF8Allowed:
			name = strings.ReplaceAll(name, ":", "_")
		}
		if name == model.MetricNameLabel {
			name = "exported___name__"
		}
		for n := range names {
			if escapeLabelsCollide(n, name) {
				t.bad = true // joined in attribute order: not predicted
			}
		}
		names[name] = true
		t.labels = append(t.labels, label{key: k, name: name, value: validUTF8(v.AsString())})
	}
	key := base[0].value + "\xff" + base[1].value
	if old, ok := w.targets[key]; ok && !slices.Equal(old.labels, t.labels) {
		t.bad = true
	}
	w.targets[key] = t
	return key
}

// metric records the points of one metric.
func (w *otlpWant) metric(m pmetric.Metric, resource string, base []label, metricNamer otlptranslator.MetricNamer,
	labelName func(string, kind) (string, bool), families map[string]kind, familyOrder *[]string,
) {
	var fk kind
	var typ otlptranslator.MetricType
	temporality := pmetric.AggregationTemporalityCumulative
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		fk, typ = kindGauge, otlptranslator.MetricTypeGauge
	case pmetric.MetricTypeSum:
		temporality = m.Sum().AggregationTemporality()
		if m.Sum().IsMonotonic() {
			fk, typ = kindCounter, otlptranslator.MetricTypeMonotonicCounter
		} else {
			fk, typ = kindGauge, otlptranslator.MetricTypeNonMonotonicCounter
			if temporality == pmetric.AggregationTemporalityDelta {
				return // dropped: a gauge cannot accumulate (unsupported_temporality)
			}
		}
	case pmetric.MetricTypeHistogram:
		fk, typ = kindHistogram, otlptranslator.MetricTypeHistogram
		temporality = m.Histogram().AggregationTemporality()
	case pmetric.MetricTypeExponentialHistogram:
		fk, typ = kindHistogram, otlptranslator.MetricTypeExponentialHistogram
		temporality = m.ExponentialHistogram().AggregationTemporality()
	case pmetric.MetricTypeSummary:
		fk, typ = kindSummary, otlptranslator.MetricTypeSummary
	default:
		return
	}
	if temporality == pmetric.AggregationTemporalityUnspecified {
		return // dropped (unsupported_temporality)
	}
	delta := temporality == pmetric.AggregationTemporalityDelta
	name, err := metricNamer.Build(otlptranslator.Metric{Name: m.Name(), Unit: m.Unit(), Type: typ})
	if err != nil || name == "" {
		return // dropped (invalid_name)
	}
	if k, ok := families[name]; ok && k != fk {
		if w.complete {
			return // the first type is kept, points of another dropped
		}
		w.badFamilies[name] = "points of two types"
	} else if !ok {
		families[name] = fk
		*familyOrder = append(*familyOrder, name)
	}
	// point finds the series of a point's attributes; nil when its labels
	// are not predicted, which leaves the family out.
	point := func(attrs pcommon.Map) *wantSeries {
		ls := make([]label, 0, attrs.Len()+len(base))
		for k, v := range attrs.All() {
			n, ok := labelName(k, fk)
			if !ok {
				w.badFamilies[name] = fmt.Sprintf("attribute %q is no label name", k)
				return nil
			}
			ls = append(ls, label{key: k, name: n, value: validUTF8(v.AsString())})
		}
		slices.SortFunc(ls, func(a, b label) int { return strings.Compare(a.key, b.key) })
		// An attribute named like a resource or scope label is one label
		// with it, the attribute's value first (README: the bad-input
		// table); one that only an escaping names alike is left out.
		for _, b := range base {
			for _, l := range ls {
				if l.name != b.name && escapeLabelsCollide(l.name, b.name) {
					w.badFamilies[name] = fmt.Sprintf("label %q escapes like %q", l.name, b.name)
					return nil
				}
			}
		}
		ls = append(ls, base...)
		if !labelsPredictable(ls) {
			w.badFamilies[name] = "joined labels with empty values, or joined by dots or values escaping"
			return nil
		}
		id := name + "\xff" + seriesID(ls)
		s := w.series[id]
		if s == nil {
			s = &wantSeries{family: name, kind: fk, labels: ls, resource: resource, ts: math.MinInt64}
			w.series[id] = s
			w.order = append(w.order, id)
		}
		if s.ts != math.MinInt64 && s.delta != delta {
			s.bad = true
		}
		s.delta = delta
		return s
	}
	switch m.Type() {
	case pmetric.MetricTypeGauge, pmetric.MetricTypeSum:
		var dps pmetric.NumberDataPointSlice
		if m.Type() == pmetric.MetricTypeGauge {
			dps = m.Gauge().DataPoints()
		} else {
			dps = m.Sum().DataPoints()
		}
		for i := range dps.Len() {
			dp := dps.At(i)
			s := point(dp.Attributes())
			if s == nil {
				continue
			}
			v := dp.DoubleValue()
			if dp.ValueType() == pmetric.NumberDataPointValueTypeInt {
				v = float64(dp.IntValue())
			}
			if fk == kindCounter && !(v >= 0) {
				s.bad = true // dropped (invalid): the series keeps what it had
				continue
			}
			ts, start := int64(dp.Timestamp()), int64(dp.StartTimestamp())
			if !s.accepts(ts, start, delta) {
				continue
			}
			if delta && start == s.ts {
				v += s.value // the run goes on
			}
			s.value, s.ts = v, ts
			if fk == kindCounter {
				s.exemplars = exemplarsOf(dp.Exemplars())
			}
		}
	case pmetric.MetricTypeHistogram:
		dps := m.Histogram().DataPoints()
		for i := range dps.Len() {
			dp := dps.At(i)
			s := point(dp.Attributes())
			if s == nil {
				continue
			}
			counts := dp.BucketCounts().AsRaw()
			var total uint64
			for _, c := range counts {
				total += c
			}
			if len(counts) != 0 && (len(counts) != dp.ExplicitBounds().Len()+1 || total != dp.Count()) {
				s.bad = true // dropped (invalid)
				continue
			}
			ts, start := int64(dp.Timestamp()), int64(dp.StartTimestamp())
			if !s.accepts(ts, start, delta) {
				continue
			}
			raw := dp.ExplicitBounds().AsRaw()
			var b *classic
			if len(counts) > 0 {
				b = classicOf(raw, counts)
			}
			if delta && start == s.ts && s.native == nil {
				// A delta continues only onto the same layout, which the
				// model knows for bounds in order.
				switch {
				case !ordered(raw) || !ordered(s.rawBounds):
					s.bad = true
				case (b == nil) == (s.buckets == nil) && (b == nil || slices.Equal(b.bounds, s.buckets.bounds)):
					if b != nil {
						for i := range b.cum {
							b.cum[i] += s.buckets.cum[i]
						}
					}
					s.count += dp.Count()
					s.sum += dp.Sum()
					s.buckets, s.rawBounds, s.ts = b, raw, ts
					s.exemplars = exemplarsOf(dp.Exemplars())
					continue
				}
			}
			s.native, s.buckets, s.rawBounds = nil, b, raw
			s.count, s.sum, s.ts = dp.Count(), dp.Sum(), ts
			s.exemplars = exemplarsOf(dp.Exemplars())
		}
	case pmetric.MetricTypeExponentialHistogram:
		dps := m.ExponentialHistogram().DataPoints()
		for i := range dps.Len() {
			dp := dps.At(i)
			s := point(dp.Attributes())
			if s == nil {
				continue
			}
			n, ok := nativeOfOTLP(dp)
			if !ok {
				s.bad = true // dropped (invalid), or downscaled: not predicted
				continue
			}
			ts, start := int64(dp.Timestamp()), int64(dp.StartTimestamp())
			if !s.accepts(ts, start, delta) {
				continue
			}
			if delta && start == s.ts && s.native != nil && s.native.zeroThreshold == n.zeroThreshold {
				n = mergeNatives(s.native, n)
				s.count += dp.Count()
				s.sum += dp.Sum()
				s.native, s.ts = n, ts
				s.exemplars = exemplarsOf(dp.Exemplars())
				continue
			}
			s.native, s.buckets, s.rawBounds = n, nil, nil
			s.count, s.sum, s.ts = dp.Count(), dp.Sum(), ts
			s.exemplars = exemplarsOf(dp.Exemplars())
		}
	case pmetric.MetricTypeSummary:
		dps := m.Summary().DataPoints()
		for i := range dps.Len() {
			dp := dps.At(i)
			s := point(dp.Attributes())
			if s == nil {
				continue
			}
			ts := int64(dp.Timestamp())
			if !s.accepts(ts, int64(dp.StartTimestamp()), false) {
				continue
			}
			s.quantiles = s.quantiles[:0]
			for _, q := range dp.QuantileValues().All() {
				s.quantiles = append(s.quantiles, [2]float64{q.Quantile(), q.Value()})
			}
			s.count, s.sum, s.ts = dp.Count(), dp.Sum(), ts
		}
	}
}

// accepts reports whether a point at ts, started at start, is stored: not
// older than the stored one, a delta not as old as it (a retried batch)
// and with a start time (README: the bad-input table).
func (s *wantSeries) accepts(ts, start int64, delta bool) bool {
	if delta && start == 0 {
		return false
	}
	if s.ts == math.MinInt64 {
		return true
	}
	return ts > s.ts || !delta && ts == s.ts
}

// escapeLabelsCollide reports whether two label names become one in some
// escaping scheme.
func escapeLabelsCollide(a, b string) bool {
	for _, s := range allSchemes {
		if escapeName(a, s) == escapeName(b, s) {
			return true
		}
	}
	return false
}

// labelsPredictable reports whether a label set is written as
// renderLabels says in every scheme. Names that coincide as translated are
// one label (README: attribute names that sanitise alike); names that only
// an escaping makes coincide are one label with underscores (README:
// Formats, name escaping), in no other scheme. An empty value among joined ones is
// left to the exporter.
func labelsPredictable(ls []label) bool {
	for _, s := range allSchemes {
		translated := map[string]string{}
		members := map[string]int{}
		empty := map[string]bool{}
		for _, l := range ls {
			n := escapeName(l.name, s)
			if t, ok := translated[n]; ok && t != l.name && s != model.UnderscoreEscaping {
				return false
			}
			translated[n] = l.name
			members[n]++
			empty[n] = empty[n] || l.value == ""
		}
		for n, c := range members {
			if c > 1 && empty[n] {
				return false
			}
		}
	}
	return true
}

// renderLabels is a label set as a scrape in scheme writes it: names
// escaped, the values of names that coincide joined with ';' in the order
// of their attribute keys (as Prometheus' OTLP translator joins names that
// sanitise alike), empty values left out (an empty label is an absent one).
func renderLabels(ls []label, scheme model.EscapingScheme) [][2]string {
	var out [][2]string
	at := map[string]int{}
	for _, l := range ls {
		n := escapeName(l.name, scheme)
		if i, ok := at[n]; ok {
			out[i][1] += ";" + l.value
			continue
		}
		if l.value == "" {
			continue
		}
		at[n] = len(out)
		out = append(out, [2]string{n, l.value})
	}
	return out
}

func seriesID(ls []label) string {
	var b strings.Builder
	for _, p := range renderLabels(ls, model.NoEscaping) {
		b.WriteString(p[0] + "\xff" + p[1] + "\xfe")
	}
	return b.String()
}

// ordered reports whether explicit bounds are in strictly rising order,
// NaN-free, with +Inf last if at all.
func ordered(bounds []float64) bool {
	for i, b := range bounds {
		if math.IsNaN(b) || math.IsInf(b, 1) && i != len(bounds)-1 || i > 0 && !(bounds[i-1] < b) {
			return false
		}
	}
	return true
}

// classicOf is the buckets of an explicit-bucket histogram point as the
// README's bad-input table states them: bounds sorted and distinct, each
// with the count at its first position, NaN and +Inf left out (their
// counts are in the +Inf bucket, which is the count).
func classicOf(raw []float64, counts []uint64) *classic {
	first := map[float64]int{}
	var bounds []float64
	for i, b := range raw {
		if math.IsNaN(b) || math.IsInf(b, 1) {
			continue
		}
		if _, ok := first[b]; !ok { // -0 and 0 are one bound
			first[b] = i
			bounds = append(bounds, b)
		}
	}
	slices.Sort(bounds)
	c := &classic{bounds: bounds, cum: make([]uint64, len(bounds))}
	var cum uint64
	for i, b := range bounds {
		cum += counts[first[b]]
		c.cum[i] = cum
	}
	return c
}

// nativeOfOTLP is an exponential histogram point as a native histogram:
// its scale as the schema (scales Prometheus supports only), its zero
// threshold or, without one, the default of Prometheus' OTLP translator
// (1e-128), bucket i of OTLP as Prometheus' i+1. ok is false for what the
// model does not predict: scales Prometheus cannot take, buckets that do not
// add up to the count.
func nativeOfOTLP(dp pmetric.ExponentialHistogramDataPoint) (*native, bool) {
	if dp.Scale() < -4 || dp.Scale() > 8 {
		return nil, false
	}
	zt := dp.ZeroThreshold()
	if zt == 0 {
		zt = 1e-128
	}
	n := &native{schema: dp.Scale(), zeroThreshold: zt, zeroCount: dp.ZeroCount(), pos: map[int32]uint64{}, neg: map[int32]uint64{}}
	total := dp.ZeroCount()
	for _, side := range []struct {
		b pmetric.ExponentialHistogramDataPointBuckets
		m map[int32]uint64
	}{{dp.Positive(), n.pos}, {dp.Negative(), n.neg}} {
		for i, c := range side.b.BucketCounts().All() {
			if c != 0 {
				side.m[side.b.Offset()+int32(i)+1] += c
			}
			total += c
		}
	}
	return n, total == dp.Count() && !math.IsNaN(dp.Sum())
}

// mergeNatives adds two native histograms at the coarser schema: bucket
// i of schema s is bucket i>>(s-t) of schema t, in OTLP's indices.
func mergeNatives(a, b *native) *native {
	to := min(a.schema, b.schema)
	out := &native{schema: to, zeroThreshold: a.zeroThreshold, zeroCount: a.zeroCount + b.zeroCount, pos: map[int32]uint64{}, neg: map[int32]uint64{}}
	for _, h := range []*native{a, b} {
		for i, c := range h.pos {
			out.pos[((i-1)>>(h.schema-to))+1] += c
		}
		for i, c := range h.neg {
			out.neg[((i-1)>>(h.schema-to))+1] += c
		}
	}
	return out
}

// exemplarsOf is a point's exemplars as the exposition labels them, with
// their trace and span ids (as contrib does).
func exemplarsOf(es pmetric.ExemplarSlice) []exemplarValue {
	var out []exemplarValue
	for _, e := range es.All() {
		x := exemplarValue{value: e.DoubleValue()}
		if e.ValueType() == pmetric.ExemplarValueTypeInt {
			x.value = float64(e.IntValue())
		}
		var pairs []string
		if span := e.SpanID(); !span.IsEmpty() {
			pairs = append(pairs, `span_id="`+hex.EncodeToString(span[:])+`"`)
		}
		if trace := e.TraceID(); !trace.IsEmpty() {
			pairs = append(pairs, `trace_id="`+hex.EncodeToString(trace[:])+`"`)
		}
		x.labels = strings.Join(pairs, ",")
		if ts := int64(e.Timestamp()); ts != 0 {
			x.ts, x.hasTs = ts/1e6, true
		}
		out = append(out, x)
	}
	return out
}

// rendered is an expectation written out for one negotiated format.
type rendered struct {
	samples   map[string]sample
	natives   map[string]nativeSeen
	exemplars map[string][]exemplarValue // the keys whose exemplars are predicted
}

// render writes the expectation out for a scrape in format with scheme:
// sample keys as parse makes them.
func (w *otlpWant) render(format string, scheme model.EscapingScheme) rendered {
	r := rendered{samples: map[string]sample{}, natives: map[string]nativeSeen{}, exemplars: map[string][]exemplarValue{}}
	holding := map[string]bool{} // resources with series: they have a target_info
	for _, id := range w.order {
		s := w.series[id]
		if s.bad || w.badFamilies[s.family] != "" || w.dropped[s.family] || s.ts == math.MinInt64 {
			continue
		}
		holding[s.resource] = true
		name := escapeName(s.family, scheme)
		pairs := renderLabels(s.labels, scheme)
		ts := s.ts / 1e6
		put := func(suffix string, v float64, extra ...string) string {
			k := key(name+suffix, append(slices.Clone(pairs), pairsOf(extra)...))
			r.samples[k] = sample{v: v, ts: ts, hasTs: true}
			return k
		}
		// exemplar predicts the exemplar a sample carries in format.
		exemplar := func(k string, e *exemplarValue) {
			switch {
			case format == formatText:
				r.exemplars[k] = nil
			case e == nil, format == formatOpenMetrics && e.labels == "":
				// expfmt's OpenMetrics encoder leaves out exemplars without
				// labels: a writer may.
				r.exemplars[k] = nil
			default:
				r.exemplars[k] = []exemplarValue{*e}
			}
		}
		switch s.kind {
		case kindGauge:
			put("", s.value)
		case kindCounter:
			k := put("", s.value)
			// One exemplar: the latest, as client_golang keeps it.
			var e *exemplarValue
			if n := len(s.exemplars); n > 0 {
				e = &s.exemplars[n-1]
			}
			exemplar(k, e)
		case kindSummary:
			for _, q := range s.quantiles {
				put("", q[1], model.QuantileLabel, formatBound(q[0]))
			}
			put("_sum", s.sum)
			put("_count", float64(s.count))
		case kindHistogram:
			if s.native != nil && format == formatProtobuf {
				k := key(name, slices.Clone(pairs))
				r.natives[k] = nativeSeen{h: s.native, count: s.count, sum: s.sum, ts: ts, hasTs: true}
				if w.nativeExemplars {
					// Prometheus keeps a native histogram's exemplars with
					// timestamps only.
					var exs []exemplarValue
					for _, e := range s.exemplars {
						if e.hasTs {
							exs = append(exs, e)
						}
					}
					r.exemplars[k] = exs
				}
				continue
			}
			inf := put("_bucket", float64(s.count), model.BucketLabel, "+Inf")
			put("_sum", s.sum)
			put("_count", float64(s.count))
			if s.native != nil {
				exemplar(inf, nil) // text formats carry no native exemplars
				continue
			}
			if s.buckets == nil {
				continue // exemplars without buckets: not predicted
			}
			// Each exemplar to the first bucket whose bound is not below
			// it, a later one replacing an earlier; above every bound to
			// +Inf (client_golang's NewMetricWithExemplars).
			at := make([]*exemplarValue, len(s.buckets.bounds)+1)
			for i := range s.exemplars {
				at[sort.SearchFloat64s(s.buckets.bounds, s.exemplars[i].value)] = &s.exemplars[i]
			}
			for i, b := range s.buckets.bounds {
				exemplar(put("_bucket", float64(s.buckets.cum[i]), model.BucketLabel, formatBound(b)), at[i])
			}
			exemplar(inf, at[len(s.buckets.bounds)])
		}
	}
	for res, t := range w.targets {
		if t.bad || !holding[res] {
			continue
		}
		k := key(escapeName("target_info", scheme), renderLabels(t.labels, scheme))
		r.samples[k] = sample{v: 1}
	}
	return r
}

// otlpStats counts what the checks against the OTLP sent covered.
type otlpStats struct{ families, left, series int }

func (s *otlpStats) add(o otlpStats) {
	s.families, s.left, s.series = s.families+o.families, s.left+o.left, s.series+o.series
}

// stats counts the families and series the expectation holds.
func (w *otlpWant) stats() otlpStats {
	st := otlpStats{left: len(w.badFamilies)}
	families := map[string]bool{}
	for _, s := range w.series {
		if !s.bad && w.badFamilies[s.family] == "" && !w.dropped[s.family] && s.ts != math.MinInt64 {
			families[s.family] = true
			st.series++
		}
	}
	st.families = len(families)
	return st
}

// checkOTLP checks that a parsed scrape holds what the OTLP sent predicts;
// with want.complete, nothing else either.
func checkOTLP(t *testing.T, what string, want *otlpWant, neg negotiated, got parsed) {
	t.Helper()
	r := want.render(neg.mediaType, neg.escaping)
	for k, v := range r.samples {
		g, ok := got.samples[k]
		require.True(t, ok, "%s: %s, sent, is missing", what, k)
		require.True(t, sameFloat(v.v, g.v), "%s: %s is %v, sent %v", what, k, g.v, v.v)
		if v.hasTs {
			require.True(t, g.hasTs && sameTime(v.ts, g.ts, neg.mediaType), "%s: %s at %d, sent at %d", what, k, g.ts, v.ts)
		}
	}
	for k, v := range r.exemplars {
		require.Len(t, got.exemplars[k], len(v), "%s: exemplars of %s: %+v, sent %+v", what, k, got.exemplars[k], v)
		for i := range v {
			require.True(t, sameExemplar(v[i], got.exemplars[k][i], neg.mediaType), "%s: exemplar %d of %s is %+v, sent %+v", what, i, k, got.exemplars[k][i], v[i])
		}
	}
	for k, w := range r.natives {
		g, ok := got.natives[k]
		require.True(t, ok, "%s: native histogram %s, sent, is missing", what, k)
		checkNative(t, what, k, w, g)
	}
	if want.complete {
		for k := range got.samples {
			require.Contains(t, r.samples, k, "%s: %s was not sent", what, k)
		}
		for k := range got.natives {
			require.Contains(t, r.natives, k, "%s: native histogram %s was not sent", what, k)
		}
		for k, v := range got.exemplars {
			require.Contains(t, r.exemplars, k, "%s: %s has exemplars %+v, none sent", what, k, v)
		}
	}
}
