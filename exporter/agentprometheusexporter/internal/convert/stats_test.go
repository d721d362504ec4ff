package convert_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/convert"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/prommodel"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/storetest"
)

// kv is the attributes k=v.
func kv(v string) map[string]any { return map[string]any{"k": v} }

// TestTypeConflict: the first family of a name keeps it; the points of a
// metric of another kind under that name, or of one whose name is a name
// the family writes (x_count of a histogram x), are counted TypeConflict
// and named in Conflicts, and the rest of the batch is stored.
func TestTypeConflict(t *testing.T) {
	p := func(v string) pt { return pt{attrs: kv(v), start: 1, end: 10, v: 1} }
	tests := []struct {
		name      string
		naming    storetest.Naming
		claims    prommodel.Claims
		batches   []pmetric.Metrics
		conflicts int64
		names     []string // reported in Conflicts
		families  []string
	}{
		{"gauge then counter of one name", storetest.UnderscoreEscapingWithoutSuffixes, prommodel.Claims{},
			[]pmetric.Metrics{batch(agent(), gauge("x", "", p("a")), counter("x", "", p("a"), p("b")), gauge("y", "", p("a")))},
			2, []string{"x"}, []string{"x", "y"}},
		{"across batches", storetest.UnderscoreEscapingWithoutSuffixes, prommodel.Claims{},
			[]pmetric.Metrics{batch(agent(), counter("x", "", p("a"))), batch(agent(), gauge("x", "", p("a")), gauge("y", "", p("a")))},
			1, []string{"x"}, []string{"x", "y"}},
		{"a histogram's _count", storetest.UnderscoreEscapingWithSuffixes, prommodel.Claims{},
			[]pmetric.Metrics{batch(agent(),
				histogram("lat", "", cumulative, hp{end: 1, count: 1, sum: 1}),
				gauge("lat_count", "", p("a")), gauge("lat_sum", "", p("a")), gauge("lat_bucket", "", p("a")), gauge("y", "", p("a")))},
			3, []string{"lat_count", "lat_sum", "lat_bucket"}, []string{"lat", "y"}},
		{"suffixes keep counter and gauge apart", storetest.UnderscoreEscapingWithSuffixes, prommodel.Claims{},
			[]pmetric.Metrics{batch(agent(), gauge("x", "", p("a")), counter("x", "", p("a")), gauge("y", "", p("a")))},
			0, nil, []string{"x", "x_total", "y"}},
		{"x_total beside a counter x when OpenMetrics is served", storetest.UnderscoreEscapingWithoutSuffixes, prommodel.Claims{OpenMetrics: true},
			[]pmetric.Metrics{batch(agent(), counter("x", "", p("a")), gauge("x_total", "", p("a")), gauge("y", "", p("a")))},
			1, []string{"x_total"}, []string{"x", "y"}},
		{"x_total beside a counter x without OpenMetrics", storetest.UnderscoreEscapingWithoutSuffixes, prommodel.Claims{},
			[]pmetric.Metrics{batch(agent(), counter("x", "", p("a")), gauge("x_total", "", p("a")), gauge("y", "", p("a")))},
			0, nil, []string{"x", "x_total", "y"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := storetest.New(t, storetest.Options{Naming: tt.naming, WithoutScopeInfo: true, Claims: tt.claims})
			var total [convert.NumReasons]int64
			var names []string
			for _, md := range tt.batches {
				stats := st.Consume(md)
				for r, n := range stats.Dropped {
					total[r] += n
				}
				names = append(names, stats.Conflicts...)
			}
			assert.Equal(t, dropped(map[convert.Reason]int64{convert.TypeConflict: tt.conflicts}), total)
			assert.Equal(t, tt.names, names)
			assert.Equal(t, tt.families, st.FamilyNames())
			assert.Equal(t, map[string]storetest.Series{agentLabels + `,k="a"`: {Value: 1, Start: ns(1), Timestamp: ns(10)}}, st.Series("y"))
		})
	}
}

// TestConflictNamesAreFew: Conflicts names a few families, for a log line,
// however many conflict; the count has them all.
func TestConflictNamesAreFew(t *testing.T) {
	st := newStore(t, storetest.UnderscoreEscapingWithoutSuffixes)
	var gauges, counters []func(pmetric.MetricSlice)
	for i := range 10 {
		gauges = append(gauges, gauge(fmt.Sprint("m", i), "", pt{end: 1, v: 1}))
		counters = append(counters, counter(fmt.Sprint("m", i), "", pt{end: 1, v: 1}))
	}
	st.Consume(batch(agent(), gauges...))
	stats := st.Consume(batch(agent(), counters...))
	assert.Equal(t, int64(10), stats.Dropped[convert.TypeConflict])
	assert.Equal(t, []string{"m0", "m1", "m2", "m3"}, stats.Conflicts)
}

// TestRefusedMaxSeries: past MaxSeries new series are refused and counted,
// existing ones still update, and a removed series makes room.
func TestRefusedMaxSeries(t *testing.T) {
	st := storetest.New(t, storetest.Options{Naming: storetest.UnderscoreEscapingWithoutSuffixes, WithoutScopeInfo: true, MaxSeries: 3})
	points := func(end int, keys ...string) []pt {
		var out []pt
		for _, k := range keys {
			out = append(out, pt{attrs: kv(k), end: end, v: float64(end)})
		}
		return out
	}
	refused := func(n int64) [convert.NumReasons]int64 {
		return dropped(map[convert.Reason]int64{convert.RefusedMaxSeries: n})
	}

	stats := st.Consume(batch(agent(), gauge("g", "", points(1, "0", "1", "2", "3", "4")...), gauge("h", "", points(1, "0")...)))
	assert.Equal(t, convert.Stats{Created: 3, Dropped: refused(3)}, stats)
	assert.Equal(t, int64(3), st.SeriesCount())
	assert.Equal(t, []string{agentLabels + `,k="0"`, agentLabels + `,k="1"`, agentLabels + `,k="2"`}, labelsOf(t, st, "g"))

	stats = st.Consume(batch(agent(), gauge("g", "", points(2, "0", "1", "2", "3")...)))
	assert.Equal(t, convert.Stats{Updated: 3, Dropped: refused(1)}, stats)
	assert.Equal(t, 2.0, st.Series("g")[agentLabels+`,k="2"`].Value)

	gone := pt{attrs: kv("0"), end: 3, noValue: true}
	stats = st.Consume(batch(agent(), gauge("g", "", append([]pt{gone}, points(3, "3")...)...)))
	assert.Equal(t, convert.Stats{Removed: 1, Created: 1}, stats)
	assert.Equal(t, []string{agentLabels + `,k="1"`, agentLabels + `,k="2"`, agentLabels + `,k="3"`}, labelsOf(t, st, "g"))
}

// TestBadPointsDoNotDropTheirBatch: each point that cannot be stored is
// counted for its reason and skipped alone; the batch's other points are
// stored under their own labels, and stay so when the next batch of the
// same shape has them at the same positions.
func TestBadPointsDoNotDropTheirBatch(t *testing.T) {
	st := newStore(t, storetest.UnderscoreEscapingWithoutSuffixes)
	send := func(end int, bad bool) convert.Stats {
		v := float64(end)
		neg, wrongCount := v, uint64(1)
		if bad {
			neg, wrongCount = -1, 5
		}
		return st.Consume(batch(agent(),
			counter("c", "",
				pt{attrs: kv("a"), start: 1, end: end, v: v},
				pt{attrs: kv("b"), start: 1, end: end, v: neg},
				pt{attrs: map[string]any{"k": "c", "__": "x"}, start: 1, end: end, v: v},
				pt{attrs: kv("d"), start: 1, end: end, v: v}),
			sum("updown", "", delta, false, pt{attrs: kv("a"), start: 1, end: end, v: v}),
			histogram("h", "", cumulative,
				hp{attrs: kv("a"), start: 1, end: end, bounds: []float64{1}, counts: []uint64{1, 0}, count: wrongCount},
				hp{attrs: kv("b"), start: 1, end: end, bounds: []float64{1}, counts: []uint64{1, 0}, count: 1}),
			exponential("e", ep{scale: -5, pos: []uint64{1}, count: 1}),
			gauge("g", "", pt{attrs: kv("a"), end: end, v: v}),
		))
	}

	stats := send(10, true)
	assert.Equal(t, int64(4), stats.Created, "c a and d, h b, g a")
	assert.Equal(t, dropped(map[convert.Reason]int64{
		convert.Invalid: 3, convert.InvalidName: 1, convert.UnsupportedTemporality: 1,
	}), stats.Dropped)
	assert.Equal(t, []string{agentLabels + `,k="a"`, agentLabels + `,k="d"`}, labelsOf(t, st, "c"))
	assert.Equal(t, 10.0, st.Series("c")[agentLabels+`,k="d"`].Value)
	assert.Equal(t, []string{agentLabels + `,k="b"`}, labelsOf(t, st, "h"))
	assert.Equal(t, 10.0, st.Series("g")[agentLabels+`,k="a"`].Value)

	stats = send(20, false)
	assert.Equal(t, convert.Stats{
		Created: 2, Updated: 4,
		Dropped: dropped(map[convert.Reason]int64{convert.Invalid: 1, convert.InvalidName: 1, convert.UnsupportedTemporality: 1}),
	}, stats)
	for _, k := range []string{"a", "b", "d"} {
		assert.Equal(t, 20.0, st.Series("c")[agentLabels+`,k="`+k+`"`].Value, k)
	}
	assert.Equal(t, []string{agentLabels + `,k="a"`, agentLabels + `,k="b"`}, labelsOf(t, st, "h"))
}

// TestNoRecordedValue: a point flagged NoRecordedValue removes its series
// alone, whatever its value, and creates none; the resource's target_info
// goes with its last series.
func TestNoRecordedValue(t *testing.T) {
	st := newStore(t, storetest.UnderscoreEscapingWithoutSuffixes)
	stats := st.Consume(batch(agent(),
		counter("c", "", pt{attrs: kv("a"), start: 1, end: 10, v: 1}, pt{attrs: kv("b"), start: 1, end: 10, v: 1}),
		histogram("h", "", cumulative, hp{attrs: kv("a"), start: 1, end: 10, bounds: []float64{1}, counts: []uint64{1, 0}, count: 1})))
	assert.Equal(t, int64(3), stats.Created)
	assert.Len(t, st.TargetInfos(), 1)

	stats = st.Consume(batch(agent(),
		counter("c", "",
			pt{attrs: kv("a"), start: 1, end: 20, v: -1, noValue: true},
			pt{attrs: kv("b"), start: 1, end: 20, v: 2},
			pt{attrs: kv("never"), start: 1, end: 20, noValue: true}),
		histogram("h", "", cumulative, hp{attrs: kv("a"), start: 1, end: 20, count: 99, counts: []uint64{1}, noValue: true})))
	assert.Equal(t, convert.Stats{Removed: 2, Updated: 1}, stats)
	assert.Equal(t, map[string]storetest.Series{agentLabels + `,k="b"`: {Value: 2, Start: ns(1), Timestamp: ns(20)}}, st.Series("c"))
	assert.Empty(t, st.Series("h"))
	assert.Len(t, st.TargetInfos(), 1)

	st.Consume(batch(agent(), counter("c", "", pt{attrs: kv("b"), start: 1, end: 30, noValue: true})))
	assert.Empty(t, st.Series("c"))
	assert.Empty(t, st.TargetInfos(), "a resource without series has no target_info")
}

// TestARefusedMetricLeavesNoFamily: a metric none of whose points is stored
// leaves no family behind to hold its name and type, so the same name of
// another type is stored at once rather than refused as a conflict until
// the next sweep.
func TestARefusedMetricLeavesNoFamily(t *testing.T) {
	st := newStore(t, storetest.UnderscoreEscapingWithoutSuffixes)
	stats := st.Consume(batch(agent(), counter("x", "", pt{end: 1, v: -1})))
	assert.Equal(t, dropped(map[convert.Reason]int64{convert.Invalid: 1}), stats.Dropped)
	assert.Empty(t, st.FamilyNames())
	stats = st.Consume(batch(agent(), gauge("x", "", pt{end: 2, v: 5})))
	assert.Equal(t, dropped(nil), stats.Dropped)
	require.NotNil(t, st.FamilyNamed("x"))
	assert.Equal(t, prommodel.KindGauge, st.FamilyNamed("x").Kind)
}
