package aggregate // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/aggregate"

import (
	"math"
	"slices"
	"sync/atomic"

	"github.com/prometheus/prometheus/model/histogram"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/prommodel"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
)

// Kind is what a group adds up.
type Kind uint8

const (
	KindCounter   Kind = iota // monotonic sums
	KindHistogram             // classic histograms, bucket by bucket
	KindNative                // exponential histograms, as native histograms
	KindGauge                 // gauges, by the rule's function
	numKinds
)

// maxExact is the largest count a group holds: beyond 2^53 a float64, which
// every exposition format writes, no longer tells one count from the next.
const maxExact = 1 << 53

// startOffset places a group's start (its created timestamp) before its
// creation: its zero is shown at start + 1 ms and its first value at its
// creation, later at millisecond resolution (store.CanHold).
const startOffset = int64(2e6)

// Group is one aggregated series: the sum of its sources. Its value lives in
// its store series; the group is what finds that series again, and creates
// it anew (a new run from zero) when the store removed it. A group's fields
// change under its family's lock, which every writer of the series holds.
type Group struct {
	a    *Aggregator
	rule *Rule
	kind Kind
	// The family: found by name, type, help and unit.
	name, help, unit string
	storeKind        prommodel.Kind
	key              string // in the registry: family, then labels
	labels           store.LabelSet
	series           *store.Series
	// bounds are a classic histogram group's; nil for count and sum only.
	bounds *store.Bounds

	// Gauges: the members' values (NaN for a free place) and their sum.
	values []float64
	free   []int32
	sum    float64

	// sources counts the sources that add to the group on every replica's
	// part that is this one: the registry forgets a group without any.
	sources atomic.Int64
}

// Rule is the rule that made the group.
func (g *Group) Rule() *Rule { return g.rule }

// Bounds are a classic histogram group's bucket bounds, nil for none.
func (g *Group) Bounds() *store.Bounds { return g.bounds }

// Kind is what the group adds up.
func (g *Group) Kind() Kind { return g.kind }

// live returns the group's series, marked updated at now, or creates it
// again when the store removed it: a new run from zero, shown to every
// scraper as its zero first. nil when the store refuses it (a limit).
// Call with the group's family open in w.
func (g *Group) live(w *store.Writer, now int64) *store.Series {
	if g.series != nil && w.Touch(g.series) {
		return g.series
	}
	s, outcome := w.Put(g.labels.Labels())
	if s == nil {
		g.series = nil
		return nil
	}
	g.adopt(s, outcome, now)
	return s
}

// adopt makes s the group's series: a new run from zero when the store
// created it, else the series of a group that had lost its sources, whose
// value goes on.
func (g *Group) adopt(s *store.Series, outcome store.Outcome, now int64) {
	g.series = s
	if outcome == store.Created {
		g.begin(s, now)
	}
}

// begin makes s a new run of the group from zero.
func (g *Group) begin(s *store.Series, now int64) {
	s.Value, s.Count, s.Timestamp = 0, 0, now
	s.Start = now - startOffset
	switch g.kind {
	case KindGauge:
		s.Start = 0
		s.Value = g.gaugeValue()
	case KindHistogram:
		if g.bounds != nil {
			s.Histogram = &store.Histogram{Bounds: g.bounds, Cumulative: make([]uint64, len(g.bounds.Values))}
		}
	case KindNative:
		s.SetNative(&store.NativeHistogram{ZeroThreshold: defaultZeroThreshold})
	}
	if g.kind != KindGauge {
		// Its value exists nowhere else: every scraper sees the run's zero
		// before its value, and shutdown and departures wait for the
		// scrapers to take it, as for accumulated deltas.
		s.Delta, s.RunStarted = true, now
		g.a.store.NoteDeltas(now, true)
	}
}

// stamp moves the series' timestamp to now, never back.
func stamp(s *store.Series, now int64) { s.Timestamp = max(s.Timestamp, now) }

// addCounter adds inc to a counter group.
func (g *Group) addCounter(w *store.Writer, inc float64, now int64) Reason {
	s := g.live(w, now)
	if s == nil {
		return GroupRefused
	}
	if v := s.Value + inc; !(v >= s.Value) || math.IsInf(v, 0) {
		return Overflow
	}
	s.Value += inc
	stamp(s, now)
	return Aggregated
}

// addHistogram adds an increment of count, sum and cumulative bucket
// counts to a classic histogram group.
func (g *Group) addHistogram(w *store.Writer, count uint64, sum float64, cum []uint64, now int64) Reason {
	s := g.live(w, now)
	if s == nil {
		return GroupRefused
	}
	if count > maxExact-s.Count || math.IsInf(s.Value+sum, 0) {
		return Overflow
	}
	s.Count += count
	s.Value += sum
	if h := s.Histogram; h != nil {
		for i := range h.Cumulative {
			h.Cumulative[i] += cum[i]
		}
	}
	stamp(s, now)
	return Aggregated
}

// addNative adds an increment to a native histogram group, at the lower of
// the two schemas and the wider of the zero buckets, as Prometheus adds
// native histograms.
func (g *Group) addNative(w *store.Writer, inc *histogram.FloatHistogram, now int64) Reason {
	s := g.live(w, now)
	if s == nil {
		return GroupRefused
	}
	if inc.Count > maxExact-float64(s.Count) || math.IsInf(s.Value+inc.Sum, 0) {
		return Overflow
	}
	// The total lives in the series alone: whatever adds to it adds to
	// what is served.
	total := inc.Copy()
	if n := s.Native(); n != nil && (s.Count > 0 || len(n.Positive.Counts)+len(n.Negative.Counts) > 0) {
		// An empty one has no schema to reduce to.
		var err error
		if total, _, _, err = Float(n, s.Count, s.Value).Add(inc); err != nil {
			return Invalid
		}
	}
	total.Compact(0)
	s.SetNative(dense(total, s.Native()))
	s.Count, s.Value = uint64(total.Count), total.Sum
	stamp(s, now)
	return Aggregated
}

// join adds a gauge member of value v and returns its place.
func (g *Group) join(w *store.Writer, v float64, now int64) int32 {
	var m int32
	if n := len(g.free); n > 0 {
		m, g.free = g.free[n-1], g.free[:n-1]
		g.values[m] = v
	} else {
		m = int32(len(g.values))
		g.values = append(g.values, v)
	}
	g.sum += v
	g.writeGauge(w, now)
	return m
}

// setGauge changes member m's value.
func (g *Group) setGauge(w *store.Writer, m int32, v float64, now int64) {
	g.sum += v - g.values[m]
	g.values[m] = v
	g.writeGauge(w, now)
}

// leave removes member m.
func (g *Group) leave(w *store.Writer, m int32, now int64) {
	g.sum -= g.values[m]
	g.values[m] = math.NaN()
	g.free = append(g.free, m)
	if len(g.free) == len(g.values) {
		// Nothing to say: a 0 would be wrong for max and min, and every
		// replica would serve one.
		g.values, g.free, g.sum = g.values[:0], g.free[:0], 0
		if g.series != nil && w.Touch(g.series) {
			w.Delete(g.labels.Labels())
		}
		g.series = nil
		return
	}
	g.writeGauge(w, now)
}

// resum adds the members up again: a running sum of floats drifts with
// rounding as values come and go.
func (g *Group) resum() {
	g.sum = 0
	for _, v := range g.values {
		if !math.IsNaN(v) {
			g.sum += v
		}
	}
}

func (g *Group) writeGauge(w *store.Writer, now int64) {
	if s := g.live(w, now); s != nil {
		s.Value = g.gaugeValue()
		stamp(s, now)
	}
}

// gaugeValue is the members' sum, maximum or minimum; 0 without members.
func (g *Group) gaugeValue() float64 {
	if g.rule.Gauge == GaugeSum {
		return g.sum
	}
	out, any := 0.0, false
	for _, v := range g.values {
		switch {
		case math.IsNaN(v):
		case !any, g.rule.Gauge == GaugeMax && v > out, g.rule.Gauge == GaugeMin && v < out:
			out, any = v, true
		}
	}
	return out
}

// dense writes a native histogram in the store's layout, reusing into's
// bucket slices.
func dense(h *histogram.FloatHistogram, into *store.NativeHistogram) *store.NativeHistogram {
	if into == nil {
		into = &store.NativeHistogram{}
	}
	into.Schema, into.ZeroThreshold, into.ZeroCount = h.Schema, h.ZeroThreshold, uint64(h.ZeroCount)
	into.Positive = denseBuckets(h.PositiveSpans, h.PositiveBuckets, into.Positive.Counts)
	into.Negative = denseBuckets(h.NegativeSpans, h.NegativeBuckets, into.Negative.Counts)
	return into
}

func denseBuckets(spans []histogram.Span, counts []float64, buf []uint64) store.Buckets {
	if len(counts) == 0 {
		return store.Buckets{}
	}
	first := spans[0].Offset
	idx, last := first, first
	for i, sp := range spans {
		if i > 0 {
			idx += sp.Offset
		}
		last = idx + int32(sp.Length) - 1
		idx += int32(sp.Length)
	}
	out := store.Buckets{Offset: first, Counts: slices.Grow(buf[:0], int(last-first+1))[:last-first+1]}
	clear(out.Counts)
	idx, k := first, 0
	for i, sp := range spans {
		if i > 0 {
			idx += sp.Offset
		}
		for j := uint32(0); j < sp.Length; j++ {
			out.Counts[idx-first] = uint64(counts[k])
			idx++
			k++
		}
	}
	return out
}

// Float returns a native histogram in Prometheus' float layout, with its
// count and sum: the form in which groups add them.
func Float(n *store.NativeHistogram, count uint64, sum float64) *histogram.FloatHistogram {
	h := &histogram.FloatHistogram{
		Schema: n.Schema, ZeroThreshold: n.ZeroThreshold, ZeroCount: float64(n.ZeroCount),
		Count: float64(count), Sum: sum,
	}
	h.PositiveSpans, h.PositiveBuckets = sparse(n.Positive)
	h.NegativeSpans, h.NegativeBuckets = sparse(n.Negative)
	return h
}

func sparse(b store.Buckets) ([]histogram.Span, []float64) {
	if len(b.Counts) == 0 {
		return nil, nil
	}
	counts := make([]float64, len(b.Counts))
	for i, c := range b.Counts {
		counts[i] = float64(c)
	}
	return []histogram.Span{{Offset: b.Offset, Length: uint32(len(b.Counts))}}, counts
}

// defaultZeroThreshold is the zero threshold of an empty native histogram,
// as the converter gives an exponential point without one.
const defaultZeroThreshold = 1e-128
