package agentprometheusexporter

import (
	"math"
	"sort"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/otlptranslator"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// fuzzReference is what the README says an exporter of fc serves for md,
// computed from pdata and otlptranslator alone, with names as a scraper
// that takes UTF-8 names sees them (for the escaping strategies the same
// as everyone's). It knows the README's naming, its labels (job, instance,
// scope, collisions joined with ';', exported_ renames, empty values left
// out), its values and types, and its handling of bad points: dropped
// metrics and points, sorted and cleaned histogram bounds, downscaled
// exponential histograms.
//
// What the README settles by the order of arrival, or does not say, is out
// of its scope: skip names why, and the input is then not compared.
func fuzzReference(md pmetric.Metrics, fc fuzzConfig) (want *exposed, skip string) {
	strategy := otlptranslatorStrategy(fc.strategy)
	r := &referenceModel{
		fc:   fc,
		utf8: !strategy.ShouldEscape(),
		metricNamer: otlptranslator.MetricNamer{
			WithMetricSuffixes: strategy.ShouldAddSuffixes(),
			UTF8Allowed:        !strategy.ShouldEscape(),
		},
		// As contrib's exporter with its default gates: "a__b" stays.
		labelNamer: otlptranslator.LabelNamer{
			UTF8Allowed:                 !strategy.ShouldEscape(),
			PreserveMultipleUnderscores: true,
		},
		want:     newExposed(),
		families: map[string]string{},
		series:   map[string]bool{},
		escaped:  map[string]string{},
		targets:  map[string]bool{},
	}
	rms := md.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		r.resource(rms.At(i))
	}
	r.checkNames()
	return r.want, r.skip
}

func otlptranslatorStrategy(s TranslationStrategy) otlptranslator.TranslationStrategyOption {
	return otlptranslator.TranslationStrategyOption(string(s))
}

type referenceModel struct {
	fc          fuzzConfig
	utf8        bool
	metricNamer otlptranslator.MetricNamer
	labelNamer  otlptranslator.LabelNamer
	want        *exposed
	skip        string

	families map[string]string // family name → type
	series   map[string]bool   // sampleKey(family, labels) of every point
	escaped  map[string]string // the same, escaped → as stored (UTF-8 names)
	targets  map[string]bool   // job and instance of each target_info
}

func (r *referenceModel) outOfScope(reason string) {
	if r.skip == "" {
		r.skip = reason
	}
}

// sourcedLabel is a label from a source: a point, resource or scope attribute
// (key is the attribute's key), or job and instance.
type sourcedLabel struct{ key, name, value string }

func referenceValue(v pcommon.Value) string { return strings.ToValidUTF8(v.AsString(), "\uFFFD") }

// labelName is an attribute key's label name; false when it cannot be one.
func (r *referenceModel) labelName(key string) (string, bool) {
	name, err := r.labelNamer.Build(key)
	if err != nil {
		return "", false
	}
	if r.utf8 {
		name = strings.ReplaceAll(strings.ToValidUTF8(name, "\uFFFD"), ":", "_")
		if strings.Trim(name, "_") == "" {
			return "", false
		}
	}
	return name, true
}

// exportedName renames the labels the exposition writes itself.
func exportedName(name, typ string) string {
	if name == "__name__" || name == "le" && typ == "histogram" || name == "quantile" && typ == "summary" {
		return "exported_" + name
	}
	return name
}

// joined is the label set of pairs: the values of one name joined with ';'
// in the order given, empty values left out.
func (r *referenceModel) joined(pairs []sourcedLabel) map[string]string {
	out := map[string]string{}
	for _, p := range pairs {
		old, ok := out[p.name]
		if !ok {
			out[p.name] = p.value
			continue
		}
		if old == "" || p.value == "" {
			// Whether an empty value takes its place in the join is not said.
			r.outOfScope("a label joined from an empty value")
		}
		out[p.name] = old + ";" + p.value
	}
	for n, v := range out {
		if v == "" {
			delete(out, n)
		}
	}
	return out
}

func sortLabelsByKey(pairs []sourcedLabel) {
	sort.SliceStable(pairs, func(i, j int) bool { return pairs[i].key < pairs[j].key })
}

// resource adds the series of a resource: job (service.namespace/
// service.name) and instance (service.instance.id), then each scope's
// labels, are the base labels of its points.
func (r *referenceModel) resource(rm pmetric.ResourceMetrics) {
	attrs := rm.Resource().Attributes()
	var base []sourcedLabel
	var job, instance string
	if name, ok := attrs.Get("service.name"); ok {
		job = name.AsString()
		if ns, ok := attrs.Get("service.namespace"); ok {
			job = ns.AsString() + "/" + job
		}
		job = strings.ToValidUTF8(job, "\uFFFD")
		base = append(base, sourcedLabel{name: "job", value: job})
	}
	if id, ok := attrs.Get("service.instance.id"); ok {
		instance = referenceValue(id)
		base = append(base, sourcedLabel{name: "instance", value: instance})
	}
	if job != "" && instance != "" {
		// Which resource's attributes its target_info then has is not said.
		if r.targets[job+"\xff"+instance] {
			r.outOfScope("two resources of one job and instance")
		}
		r.targets[job+"\xff"+instance] = true
	}
	served := len(r.want.samples)
	sms := rm.ScopeMetrics()
	for i := 0; i < sms.Len(); i++ {
		sm := sms.At(i)
		scopeBase := append([]sourcedLabel(nil), base...)
		scope := sm.Scope()
		for k, v := range scope.Attributes().All() {
			if k == "name" || k == "version" || k == "schema_url" {
				continue
			}
			name, ok := r.labelName("otel_scope_" + k)
			if !ok {
				r.outOfScope("a scope attribute without a label name")
			}
			scopeBase = append(scopeBase, sourcedLabel{name: name, value: referenceValue(v)})
		}
		scopeBase = append(scopeBase,
			sourcedLabel{name: "otel_scope_name", value: strings.ToValidUTF8(scope.Name(), "\uFFFD")},
			sourcedLabel{name: "otel_scope_version", value: strings.ToValidUTF8(scope.Version(), "\uFFFD")},
			sourcedLabel{name: "otel_scope_schema_url", value: strings.ToValidUTF8(sm.SchemaUrl(), "\uFFFD")})
		names := map[string]bool{}
		for _, b := range scopeBase {
			if names[b.name] {
				r.outOfScope("resource and scope labels of one name")
			}
			names[b.name] = true
		}
		ms := sm.Metrics()
		for j := 0; j < ms.Len(); j++ {
			r.metric(ms.At(j), scopeBase)
		}
	}
	// Not said in the README, but as contrib: a resource without series
	// has no target_info either.
	if job != "" && instance != "" && len(r.want.samples) > served {
		r.targetInfo(attrs, job, instance)
	}
}

// targetInfo: a resource with a job and an instance has a target_info
// series, its other attributes as labels; names that sanitise alike are
// joined in the order the resource sends them, as contrib joins them
// (README: Naming).
func (r *referenceModel) targetInfo(attrs pcommon.Map, job, instance string) {
	var pairs []sourcedLabel
	for k, v := range attrs.All() {
		if k == "service.name" || k == "service.namespace" || k == "service.instance.id" {
			continue
		}
		name, ok := r.labelName(k)
		switch {
		case !ok:
			r.outOfScope("a resource attribute without a label name")
		case name == "job" || name == "instance":
			r.outOfScope("a resource attribute named like job or instance")
		}
		pairs = append(pairs, sourcedLabel{key: k, name: exportedName(name, "gauge"), value: referenceValue(v)})
	}
	pairs = append(pairs, sourcedLabel{name: "job", value: job}, sourcedLabel{name: "instance", value: instance})
	labels := r.joined(pairs)
	r.seen("target_info", labels)
	// Its timestamp is the time of the resource's latest batch.
	r.add("target_info", "gauge", "target_info", labels, 1, nil)
}

// referenceType is a metric's Prometheus type, and its otlptranslator type
// for naming; ok is false for what is dropped whole: sums and histograms
// of unspecified temporality, non-monotonic delta sums.
func referenceType(m pmetric.Metric) (typ string, otlpType otlptranslator.MetricType, delta, ok bool) {
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		return "gauge", otlptranslator.MetricTypeGauge, false, true
	case pmetric.MetricTypeSum:
		s := m.Sum()
		delta = s.AggregationTemporality() == pmetric.AggregationTemporalityDelta
		switch {
		case s.AggregationTemporality() == pmetric.AggregationTemporalityUnspecified, delta && !s.IsMonotonic():
			return "", 0, false, false // unsupported temporality
		case s.IsMonotonic():
			return "counter", otlptranslator.MetricTypeMonotonicCounter, delta, true
		}
		return "gauge", otlptranslator.MetricTypeNonMonotonicCounter, false, true
	case pmetric.MetricTypeHistogram:
		t := m.Histogram().AggregationTemporality()
		return "histogram", otlptranslator.MetricTypeHistogram, t == pmetric.AggregationTemporalityDelta, t != pmetric.AggregationTemporalityUnspecified
	case pmetric.MetricTypeExponentialHistogram:
		t := m.ExponentialHistogram().AggregationTemporality()
		return "histogram", otlptranslator.MetricTypeExponentialHistogram, t == pmetric.AggregationTemporalityDelta, t != pmetric.AggregationTemporalityUnspecified
	case pmetric.MetricTypeSummary:
		return "summary", otlptranslator.MetricTypeSummary, false, true
	}
	return "", 0, false, false
}

// metric adds the samples of a metric's points, named by otlptranslator;
// a metric without a name, or whose name has no character Prometheus
// allows, is dropped.
func (r *referenceModel) metric(m pmetric.Metric, base []sourcedLabel) {
	typ, otlpType, delta, ok := referenceType(m)
	if !ok || m.Name() == "" {
		return
	}
	name, err := r.metricNamer.Build(otlptranslator.Metric{Name: m.Name(), Unit: m.Unit(), Type: otlpType})
	if err != nil {
		return
	}
	if r.utf8 {
		name = strings.ToValidUTF8(name, "\uFFFD")
	}
	if old, ok := r.families[name]; ok && old != typ {
		r.outOfScope("one family name with two types")
	}
	r.families[name] = typ
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		r.numbers(name, typ, m.Gauge().DataPoints(), false, base)
	case pmetric.MetricTypeSum:
		r.numbers(name, typ, m.Sum().DataPoints(), delta, base)
	case pmetric.MetricTypeHistogram:
		dps := m.Histogram().DataPoints()
		for i := 0; i < dps.Len(); i++ {
			r.histogram(name, dps.At(i), delta, base)
		}
	case pmetric.MetricTypeExponentialHistogram:
		dps := m.ExponentialHistogram().DataPoints()
		for i := 0; i < dps.Len(); i++ {
			r.exponential(name, dps.At(i), delta, base)
		}
	case pmetric.MetricTypeSummary:
		dps := m.Summary().DataPoints()
		for i := 0; i < dps.Len(); i++ {
			r.summary(name, dps.At(i), base)
		}
	}
}

// point resolves a point's labels: its attributes sorted by key, then the
// base labels; ok is false when the point is not served (an attribute
// without a label name, or NoRecordedValue, which ends the series).
func (r *referenceModel) point(family, typ string, attrs pcommon.Map, flags pmetric.DataPointFlags, base []sourcedLabel) (map[string]string, bool) {
	var pairs []sourcedLabel
	for k, v := range attrs.All() {
		name, ok := r.labelName(k)
		if !ok {
			return nil, false
		}
		pairs = append(pairs, sourcedLabel{key: k, name: exportedName(name, typ), value: referenceValue(v)})
	}
	sortLabelsByKey(pairs)
	for _, b := range base {
		pairs = append(pairs, sourcedLabel{name: exportedName(b.name, typ), value: b.value})
	}
	labels := r.joined(pairs)
	r.seen(family, labels)
	return labels, !flags.NoRecordedValue()
}

// seen notes a series: a second point of it (kept or replaced by the order
// of arrival) is out of scope, and so is, with UTF-8 names, a series that
// another one's escaped labels would write again (the first is kept).
func (r *referenceModel) seen(family string, labels map[string]string) {
	key := sampleKey(family, labels)
	if r.series[key] {
		r.outOfScope("two points of one series")
	}
	r.series[key] = true
	if r.utf8 {
		ek := sampleKey(escapeMetricName(family), escapeLabels(labels))
		if other, ok := r.escaped[ek]; ok && other != key {
			r.outOfScope("two series whose label names escape alike")
		}
		r.escaped[ek] = key
	}
}

// add adds a sample of family, which is then served with its type.
func (r *referenceModel) add(family, typ, name string, labels map[string]string, v float64, ts *int64) {
	r.want.types[family] = typ
	r.want.addSample(name, labels, v, ts)
}

// sampleTimestamp is a point's time as a sample timestamp; none when unset.
func sampleTimestamp(ts pcommon.Timestamp) *int64 {
	if ts == 0 {
		return nil
	}
	ms := int64(uint64(ts) / 1e6)
	return &ms
}

// addCreated notes the start time that protobuf carries for counters,
// histograms and summaries that have one.
func (r *referenceModel) addCreated(family string, labels map[string]string, start pcommon.Timestamp) {
	// README (Formats, _created): a start time before one second after the
	// epoch means unknown.
	if start >= 1e9 {
		r.want.created[sampleKey(family, labels)] = exposedSample{name: family, labels: labels, value: formatSampleValue(float64(uint64(start)) / 1e9)}
	}
}

// pastInt64 reports a time or start time past 2262, beyond int64
// nanoseconds: the README drops such a point as invalid.
func pastInt64(start, ts pcommon.Timestamp) bool { return start > math.MaxInt64 || ts > math.MaxInt64 }

// numbers adds gauges and counters; a counter that is negative or NaN, or
// a delta without a start time, is dropped.
func (r *referenceModel) numbers(family, typ string, dps pmetric.NumberDataPointSlice, delta bool, base []sourcedLabel) {
	for i := 0; i < dps.Len(); i++ {
		dp := dps.At(i)
		labels, ok := r.point(family, typ, dp.Attributes(), dp.Flags(), base)
		if !ok {
			continue
		}
		v := dp.DoubleValue()
		if dp.ValueType() == pmetric.NumberDataPointValueTypeInt {
			v = float64(dp.IntValue())
		}
		if typ == "counter" && !(v >= 0) || delta && dp.StartTimestamp() == 0 || pastInt64(dp.StartTimestamp(), dp.Timestamp()) {
			continue // invalid: negative or NaN counter, delta without a start, a time past 2262
		}
		r.add(family, typ, family, labels, v, sampleTimestamp(dp.Timestamp()))
		if typ == "counter" {
			r.addCreated(family, labels, dp.StartTimestamp())
		}
	}
}

// withLabel is labels and one more.
func withLabel(labels map[string]string, name, value string) map[string]string {
	out := make(map[string]string, len(labels)+1)
	for k, v := range labels {
		out[k] = v
	}
	out[name] = value
	return out
}

// histogram adds an explicit-bucket histogram's buckets, sum and count.
func (r *referenceModel) histogram(family string, dp pmetric.HistogramDataPoint, delta bool, base []sourcedLabel) {
	labels, ok := r.point(family, "histogram", dp.Attributes(), dp.Flags(), base)
	if !ok || delta && dp.StartTimestamp() == 0 || pastInt64(dp.StartTimestamp(), dp.Timestamp()) {
		return
	}
	bounds, counts := dp.ExplicitBounds().AsRaw(), dp.BucketCounts().AsRaw()
	ts := sampleTimestamp(dp.Timestamp())
	if len(counts) > 0 {
		// Buckets must be one per bound plus one, adding up to the count.
		if len(counts) != len(bounds)+1 {
			return
		}
		var total uint64
		for _, c := range counts {
			if total+c < total {
				return
			}
			total += c
		}
		if total != dp.Count() {
			return
		}
		// Bounds sorted, each with the count at its first position; NaN
		// and +Inf bounds left out (their counts are in +Inf only).
		first := map[float64]int{}
		var distinct []float64
		for i, b := range bounds {
			if math.IsNaN(b) || math.IsInf(b, 1) {
				continue
			}
			if _, ok := first[b]; !ok {
				first[b] = i
				distinct = append(distinct, b)
			}
		}
		sort.Float64s(distinct)
		var cum uint64
		for _, b := range distinct {
			cum += counts[first[b]]
			r.add(family, "histogram", family+"_bucket", withLabel(labels, "le", formatSampleValue(b)), float64(cum), ts)
		}
	}
	r.add(family, "histogram", family+"_bucket", withLabel(labels, "le", "+Inf"), float64(dp.Count()), ts)
	r.add(family, "histogram", family+"_sum", labels, dp.Sum(), ts)
	r.add(family, "histogram", family+"_count", labels, float64(dp.Count()), ts)
	r.addCreated(family, labels, dp.StartTimestamp())
}

// exponential adds an exponential histogram: its count and sum in every
// format, its buckets at a schema of at most 8 as a native histogram.
func (r *referenceModel) exponential(family string, dp pmetric.ExponentialHistogramDataPoint, delta bool, base []sourcedLabel) {
	labels, ok := r.point(family, "histogram", dp.Attributes(), dp.Flags(), base)
	if !ok || delta && dp.StartTimestamp() == 0 || pastInt64(dp.StartTimestamp(), dp.Timestamp()) {
		return
	}
	// What Prometheus refuses in a native histogram is dropped.
	if zt := dp.ZeroThreshold(); dp.Scale() < -4 || !(zt >= 0) || math.IsInf(zt, 1) {
		return
	}
	schema := min(dp.Scale(), 8)
	down := dp.Scale() - schema
	native := nativeHistogram{schema: schema, zeroThreshold: dp.ZeroThreshold(), zeroCount: float64(dp.ZeroCount())}
	total := dp.ZeroCount()
	for _, side := range []struct {
		b   pmetric.ExponentialHistogramDataPointBuckets
		out *map[int64]float64
	}{{dp.Positive(), &native.positive}, {dp.Negative(), &native.negative}} {
		*side.out = map[int64]float64{}
		counts := side.b.BucketCounts().AsRaw()
		if len(counts) > 0 && int64(side.b.Offset())+int64(len(counts))-1 > math.MaxInt32 {
			return // bucket indexes past int32, as OTLP numbers them: dropped as invalid
		}
		for i, c := range counts {
			// OTLP bucket i is (base^i, base^(i+1)]; at the native schema
			// it is within bucket i>>down, which Prometheus numbers one up.
			j := (int64(side.b.Offset()) + int64(i)) >> down
			if !(float64(j) > -1074*math.Exp2(float64(schema)) && float64(j+1) < 1024*math.Exp2(float64(schema))) {
				// The README drops buckets beyond the float64 range; where
				// that range ends, at bucket granularity, it does not say.
				r.outOfScope("exponential buckets beyond the float64 range")
				return
			}
			if total+c < total {
				return // not a count
			}
			total += c
			if c > 0 {
				(*side.out)[j+1] += float64(c)
			}
		}
	}
	if math.IsNaN(dp.Sum()) && total > dp.Count() || !math.IsNaN(dp.Sum()) && total != dp.Count() {
		return
	}
	ts := sampleTimestamp(dp.Timestamp())
	// The text formats write a native histogram's count as its +Inf bucket.
	r.add(family, "histogram", family+"_bucket", withLabel(labels, "le", "+Inf"), float64(dp.Count()), ts)
	r.add(family, "histogram", family+"_sum", labels, dp.Sum(), ts)
	r.add(family, "histogram", family+"_count", labels, float64(dp.Count()), ts)
	r.addCreated(family, labels, dp.StartTimestamp())
	r.want.natives[sampleKey(family, labels)] = exposedNative{name: family, labels: labels, native: native, anyZeroThreshold: dp.ZeroThreshold() == 0}
}

// summary adds a summary's quantiles, sum and count.
func (r *referenceModel) summary(family string, dp pmetric.SummaryDataPoint, base []sourcedLabel) {
	labels, ok := r.point(family, "summary", dp.Attributes(), dp.Flags(), base)
	if !ok || pastInt64(dp.StartTimestamp(), dp.Timestamp()) {
		return
	}
	ts := sampleTimestamp(dp.Timestamp())
	qs := dp.QuantileValues()
	seen := map[string]bool{}
	for i := 0; i < qs.Len(); i++ {
		q := formatSampleValue(qs.At(i).Quantile())
		if seen[q] {
			r.outOfScope("a quantile twice in a summary")
		}
		seen[q] = true
		r.add(family, "summary", family, withLabel(labels, "quantile", q), qs.At(i).Value(), ts)
	}
	r.add(family, "summary", family+"_sum", labels, dp.Sum(), ts)
	r.add(family, "summary", family+"_count", labels, float64(dp.Count()), ts)
	r.addCreated(family, labels, dp.StartTimestamp())
}

// checkNames puts out of scope the families whose names, or the names of
// their samples in some format, another family or target_info takes: the
// README keeps the first family.
func (r *referenceModel) checkNames() {
	// target_info is the exporter's own, whichever family is named so.
	const exporter = "\x00exporter"
	owner := map[string]string{"target_info": exporter}
	escapedOwner := map[string]string{"target_info": exporter}
	names := make([]string, 0, len(r.families))
	for f := range r.families {
		names = append(names, f)
	}
	sort.Strings(names)
	for _, f := range names {
		for _, w := range writtenNames(f, r.families[f], r.fc.created) {
			if o, ok := owner[w]; ok && o != f {
				r.outOfScope("families whose sample names coincide")
			}
			owner[w] = f
			if r.utf8 {
				if o, ok := escapedOwner[escapeMetricName(w)]; ok && o != f {
					r.outOfScope("families whose escaped sample names coincide")
				}
				escapedOwner[escapeMetricName(w)] = f
			}
		}
	}
}

// writtenNames are the names a family's lines take in some format: its
// samples', and with OpenMetrics (on in every fuzz configuration) the
// family name of a counter, without _total, and the _created samples.
func writtenNames(family, typ string, created bool) []string {
	switch typ {
	case "counter":
		stem := strings.TrimSuffix(family, "_total")
		out := []string{family, stem}
		if created {
			out = append(out, stem+"_created")
		}
		return out
	case "histogram":
		out := []string{family, family + "_bucket", family + "_count", family + "_sum"}
		if created {
			out = append(out, family+"_created")
		}
		return out
	case "summary":
		out := []string{family, family + "_count", family + "_sum"}
		if created {
			out = append(out, family+"_created")
		}
		return out
	}
	return []string{family}
}

// escapeMetricName is a name as a scraper that does not take UTF-8 names
// gets it: model's underscore escaping.
func escapeMetricName(name string) string {
	return model.EscapeName(name, model.UnderscoreEscaping)
}

// escapeLabelName replaces each character that cannot stand where it is
// in a label name by '_'.
func escapeLabelName(name string) string {
	var b strings.Builder
	for i, c := range name {
		if c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9' {
			b.WriteRune(c)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// escapeLabels is a label set as a scraper that does not take UTF-8 names
// gets it: names escaped, the values of names that then coincide joined
// with ';' in the order of the names as stored, and __name__ renamed.
func escapeLabels(labels map[string]string) map[string]string {
	names := make([]string, 0, len(labels))
	for n := range labels {
		names = append(names, n)
	}
	sort.Strings(names)
	out := map[string]string{}
	for _, n := range names {
		e := escapeLabelName(n)
		if e == "__name__" {
			e = "exported___name__"
		}
		if old, ok := out[e]; ok {
			out[e] = old + ";" + labels[n]
		} else {
			out[e] = labels[n]
		}
	}
	return out
}
