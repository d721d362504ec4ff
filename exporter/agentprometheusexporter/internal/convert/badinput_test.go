package convert_test

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/convert"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/prommodel"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/storetest"
)

// The rows of the README's table of bad input whose outcome is the
// converter's, checked against the converter and the store: what it stores
// (every family and series exactly), what it drops and the reason it
// counts. The exporter's TestBadInput sends every row through the whole
// exporter as well: each scrape in every format must parse and pass
// promtool, and the telemetry must count the same reasons.

// The agents of the bad-input batches, with the exporter's default naming
// and scope labels.
var (
	biAgent = map[string]any{"service.name": "api", "service.namespace": "shop", "service.instance.id": "i-1", "host.name": "h1"}
	biOther = map[string]any{"service.name": "web", "service.namespace": "shop", "service.instance.id": "i-2"}
)

const (
	biAgentLabels = `instance="i-1",job="shop/api",otel_scope_name="lib",otel_scope_version="1.0"`
	biOtherLabels = `instance="i-2",job="shop/web",otel_scope_name="lib",otel_scope_version="1.0"`
)

// biLabels is the label set of base with extra name=value pairs, sorted
// by name and written as LabelSet.Text writes it (no value here needs
// escaping).
func biLabels(base string, extra ...string) string {
	parts := strings.Split(base, ",")
	for _, e := range extra {
		name, value, _ := strings.Cut(e, "=")
		parts = append(parts, name+`="`+value+`"`)
	}
	sort.Slice(parts, func(i, j int) bool {
		a, _, _ := strings.Cut(parts[i], "=")
		b, _, _ := strings.Cut(parts[j], "=")
		return a < b
	})
	return strings.Join(parts, ",")
}

// biPoint is the agent's labels with point=<point>.
func biPoint(point string) string { return biLabels(biAgentLabels, "point="+point) }

// biMinute is n minutes after t0.
func biMinute(n int) int { return 60 * n }

// biBatch is one resource with the scope lib 1.0.
func biBatch(resource map[string]any) (pmetric.Metrics, pmetric.MetricSlice) {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	putAll(rm.Resource().Attributes(), resource)
	sm := rm.ScopeMetrics().AppendEmpty()
	sm.Scope().SetName("lib")
	sm.Scope().SetVersion("1.0")
	return md, sm.Metrics()
}

// addDescribed appends a metric with a description, as the exporter's
// rows send them: HELP is part of what a family keeps.
func addDescribed(ms pmetric.MetricSlice, name, unit string) pmetric.Metric {
	m := ms.AppendEmpty()
	m.SetName(name)
	m.SetUnit(unit)
	m.SetDescription("Described " + name + ".")
	return m
}

func addGauge(ms pmetric.MetricSlice, name string, v float64, attrs map[string]any) pmetric.NumberDataPoint {
	dp := addDescribed(ms, name, "").SetEmptyGauge().DataPoints().AppendEmpty()
	dp.SetDoubleValue(v)
	dp.SetTimestamp(at(biMinute(1)))
	putAll(dp.Attributes(), attrs)
	return dp
}

func addCounter(ms pmetric.MetricSlice, name string, temporality pmetric.AggregationTemporality) pmetric.NumberDataPointSlice {
	s := addDescribed(ms, name, "").SetEmptySum()
	s.SetIsMonotonic(true)
	s.SetAggregationTemporality(temporality)
	return s.DataPoints()
}

func addHistogram(ms pmetric.MetricSlice, name string, temporality pmetric.AggregationTemporality) pmetric.HistogramDataPointSlice {
	h := addDescribed(ms, name, "").SetEmptyHistogram()
	h.SetAggregationTemporality(temporality)
	return h.DataPoints()
}

func addHistogramPoint(dps pmetric.HistogramDataPointSlice, point string, bounds []float64, counts []uint64, count uint64) pmetric.HistogramDataPoint {
	dp := dps.AppendEmpty()
	dp.Attributes().PutStr("point", point)
	dp.ExplicitBounds().FromRaw(bounds)
	dp.BucketCounts().FromRaw(counts)
	dp.SetCount(count)
	dp.SetSum(1.5)
	dp.SetStartTimestamp(at(0))
	dp.SetTimestamp(at(biMinute(1)))
	return dp
}

func addExponential(ms pmetric.MetricSlice, name string, temporality pmetric.AggregationTemporality) pmetric.ExponentialHistogramDataPointSlice {
	h := addDescribed(ms, name, "").SetEmptyExponentialHistogram()
	h.SetAggregationTemporality(temporality)
	return h.DataPoints()
}

// addExponentialPoint appends a point whose positive buckets start at offset.
func addExponentialPoint(dps pmetric.ExponentialHistogramDataPointSlice, point string, scale, offset int32, counts []uint64, count uint64) pmetric.ExponentialHistogramDataPoint {
	dp := dps.AppendEmpty()
	dp.Attributes().PutStr("point", point)
	dp.SetScale(scale)
	dp.Positive().SetOffset(offset)
	dp.Positive().BucketCounts().FromRaw(counts)
	dp.SetCount(count)
	dp.SetSum(2)
	dp.SetStartTimestamp(at(0))
	dp.SetTimestamp(at(biMinute(1)))
	return dp
}

// addGoodMetrics appends a gauge, a counter and a histogram that are valid
// in every way: each row checks they all come through its bad input.
func addGoodMetrics(ms pmetric.MetricSlice) {
	dp := addDescribed(ms, "good.queue.depth", "{item}").SetEmptyGauge().DataPoints().AppendEmpty()
	dp.SetIntValue(7)
	dp.SetTimestamp(at(biMinute(1)))
	c := addCounter(ms, "good.requests", cumulative).AppendEmpty()
	c.SetIntValue(42)
	c.SetStartTimestamp(at(0))
	c.SetTimestamp(at(biMinute(1)))
	h := addDescribed(ms, "good.latency", "s").SetEmptyHistogram()
	h.SetAggregationTemporality(cumulative)
	hp := h.DataPoints().AppendEmpty()
	hp.ExplicitBounds().FromRaw([]float64{0.1, 1})
	hp.BucketCounts().FromRaw([]uint64{1, 2, 3})
	hp.SetCount(6)
	hp.SetSum(4.5)
	hp.SetStartTimestamp(at(0))
	hp.SetTimestamp(at(biMinute(1)))
}

// checkGood asserts the good metrics of addGoodMetrics under labels.
func checkGood(t *testing.T, st *storetest.Store, labels string) {
	t.Helper()
	assert.Equal(t, storetest.Series{Value: 7, Timestamp: ns(biMinute(1))}, st.Series("good_queue_depth")[labels], "good_queue_depth{%s}", labels)
	assert.Equal(t, storetest.Series{Value: 42, Start: ns(0), Timestamp: ns(biMinute(1))}, st.Series("good_requests_total")[labels], "good_requests_total{%s}", labels)
	h := st.Series("good_latency_seconds")[labels]
	if assert.NotNil(t, h.Bounds, "good_latency_seconds{%s}", labels) {
		assert.Equal(t, []float64{0.1, 1}, h.Bounds.Values)
	}
	assert.Equal(t, []any{[]uint64{1, 3}, uint64(6), 4.5}, []any{h.Cumulative, h.Count, h.Value}, "good_latency_seconds{%s}", labels)
}

// goodFamilies are the families of every row's good metrics.
var goodFamilies = []string{"good_after", "good_latency_seconds", "good_queue_depth", "good_requests_total"}

// badInputConvertRow is one kind of bad input. Its batch holds the bad
// input among good points: good metrics before and after it in the
// agent's scope, and in a second resource.
type badInputConvertRow struct {
	name string
	// naming is the translation strategy; the exporter's default when zero.
	naming storetest.Naming
	// withoutOpenMetrics stores as an exporter that serves no OpenMetrics:
	// the rows run with enable_open_metrics otherwise.
	withoutOpenMetrics bool
	// earlier is a batch consumed before the row's, e.g. to store a first type.
	earlier func() pmetric.Metrics
	// bad appends the bad input (and points of the same metric that must
	// survive it) to the agent's scope.
	bad func(ms pmetric.MetricSlice)
	// resource appends bad input that is a resource of its own.
	resource func(md pmetric.Metrics)
	// dropped are the points dropped by reason, the earlier batch's included.
	dropped map[convert.Reason]int64
	// families are the families the row's input leaves, besides the good ones.
	families []string
	// check asserts what the store holds of the bad input.
	check func(t *testing.T, st *storetest.Store)
}

func TestBadInputConversion(t *testing.T) {
	for _, row := range badInputConvertRows() {
		t.Run(row.name, func(t *testing.T) {
			naming := row.naming
			if naming == (storetest.Naming{}) {
				naming = storetest.UnderscoreEscapingWithSuffixes
			}
			st := storetest.New(t, storetest.Options{Naming: naming, Claims: prommodel.Claims{OpenMetrics: !row.withoutOpenMetrics}})
			var total [convert.NumReasons]int64
			consume := func(md pmetric.Metrics) {
				for r, n := range st.Consume(md).Dropped {
					total[r] += n
				}
			}
			if row.earlier != nil {
				consume(row.earlier())
			}
			md, ms := biBatch(biAgent)
			addGoodMetrics(ms)
			row.bad(ms)
			addDescribed(ms, "good.after", "").SetEmptyGauge().DataPoints().AppendEmpty().SetIntValue(1)
			rm := md.ResourceMetrics().AppendEmpty()
			putAll(rm.Resource().Attributes(), biOther)
			sm := rm.ScopeMetrics().AppendEmpty()
			sm.Scope().SetName("lib")
			sm.Scope().SetVersion("1.0")
			addGoodMetrics(sm.Metrics())
			if row.resource != nil {
				row.resource(md)
			}
			consume(md)

			assert.Equal(t, dropped(row.dropped), total, "points dropped by reason")
			checkGood(t, st, biAgentLabels)
			checkGood(t, st, biOtherLabels)
			assert.Equal(t, storetest.Series{Value: 1}, st.Series("good_after")[biAgentLabels], "the good point after the bad input")
			want := slices.Sorted(slices.Values(append(slices.Clone(goodFamilies), row.families...)))
			assert.Equal(t, want, st.FamilyNames())
			row.check(t, st)
		})
	}
}

// values is the value of each series of family name by its labels.
func values(st *storetest.Store, name string) map[string]float64 {
	out := map[string]float64{}
	for labels, s := range st.Series(name) {
		out[labels] = s.Value
	}
	return out
}

// counts is the count of each histogram series of family name by its labels.
func counts(st *storetest.Store, name string) map[string]uint64 {
	out := map[string]uint64{}
	for labels, s := range st.Series(name) {
		out[labels] = s.Count
	}
	return out
}

func badInputConvertRows() []badInputConvertRow {
	nothing := func(*testing.T, *storetest.Store) {}
	return []badInputConvertRow{
		// Names.
		{
			name:    "empty metric name is dropped as invalid_name",
			bad:     func(ms pmetric.MetricSlice) { addGauge(ms, "", 1, nil) },
			dropped: map[convert.Reason]int64{convert.InvalidName: 1},
			check:   nothing,
		},
		{
			name: "metric name without a valid character is dropped as invalid_name",
			bad: func(ms pmetric.MetricSlice) {
				addGauge(ms, "!!!", 1, nil)
				addGauge(ms, "запросы.всего", 1, nil)
			},
			dropped: map[convert.Reason]int64{convert.InvalidName: 2},
			check:   nothing,
		},
		{
			name: "invalid characters are replaced and a leading digit is prefixed",
			bad: func(ms pmetric.MetricSlice) {
				addGauge(ms, "1st-stage/load avg", 1, nil)
				addGauge(ms, "café.requests", 2, nil)
				addGauge(ms, "bad\xffbyte", 3, nil)
			},
			families: []string{"_1st_stage_load_avg", "bad_byte", "caf_requests"},
			check: func(t *testing.T, st *storetest.Store) {
				assert.Equal(t, map[string]float64{biAgentLabels: 1}, values(st, "_1st_stage_load_avg"))
				assert.Equal(t, map[string]float64{biAgentLabels: 2}, values(st, "caf_requests"))
				assert.Equal(t, map[string]float64{biAgentLabels: 3}, values(st, "bad_byte"))
			},
		},
		{
			name:    "a metric named target_info is dropped: the exporter writes that family",
			bad:     func(ms pmetric.MetricSlice) { addGauge(ms, "target_info", 5, nil) },
			dropped: map[convert.Reason]int64{convert.TypeConflict: 1},
			check: func(t *testing.T, st *storetest.Store) {
				var infos []string
				for _, ti := range st.TargetInfos() {
					infos = append(infos, ti.Labels.Text())
				}
				assert.Equal(t, []string{`host_name="h1",instance="i-1",job="shop/api"`, `instance="i-2",job="shop/web"`}, infos)
			},
		},
		{
			name: "a family whose name another family's series take is dropped as type_conflict",
			bad: func(ms pmetric.MetricSlice) {
				addHistogramPoint(addHistogram(ms, "job.duration", cumulative), "good", []float64{1}, []uint64{1, 1}, 2)
				addGauge(ms, "job.duration.count", 9, nil) // job_duration_count is the histogram's
				addCounter(ms, "jobs", cumulative).AppendEmpty().SetIntValue(3)
				addGauge(ms, "jobs", 9, nil) // OpenMetrics types jobs_total as "jobs"
			},
			dropped:  map[convert.Reason]int64{convert.TypeConflict: 2},
			families: []string{"job_duration", "jobs_total"},
			check: func(t *testing.T, st *storetest.Store) {
				assert.Equal(t, map[string]uint64{biPoint("good"): 2}, counts(st, "job_duration"))
				assert.Equal(t, map[string]float64{biAgentLabels: 3}, values(st, "jobs_total"))
			},
		},
		{
			name:               "without OpenMetrics a counter x_total and a gauge x are both served",
			withoutOpenMetrics: true,
			bad: func(ms pmetric.MetricSlice) {
				addCounter(ms, "jobs", cumulative).AppendEmpty().SetIntValue(3)
				addGauge(ms, "jobs", 9, nil) // clashes only in OpenMetrics, never served here
			},
			families: []string{"jobs", "jobs_total"},
			check: func(t *testing.T, st *storetest.Store) {
				assert.Equal(t, map[string]float64{biAgentLabels: 3}, values(st, "jobs_total"))
				assert.Equal(t, map[string]float64{biAgentLabels: 9}, values(st, "jobs"))
			},
		},
		{
			name: "the same family with another type from another agent is dropped as type_conflict",
			earlier: func() pmetric.Metrics {
				md, ms := biBatch(biOther)
				addGauge(ms, "shared.value", 1, nil)
				return md
			},
			bad: func(ms pmetric.MetricSlice) {
				addHistogramPoint(addHistogram(ms, "shared.value", cumulative), "bad", []float64{1}, []uint64{1, 0}, 1)
			},
			dropped:  map[convert.Reason]int64{convert.TypeConflict: 1},
			families: []string{"shared_value"},
			check: func(t *testing.T, st *storetest.Store) {
				assert.Equal(t, prommodel.KindGauge, st.FamilyNamed("shared_value").Kind)
				assert.Equal(t, map[string]float64{biOtherLabels: 1}, values(st, "shared_value"))
			},
		},
		{
			name: "the same name with units the name does not show shares the first family and its HELP",
			earlier: func() pmetric.Metrics {
				md, ms := biBatch(biOther)
				m := addDescribed(ms, "payload.sent", "{packet}")
				m.SetDescription("Packets.")
				m.SetEmptyGauge().DataPoints().AppendEmpty().SetIntValue(20)
				return md
			},
			bad: func(ms pmetric.MetricSlice) {
				m := addDescribed(ms, "payload.sent", "{datagram}")
				m.SetDescription("Datagrams.")
				m.SetEmptyGauge().DataPoints().AppendEmpty().SetIntValue(2)
			},
			families: []string{"payload_sent"},
			check: func(t *testing.T, st *storetest.Store) {
				assert.Equal(t, map[string]float64{biOtherLabels: 20, biAgentLabels: 2}, values(st, "payload_sent"))
				assert.Equal(t, "Packets.", st.FamilyNamed("payload_sent").Help)
			},
		},
		// Labels.
		{
			name: "attribute names that collide after sanitisation are one label with joined values",
			bad: func(ms pmetric.MetricSlice) {
				addGauge(ms, "collide", 1, map[string]any{"a.b": "dot", "a_b": "underscore", "a-b": "dash"})
				// A point attribute named like a resource label joins it too.
				addGauge(ms, "collide.job", 1, map[string]any{"job": "batch"})
			},
			families: []string{"collide", "collide_job"},
			check: func(t *testing.T, st *storetest.Store) {
				assert.Equal(t, map[string]float64{biLabels(biAgentLabels, "a_b=dash;dot;underscore"): 1}, values(st, "collide"))
				assert.Equal(t, map[string]float64{`instance="i-1",job="batch;shop/api",otel_scope_name="lib",otel_scope_version="1.0"`: 1}, values(st, "collide_job"))
			},
		},
		{
			name: "an attribute key that cannot be a label name drops its point as invalid_name",
			bad: func(ms pmetric.MetricSlice) {
				dps := addDescribed(ms, "keyed", "").SetEmptyGauge().DataPoints()
				for _, key := range []string{"", "__", "ok"} {
					dp := dps.AppendEmpty()
					dp.SetIntValue(1)
					dp.Attributes().PutStr(key, "v")
				}
			},
			dropped:  map[convert.Reason]int64{convert.InvalidName: 2},
			families: []string{"keyed"},
			check: func(t *testing.T, st *storetest.Store) {
				assert.Equal(t, map[string]float64{biLabels(biAgentLabels, "ok=v"): 1}, values(st, "keyed"))
			},
		},
		{
			name: "reserved label names are kept under exported_",
			bad: func(ms pmetric.MetricSlice) {
				// __name__ would make the whole scrape unparseable.
				addGauge(ms, "reserved", 1, map[string]any{"__name__": "x"})
				addHistogramPoint(addHistogram(ms, "reserved.hist", cumulative), "good", nil, nil, 1).Attributes().PutStr("le", "attr")
			},
			families: []string{"reserved", "reserved_hist"},
			check: func(t *testing.T, st *storetest.Store) {
				assert.Equal(t, map[string]float64{biLabels(biAgentLabels, "exported___name__=x"): 1}, values(st, "reserved"))
				assert.Equal(t, map[string]uint64{biLabels(biAgentLabels, "point=good", "exported_le=attr"): 1}, counts(st, "reserved_hist"))
			},
		},
		{
			name: "invalid UTF-8 in resource and scope attributes is replaced",
			bad:  func(pmetric.MetricSlice) {},
			resource: func(md pmetric.Metrics) {
				rm := md.ResourceMetrics().AppendEmpty()
				putAll(rm.Resource().Attributes(), map[string]any{"service.name": "bad\xffjob", "service.instance.id": "i\xff3", "host.name": "h\xff"})
				sm := rm.ScopeMetrics().AppendEmpty()
				sm.Scope().SetName("scope\xff")
				addGauge(sm.Metrics(), "utf8.resource", 1, nil)
				// Raw, these two would be one agent: job and instance are
				// kept apart by a 0xff byte.
				for _, res := range []map[string]any{
					{"service.name": "a\xffb", "service.instance.id": "c"},
					{"service.name": "a", "service.instance.id": "b\xffc"},
				} {
					rm := md.ResourceMetrics().AppendEmpty()
					putAll(rm.Resource().Attributes(), res)
					addGauge(rm.ScopeMetrics().AppendEmpty().Metrics(), "utf8.resource", 2, nil)
				}
			},
			families: []string{"utf8_resource"},
			check: func(t *testing.T, st *storetest.Store) {
				assert.Equal(t, map[string]float64{
					`instance="i` + "\uFFFD" + `3",job="bad` + "\uFFFD" + `job",otel_scope_name="scope` + "\uFFFD" + `"`: 1,
					`instance="c",job="a` + "\uFFFD" + `b"`: 2,
					`instance="b` + "\uFFFD" + `c",job="a"`: 2,
				}, values(st, "utf8_resource"))
				var infos []string
				for _, ti := range st.TargetInfos() {
					infos = append(infos, ti.Labels.Text())
				}
				assert.Subset(t, infos, []string{
					`host_name="h` + "\uFFFD" + `",instance="i` + "\uFFFD" + `3",job="bad` + "\uFFFD" + `job"`,
					`instance="c",job="a` + "\uFFFD" + `b"`,
					`instance="b` + "\uFFFD" + `c",job="a"`,
				})
			},
		},
		{
			name: "500 attributes on one point are 500 labels",
			bad: func(ms pmetric.MetricSlice) {
				attrs := map[string]any{}
				for i := range 500 {
					attrs[fmt.Sprintf("attr.%03d", i)] = i
				}
				addGauge(ms, "wide", 1, attrs)
			},
			families: []string{"wide"},
			check: func(t *testing.T, st *storetest.Store) {
				series := st.Series("wide")
				require.Len(t, series, 1)
				set, ok := storetest.ParseLabels(slices.Collect(maps.Keys(series))[0])
				require.True(t, ok)
				var names, vals []string
				for name, value := range set.All() {
					names, vals = append(names, name), append(vals, value)
				}
				assert.Len(t, names, 500+4)
				for i := range 500 {
					assert.Equal(t, []string{fmt.Sprintf("attr_%03d", i), fmt.Sprint(i)}, []string{names[i], vals[i]})
				}
			},
		},
		// Values.
		{
			name: "a negative or NaN counter is dropped as invalid",
			bad: func(ms pmetric.MetricSlice) {
				dps := addCounter(ms, "signed", cumulative)
				for i, v := range []float64{-1, math.NaN(), math.Inf(-1), 5, math.Inf(1)} {
					dp := dps.AppendEmpty()
					dp.SetDoubleValue(v)
					dp.Attributes().PutInt("i", int64(i))
				}
				dp := dps.AppendEmpty()
				dp.SetIntValue(-3)
				dp.Attributes().PutStr("i", "int")
				d := addCounter(ms, "signed.delta", delta).AppendEmpty()
				d.SetIntValue(-2)
				d.SetStartTimestamp(at(0))
				d.SetTimestamp(at(biMinute(1)))
			},
			dropped:  map[convert.Reason]int64{convert.Invalid: 5},
			families: []string{"signed_total"},
			check: func(t *testing.T, st *storetest.Store) {
				assert.Equal(t, map[string]float64{biLabels(biAgentLabels, "i=3"): 5, biLabels(biAgentLabels, "i=4"): math.Inf(1)}, values(st, "signed_total"))
			},
		},
		// Histograms.
		{
			name: "a histogram whose buckets do not add up to its count is dropped as invalid",
			bad: func(ms pmetric.MetricSlice) {
				dps := addHistogram(ms, "mismatch", cumulative)
				addHistogramPoint(dps, "over", []float64{1}, []uint64{3, 3}, 4)
				addHistogramPoint(dps, "under", []float64{1}, []uint64{1, 1}, 4)
				addHistogramPoint(dps, "short", []float64{1, 2}, []uint64{1, 1}, 2)
				addHistogramPoint(dps, "long", []float64{1}, []uint64{1, 1, 1}, 3)
				addHistogramPoint(dps, "overflow", []float64{1}, []uint64{math.MaxUint64, 2}, 1)
				addHistogramPoint(dps, "good", []float64{1}, []uint64{1, 1}, 2)
			},
			dropped:  map[convert.Reason]int64{convert.Invalid: 5},
			families: []string{"mismatch"},
			check: func(t *testing.T, st *storetest.Store) {
				assert.Equal(t, map[string]uint64{biPoint("good"): 2}, counts(st, "mismatch"))
			},
		},
		{
			name: "histogram bounds out of order are sorted, and NaN and +Inf bounds left out",
			bad: func(ms pmetric.MetricSlice) {
				dps := addHistogram(ms, "unordered", cumulative)
				// Each bound keeps the count at its first position.
				addHistogramPoint(dps, "shuffled", []float64{5, 1, 5, 2}, []uint64{4, 1, 9, 2, 3}, 19)
				addHistogramPoint(dps, "special", []float64{math.NaN(), 1, math.Inf(1)}, []uint64{2, 1, 3, 4}, 10)
			},
			families: []string{"unordered"},
			check: func(t *testing.T, st *storetest.Store) {
				got := st.Series("unordered")
				require.Len(t, got, 2)
				for point, want := range map[string][]any{
					"shuffled": {[]float64{1, 2, 5}, []uint64{1, 3, 7}, uint64(19)},
					"special":  {[]float64{1}, []uint64{1}, uint64(10)},
				} {
					s := got[biPoint(point)]
					require.NotNil(t, s.Bounds, point)
					assert.Equal(t, want, []any{s.Bounds.Values, s.Cumulative, s.Count}, point)
				}
			},
		},
		{
			name: "a histogram without bucket counts keeps its count and sum only",
			bad: func(ms pmetric.MetricSlice) {
				addHistogramPoint(addHistogram(ms, "bare", cumulative), "good", []float64{1, 2}, nil, 5)
			},
			families: []string{"bare"},
			check: func(t *testing.T, st *storetest.Store) {
				got := st.Series("bare")
				require.Len(t, got, 1)
				s := got[biPoint("good")]
				assert.Nil(t, s.Bounds)
				assert.Empty(t, s.Cumulative)
				assert.Equal(t, []any{uint64(5), 1.5}, []any{s.Count, s.Value})
			},
		},
		{
			name: "an exponential histogram outside the native range or inconsistent is dropped as invalid",
			bad: func(ms pmetric.MetricSlice) {
				dps := addExponential(ms, "expo", cumulative)
				addExponentialPoint(dps, "coarse", -5, 0, []uint64{1}, 1)
				addExponentialPoint(dps, "beyond-float64", 0, 5000, []uint64{1}, 1)
				addExponentialPoint(dps, "int32-overflow", 30, math.MaxInt32, []uint64{1, 1}, 2)
				addExponentialPoint(dps, "mismatch", 0, 0, []uint64{1, 1}, 3)
				addExponentialPoint(dps, "negative-zero-threshold", 0, 0, []uint64{1}, 1).SetZeroThreshold(-1)
				addExponentialPoint(dps, "nan-sum-over", 0, 0, []uint64{2}, 1).SetSum(math.NaN())
				addExponentialPoint(dps, "nan-sum-under", 0, 0, []uint64{1}, 2).SetSum(math.NaN())
				addExponentialPoint(dps, "fine", 12, 16, []uint64{1, 1}, 2)
				addExponentialPoint(dps, "good", 3, -2, []uint64{1, 2, 3}, 6)
			},
			dropped:  map[convert.Reason]int64{convert.Invalid: 6},
			families: []string{"expo"},
			check: func(t *testing.T, st *storetest.Store) {
				schemas := map[string]int32{}
				for labels, s := range st.Series("expo") {
					require.NotNil(t, s.Native, labels)
					schemas[labels] = s.Native.Schema
				}
				// Finer than native histograms allow: downscaled to 8.
				// A NaN sum allows fewer observations in the buckets than the count.
				assert.Equal(t, map[string]int32{biPoint("fine"): 8, biPoint("good"): 3, biPoint("nan-sum-under"): 0}, schemas)
			},
		},
		{
			name: "exponential deltas with buckets far apart are merged at a coarser schema",
			earlier: func() pmetric.Metrics {
				md, ms := biBatch(biAgent)
				addExponentialPoint(addExponential(ms, "spread", delta), "good", 8, -200000, []uint64{1}, 1)
				return md
			},
			bad: func(ms pmetric.MetricSlice) {
				dp := addExponentialPoint(addExponential(ms, "spread", delta), "good", 8, 200000, []uint64{1}, 1)
				dp.SetStartTimestamp(at(biMinute(1)))
				dp.SetTimestamp(at(biMinute(2)))
			},
			families: []string{"spread"},
			check: func(t *testing.T, st *storetest.Store) {
				got := st.Series("spread")
				require.Len(t, got, 1)
				s := got[biPoint("good")]
				assert.Equal(t, uint64(2), s.Count)
				require.NotNil(t, s.Native)
				// 400000 scale-8 buckets apart: 3126 dense buckets at schema 1,
				// 6251 at schema 2, over the 4096 a merge may hold.
				assert.Equal(t, int32(1), s.Native.Schema)
				assert.Equal(t, int32(-1562), s.Native.Positive.Offset)
				want := make([]uint64, 3126)
				want[0], want[3125] = 1, 1
				assert.Equal(t, want, s.Native.Positive.Counts)
				assert.Empty(t, s.Native.Negative.Counts)
			},
		},
		// Temporality and timestamps.
		{
			name: "a delta without a start time is dropped as invalid",
			bad: func(ms pmetric.MetricSlice) {
				c := addCounter(ms, "nostart", delta)
				c.AppendEmpty().SetIntValue(1)
				good := c.AppendEmpty()
				good.SetIntValue(2)
				good.SetStartTimestamp(at(0))
				good.SetTimestamp(at(biMinute(1)))
				good.Attributes().PutStr("point", "good")
				addHistogramPoint(addHistogram(ms, "nostart.hist", delta), "bad", []float64{1}, []uint64{1, 0}, 1).SetStartTimestamp(0)
				addExponentialPoint(addExponential(ms, "nostart.encoder.Options", delta), "bad", 0, 0, []uint64{1}, 1).SetStartTimestamp(0)
			},
			dropped:  map[convert.Reason]int64{convert.Invalid: 3},
			families: []string{"nostart_total"},
			check: func(t *testing.T, st *storetest.Store) {
				assert.Equal(t, map[string]float64{biPoint("good"): 2}, values(st, "nostart_total"))
			},
		},
		{
			name: "a point older than the stored one is dropped as out_of_order",
			earlier: func() pmetric.Metrics {
				md, ms := biBatch(biAgent)
				addGauge(ms, "ooo", 2, nil).SetTimestamp(at(biMinute(2)))
				return md
			},
			bad: func(ms pmetric.MetricSlice) {
				addGauge(ms, "ooo", 1, nil).SetTimestamp(at(biMinute(1)))
				// Within one batch too: the second point is older.
				dps := addDescribed(ms, "ooo.batch", "").SetEmptyGauge().DataPoints()
				for _, m := range []int{2, 1} {
					dp := dps.AppendEmpty()
					dp.SetIntValue(int64(m))
					dp.SetTimestamp(at(biMinute(m)))
				}
			},
			dropped:  map[convert.Reason]int64{convert.OutOfOrder: 2},
			families: []string{"ooo", "ooo_batch"},
			check: func(t *testing.T, st *storetest.Store) {
				assert.Equal(t, map[string]float64{biAgentLabels: 2}, values(st, "ooo"))
				assert.Equal(t, map[string]float64{biAgentLabels: 2}, values(st, "ooo_batch"))
			},
		},
		{
			name: "a repeated timestamp replaces a cumulative point, and a repeated delta is dropped as out_of_order",
			earlier: func() pmetric.Metrics {
				md, ms := biBatch(biAgent)
				dp := addCounter(ms, "retried", delta).AppendEmpty()
				dp.SetIntValue(5)
				dp.SetStartTimestamp(at(0))
				dp.SetTimestamp(at(biMinute(1)))
				return md
			},
			bad: func(ms pmetric.MetricSlice) {
				// The same delta again (a retried batch): counted once.
				dp := addCounter(ms, "retried", delta).AppendEmpty()
				dp.SetIntValue(5)
				dp.SetStartTimestamp(at(0))
				dp.SetTimestamp(at(biMinute(1)))
				dps := addDescribed(ms, "same.time", "").SetEmptyGauge().DataPoints()
				for _, v := range []int64{1, 2} {
					dp := dps.AppendEmpty()
					dp.SetIntValue(v)
					dp.SetTimestamp(at(biMinute(1)))
				}
			},
			dropped:  map[convert.Reason]int64{convert.OutOfOrder: 1},
			families: []string{"retried_total", "same_time"},
			check: func(t *testing.T, st *storetest.Store) {
				assert.Equal(t, map[string]float64{biAgentLabels: 5}, values(st, "retried_total"))
				assert.Equal(t, map[string]float64{biAgentLabels: 2}, values(st, "same_time"))
			},
		},
	}
}
