package convert_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/convert"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/prommodel"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/storetest"
)

const (
	cumulative  = pmetric.AggregationTemporalityCumulative
	delta       = pmetric.AggregationTemporalityDelta
	unspecified = pmetric.AggregationTemporalityUnspecified
)

// TestSums: a cumulative monotonic sum is a counter, a non-monotonic one a
// gauge (negative values too). A non-monotonic delta, or a sum without
// temporality, cannot be made cumulative and is refused; a counter cannot
// be negative or NaN, and a delta without a start cannot be placed.
func TestSums(t *testing.T) {
	tests := []struct {
		name   string
		metric func(pmetric.MetricSlice)
		family string
		kind   prommodel.Kind
		want   storetest.Series
		drop   map[convert.Reason]int64
	}{
		{"cumulative monotonic", sum("c", "", cumulative, true, pt{start: 1, end: 10, v: 7}),
			"c_total", prommodel.KindCounter, storetest.Series{Value: 7, Start: ns(1), Timestamp: ns(10)}, nil},
		{"cumulative non-monotonic", sum("c", "", cumulative, false, pt{start: 1, end: 10, v: -3}),
			"c", prommodel.KindGauge, storetest.Series{Value: -3, Start: ns(1), Timestamp: ns(10)}, nil},
		{"delta non-monotonic", sum("c", "", delta, false, pt{start: 1, end: 10, v: 1}, pt{start: 1, end: 10, v: 2}),
			"", 0, storetest.Series{}, map[convert.Reason]int64{convert.UnsupportedTemporality: 2}},
		{"no temporality", sum("c", "", unspecified, true, pt{start: 1, end: 10, v: 1}),
			"", 0, storetest.Series{}, map[convert.Reason]int64{convert.UnsupportedTemporality: 1}},
		{"negative counter", sum("c", "", cumulative, true, pt{start: 1, end: 10, v: -1}),
			"c_total", prommodel.KindCounter, storetest.Series{}, map[convert.Reason]int64{convert.Invalid: 1}},
		{"NaN counter", sum("c", "", cumulative, true, pt{start: 1, end: 10, v: math.NaN()}),
			"c_total", prommodel.KindCounter, storetest.Series{}, map[convert.Reason]int64{convert.Invalid: 1}},
		{"delta without a start", sum("c", "", delta, true, pt{end: 10, v: 1}),
			"c_total", prommodel.KindCounter, storetest.Series{}, map[convert.Reason]int64{convert.Invalid: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := newStore(t, storetest.UnderscoreEscapingWithSuffixes)
			stats := st.Consume(batch(agent(), tt.metric))
			assert.Equal(t, dropped(tt.drop), stats.Dropped)
			if tt.family == "" {
				assert.Empty(t, st.FamilyNames())
				return
			}
			f := st.FamilyNamed(tt.family)
			if tt.drop != nil {
				// A family left without series is forgotten at once.
				assert.Nil(t, f, "families: %v", st.FamilyNames())
				return
			}
			require.NotNil(t, f, "families: %v", st.FamilyNames())
			assert.Equal(t, tt.kind, f.Kind)
			assert.Equal(t, map[string]storetest.Series{agentLabels: tt.want}, st.Series(tt.family))
		})
	}
}

// TestCumulativeCounter: each point replaces the value; an older point is
// refused as out of order; a new start time is a reset, stored with its
// lower value and the new start.
func TestCumulativeCounter(t *testing.T) {
	st := newStore(t, storetest.UnderscoreEscapingWithSuffixes)
	steps := []struct {
		p       pt
		stats   convert.Stats
		want    storetest.Series
		comment string
	}{
		{pt{start: 1, end: 10, v: 10}, convert.Stats{Created: 1}, storetest.Series{Value: 10, Start: ns(1), Timestamp: ns(10)}, "first point"},
		{pt{start: 1, end: 20, v: 15}, convert.Stats{Updated: 1}, storetest.Series{Value: 15, Start: ns(1), Timestamp: ns(20)}, "newer point"},
		{pt{start: 1, end: 15, v: 99}, convert.Stats{Dropped: dropped(map[convert.Reason]int64{convert.OutOfOrder: 1})},
			storetest.Series{Value: 15, Start: ns(1), Timestamp: ns(20)}, "older point refused"},
		{pt{start: 25, end: 30, v: 2}, convert.Stats{Updated: 1}, storetest.Series{Value: 2, Start: ns(25), Timestamp: ns(30)}, "reset: new start"},
	}
	for _, s := range steps {
		stats := st.Consume(batch(agent(), counter("c", "", s.p)))
		assert.Equal(t, s.stats, stats, s.comment)
		assert.Equal(t, map[string]storetest.Series{agentLabels: s.want}, st.Series("c_total"), s.comment)
		st.Advance(time.Minute)
	}
}

// TestDeltaCounterAccumulates: a monotonic delta is made cumulative. A
// point that starts where the stored one ended adds to it and keeps the
// run's start; a retried point (as old as the stored one) is refused; one
// after a gap starts a new run. RunStarted is the store clock of the batch
// that began the run.
func TestDeltaCounterAccumulates(t *testing.T) {
	st := newStore(t, storetest.UnderscoreEscapingWithSuffixes)
	send := func(p pt) convert.Stats {
		return st.Consume(batch(agent(), sum("c", "", delta, true, p)))
	}
	series := func() storetest.Series { return st.Series("c_total")[agentLabels] }

	firstRun := st.Now()
	assert.Equal(t, convert.Stats{Created: 1}, send(pt{start: 1, end: 10, v: 5}))
	assert.Equal(t, storetest.Series{Value: 5, Start: ns(1), Timestamp: ns(10), RunStarted: firstRun, Delta: true}, series())
	assert.Equal(t, st.Now(), st.DeltasAt())
	assert.Equal(t, st.Now(), st.RunAt())

	st.Advance(time.Minute)
	assert.Equal(t, convert.Stats{Updated: 1}, send(pt{start: 10, end: 20, v: 3}))
	assert.Equal(t, storetest.Series{Value: 8, Start: ns(1), Timestamp: ns(20), RunStarted: firstRun, Delta: true}, series())
	assert.Equal(t, st.Now(), st.DeltasAt())
	assert.Equal(t, firstRun, st.RunAt(), "no new run")

	st.Advance(time.Minute)
	assert.Equal(t, convert.Stats{Dropped: dropped(map[convert.Reason]int64{convert.OutOfOrder: 1})}, send(pt{start: 10, end: 20, v: 3}))
	assert.Equal(t, 8.0, series().Value, "a retried delta is not counted twice")

	st.Advance(time.Minute)
	assert.Equal(t, convert.Stats{Updated: 1}, send(pt{start: 25, end: 30, v: 2}))
	assert.Equal(t, storetest.Series{Value: 2, Start: ns(25), Timestamp: ns(30), RunStarted: st.Now(), Delta: true}, series())
	assert.Equal(t, st.Now(), st.RunAt())
}

// TestHistogram: bucket counts are stored cumulative, one per bound (the
// +Inf bucket is the count), with bounds shared by the series of one
// layout; a new layout replaces the old; unsorted bounds are sorted and a
// repeated one counts its first bucket, as contrib does; a +Inf bound is
// no bound; a point
// without buckets keeps count and sum only; buckets that disagree with the
// count are refused.
func TestHistogram(t *testing.T) {
	st := newStore(t, storetest.UnderscoreEscapingWithoutSuffixes)
	a, b := map[string]any{"k": "a"}, map[string]any{"k": "b"}
	la, lb := agentLabels+`,k="a"`, agentLabels+`,k="b"`
	bounds := []float64{0.1, 1, 10}

	stats := st.Consume(batch(agent(), histogram("h", "", cumulative,
		hp{attrs: a, start: 1, end: 10, bounds: bounds, counts: []uint64{1, 2, 3, 4}, count: 10, sum: 25.5},
		hp{attrs: b, start: 1, end: 10, bounds: bounds, counts: []uint64{0, 0, 0, 1}, count: 1, sum: 100},
	)))
	assert.Equal(t, int64(2), stats.Created)
	got := st.Series("h")
	require.Len(t, got, 2)
	require.NotNil(t, got[la].Bounds)
	assert.Equal(t, []float64{0.1, 1, 10}, got[la].Bounds.Values)
	assert.Equal(t, []string{"0.1", "1", "10"}, got[la].Bounds.Text)
	assert.Same(t, got[la].Bounds, got[lb].Bounds, "one layout, one Bounds")
	assert.Equal(t, []uint64{1, 3, 6}, got[la].Cumulative)
	assert.Equal(t, []uint64{0, 0, 0}, got[lb].Cumulative)
	assert.Equal(t, []any{uint64(10), 25.5, ns(1), ns(10)}, []any{got[la].Count, got[la].Value, got[la].Start, got[la].Timestamp})
	assert.Equal(t, []any{uint64(1), 100.0}, []any{got[lb].Count, got[lb].Value})

	steps := []struct {
		name       string
		p          hp
		drop       map[convert.Reason]int64
		bounds     []float64 // nil: no buckets
		cumulative []uint64
		count      uint64
		sum        float64
	}{
		{"new bounds", hp{bounds: []float64{1, 5}, counts: []uint64{2, 2, 1}, count: 5, sum: 7}, nil, []float64{1, 5}, []uint64{2, 4}, 5, 7},
		{"unsorted, repeated bounds: sorted, each bucket counted at its bound's first place", hp{bounds: []float64{5, 1, 5}, counts: []uint64{1, 2, 3, 4}, count: 10, sum: 6},
			nil, []float64{1, 5}, []uint64{2, 3}, 10, 6},
		{"+Inf bound", hp{bounds: []float64{1, math.Inf(1)}, counts: []uint64{1, 2, 0}, count: 3, sum: 8}, nil, []float64{1}, []uint64{1}, 3, 8},
		{"no buckets", hp{count: 4, sum: 9}, nil, nil, nil, 4, 9},
		{"buckets above the count", hp{bounds: []float64{1}, counts: []uint64{1, 2}, count: 2, sum: 10},
			map[convert.Reason]int64{convert.Invalid: 1}, nil, nil, 4, 9},
		{"a bucket missing", hp{bounds: []float64{1, 2}, counts: []uint64{1, 1}, count: 2, sum: 10},
			map[convert.Reason]int64{convert.Invalid: 1}, nil, nil, 4, 9},
	}
	for i, s := range steps {
		s.p.attrs, s.p.start, s.p.end = a, 1, 20+i
		stats := st.Consume(batch(agent(), histogram("h", "", cumulative, s.p)))
		assert.Equal(t, dropped(s.drop), stats.Dropped, s.name)
		got := st.Series("h")[la]
		if s.bounds == nil {
			assert.Nil(t, got.Bounds, s.name)
		} else if assert.NotNil(t, got.Bounds, s.name) {
			assert.Equal(t, s.bounds, got.Bounds.Values, s.name)
		}
		assert.Equal(t, s.cumulative, got.Cumulative, s.name)
		assert.Equal(t, []any{s.count, s.sum}, []any{got.Count, got.Value}, s.name)
	}
}

// TestDeltaHistogramAccumulates: aligned deltas of one layout add up; a
// delta of another layout starts again.
func TestDeltaHistogramAccumulates(t *testing.T) {
	st := newStore(t, storetest.UnderscoreEscapingWithoutSuffixes)
	send := func(p hp) storetest.Series {
		stats := st.Consume(batch(agent(), histogram("h", "", delta, p)))
		assert.Equal(t, [convert.NumReasons]int64{}, stats.Dropped)
		return st.Series("h")[agentLabels]
	}
	run := st.Now()
	got := send(hp{start: 1, end: 10, bounds: []float64{1}, counts: []uint64{1, 1}, count: 2, sum: 3})
	assert.Equal(t, []any{[]uint64{1}, uint64(2), 3.0, ns(1), run, true}, []any{got.Cumulative, got.Count, got.Value, got.Start, got.RunStarted, got.Delta})

	st.Advance(time.Minute)
	got = send(hp{start: 10, end: 20, bounds: []float64{1}, counts: []uint64{2, 0}, count: 2, sum: 1})
	assert.Equal(t, []any{[]uint64{3}, uint64(4), 4.0, ns(1), ns(20), run}, []any{got.Cumulative, got.Count, got.Value, got.Start, got.Timestamp, got.RunStarted})

	st.Advance(time.Minute)
	got = send(hp{start: 20, end: 30, bounds: []float64{2}, counts: []uint64{1, 0}, count: 1, sum: 1})
	assert.Equal(t, []any{[]float64{2}, []uint64{1}, uint64(1), 1.0, ns(20), st.Now()},
		[]any{got.Bounds.Values, got.Cumulative, got.Count, got.Value, got.Start, got.RunStarted}, "a new layout starts a new run")
}

// TestExponentialHistogram: scale is the native schema, finer scales
// downscaled to 8 by merging neighbours, coarser than -4 refused; OTLP
// bucket index i is Prometheus index i+1; a zero threshold of 0 is
// Prometheus' default 1e-128. Points that Prometheus would refuse are
// counted Invalid.
func TestExponentialHistogram(t *testing.T) {
	tests := []struct {
		name string
		p    ep
		want *store.NativeHistogram // nil: refused
	}{
		{"layout", ep{scale: 3, zeroCount: 1, posOffset: -2, pos: []uint64{1, 2, 3}, negOffset: 0, neg: []uint64{4}, count: 11, sum: 2},
			&store.NativeHistogram{Schema: 3, ZeroThreshold: 1e-128, ZeroCount: 1,
				Positive: store.Buckets{Offset: -1, Counts: []uint64{1, 2, 3}}, Negative: store.Buckets{Offset: 1, Counts: []uint64{4}}}},
		{"zero bucket only", ep{scale: 0, zeroThreshold: 0.001, zeroCount: 2, count: 2},
			&store.NativeHistogram{Schema: 0, ZeroThreshold: 0.001, ZeroCount: 2}},
		{"scale 10 downscaled to 8: four buckets in one", ep{scale: 10, posOffset: 0, pos: []uint64{1, 1, 1, 1, 1}, count: 5},
			&store.NativeHistogram{Schema: 8, ZeroThreshold: 1e-128, Positive: store.Buckets{Offset: 1, Counts: []uint64{4, 1}}}},
		{"scale 9 downscaled, negative indices", ep{scale: 9, posOffset: -3, pos: []uint64{1, 1, 1}, count: 3},
			&store.NativeHistogram{Schema: 8, ZeroThreshold: 1e-128, Positive: store.Buckets{Offset: -1, Counts: []uint64{1, 2}}}},
		{"scale -4", ep{scale: -4, posOffset: 0, pos: []uint64{1}, count: 1},
			&store.NativeHistogram{Schema: -4, ZeroThreshold: 1e-128, Positive: store.Buckets{Offset: 1, Counts: []uint64{1}}}},
		{"scale -5", ep{scale: -5, posOffset: 0, pos: []uint64{1}, count: 1}, nil},
		{"buckets not the count", ep{scale: 0, pos: []uint64{1, 1}, count: 3}, nil},
		{"negative zero threshold", ep{scale: 0, zeroThreshold: -1, zeroCount: 1, count: 1}, nil},
		{"NaN zero threshold", ep{scale: 0, zeroThreshold: math.NaN(), zeroCount: 1, count: 1}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := newStore(t, storetest.UnderscoreEscapingWithoutSuffixes)
			stats := st.Consume(batch(agent(), exponential("e", tt.p)))
			f := st.FamilyNamed("e")
			if tt.want == nil {
				assert.Equal(t, dropped(map[convert.Reason]int64{convert.Invalid: 1}), stats.Dropped)
				assert.Nil(t, f, "a family left without series is forgotten at once")
				return
			}
			require.NotNil(t, f)
			assert.Equal(t, prommodel.KindHistogram, f.Kind)
			assert.Equal(t, [convert.NumReasons]int64{}, stats.Dropped)
			got := st.Series("e")[agentLabels+`,point="0"`]
			assert.Equal(t, tt.want, got.Native)
			assert.Nil(t, got.Bounds)
			assert.Equal(t, []any{tt.p.count, tt.p.sum, ns(1), ns(10)}, []any{got.Count, got.Value, got.Start, got.Timestamp})
		})
	}
}

// TestSummary: quantiles, count and sum as sent; the next point's
// quantiles replace them.
func TestSummary(t *testing.T) {
	st := newStore(t, storetest.UnderscoreEscapingWithSuffixes)
	send := func(end int, count uint64, total float64, quantiles ...store.Quantile) {
		md := batch(agent())
		m := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().AppendEmpty()
		m.SetName("rpc.latency")
		m.SetUnit("s")
		dp := m.SetEmptySummary().DataPoints().AppendEmpty()
		dp.SetStartTimestamp(at(1))
		dp.SetTimestamp(at(end))
		dp.SetCount(count)
		dp.SetSum(total)
		for _, q := range quantiles {
			v := dp.QuantileValues().AppendEmpty()
			v.SetQuantile(q.Quantile)
			v.SetValue(q.Value)
		}
		assert.Equal(t, [convert.NumReasons]int64{}, st.Consume(md).Dropped)
	}
	send(10, 7, 12.5, store.Quantile{Quantile: 0.5, Value: 1.2}, store.Quantile{Quantile: 0.99, Value: 3.4})
	f := st.FamilyNamed("rpc_latency_seconds")
	require.NotNil(t, f)
	assert.Equal(t, prommodel.KindSummary, f.Kind)
	assert.Equal(t, map[string]storetest.Series{agentLabels: {
		Value: 12.5, Count: 7, Start: ns(1), Timestamp: ns(10),
		Quantiles: []store.Quantile{{Quantile: 0.5, Value: 1.2}, {Quantile: 0.99, Value: 3.4}},
	}}, st.Series("rpc_latency_seconds"))

	send(20, 9, 14, store.Quantile{Quantile: 0.5, Value: 2})
	assert.Equal(t, map[string]storetest.Series{agentLabels: {
		Value: 14, Count: 9, Start: ns(1), Timestamp: ns(20),
		Quantiles: []store.Quantile{{Quantile: 0.5, Value: 2}},
	}}, st.Series("rpc_latency_seconds"))
}

// TestExemplars: a counter and a histogram keep the exemplars of their
// latest point, labelled with span_id and trace_id in hex; a gauge keeps
// none, as the specification drops them on other points.
func TestExemplars(t *testing.T) {
	trace := pcommon.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	span := pcommon.SpanID{0xa, 0xb, 0xc, 0xd, 0xe, 0xf, 0x10, 0x11}
	const ids = `span_id="0a0b0c0d0e0f1011",trace_id="0102030405060708090a0b0c0d0e0f10"`

	st := newStore(t, storetest.UnderscoreEscapingWithoutSuffixes)
	st.Consume(batch(agent(),
		counter("c", "", pt{start: 1, end: 10, v: 1, exemplars: []ex{{v: 1, at: 5, trace: trace, span: span}}}),
		gauge("g", "", pt{end: 10, v: 1, exemplars: []ex{{v: 1, at: 5, trace: trace, span: span}}}),
		sum("updown", "", cumulative, false, pt{start: 1, end: 10, v: 1, exemplars: []ex{{v: 1, at: 5, trace: trace, span: span}}}),
		histogram("h", "", cumulative, hp{start: 1, end: 10, bounds: []float64{1}, counts: []uint64{1, 1}, count: 2, sum: 5.5,
			exemplars: []ex{{v: 0.5, at: 6, trace: trace, span: span}, {v: 5, at: 7}}}),
	))
	assert.Equal(t, []store.Exemplar{{Labels: labelSet(t, ids), Value: 1, Timestamp: ns(5)}}, st.Series("c")[agentLabels].Exemplars)
	assert.Nil(t, st.Series("g")[agentLabels].Exemplars)
	assert.Nil(t, st.Series("updown")[agentLabels].Exemplars)
	assert.Equal(t, []store.Exemplar{{Labels: labelSet(t, ids), Value: 0.5, Timestamp: ns(6)}, {Labels: labelSet(t, ""), Value: 5, Timestamp: ns(7)}},
		st.Series("h")[agentLabels].Exemplars, "one per bucket, in the point's order; no ids, no labels")

	st.Consume(batch(agent(),
		counter("c", "", pt{start: 1, end: 20, v: 2, exemplars: []ex{{v: 2, at: 15, trace: trace}}}),
		histogram("h", "", cumulative, hp{start: 1, end: 20, bounds: []float64{1}, counts: []uint64{1, 1}, count: 2, sum: 5.5}),
	))
	assert.Equal(t, []store.Exemplar{{Labels: labelSet(t, `trace_id="0102030405060708090a0b0c0d0e0f10"`), Value: 2, Timestamp: ns(15)}},
		st.Series("c")[agentLabels].Exemplars, "the latest point's")
	assert.Empty(t, st.Series("h")[agentLabels].Exemplars, "a point without exemplars leaves none")
}

// labelSet is the set written as text.
func labelSet(t *testing.T, text string) store.LabelSet {
	t.Helper()
	s, ok := storetest.ParseLabels(text)
	require.True(t, ok, text)
	return s
}
