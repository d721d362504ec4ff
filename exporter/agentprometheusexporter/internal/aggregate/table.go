package aggregate // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/aggregate"

import (
	"math"
	"slices"
	"sync"

	"github.com/prometheus/prometheus/model/histogram"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
)

// Number is a counter or gauge point.
type Number struct {
	Start, Time int64
	Value       float64
}

// Hist is a classic histogram point: its bucket counts are cumulative per
// bound of Bounds, with the +Inf bucket in Count.
type Hist struct {
	Start, Time int64
	Count       uint64
	Sum         float64
	Bounds      *store.Bounds // nil without buckets
	Cumulative  []uint64
}

// Native is an exponential histogram point in Prometheus' layout.
type Native struct {
	Start, Time int64
	H           *histogram.FloatHistogram
}

// Grouper finds the group of the point being aggregated: the converter,
// which knows how the point's labels are written. nil when the group's
// series is refused, which the grouper counts itself.
type Grouper interface {
	Group() *Group
}

// Table holds the sources of one agent (resource) and whether this gateway
// counts them: it does while it is the agent's holder in the fleet (always
// when alone), once it knows from where to count (settled).
type Table struct {
	a  *Aggregator
	id store.ID

	mu sync.Mutex
	// now is the gateway clock of the batch or event being applied.
	now int64
	// owned: this gateway holds the agent (made the latest claim of it).
	// settled: it knows how far the agent's counts were counted, and counts
	// from there. settleBy is when it settles without a handover, 0 for no
	// deadline; expect the node that held the agent before, 0 for none known.
	owned, settled bool
	settleBy       int64
	expect         uint64
	// claimPoint is the point of this gateway's claim of the agent, when
	// it claimed it: the counts it waits for answer it.
	claimPoint int64
	// relay, of a table of Aggregator.relays, is the gateway that claimed
	// the agent, with relayPoint, while this one, holding it, waited for
	// its previous holder's counts: this one counts its own time from them
	// when they come, and hands the result to relay.
	relay      uint64
	relayPoint int64
	// newest is the agent's newest point time (its clock): a source whose
	// latest point is metric_expiration older expires. updated is the
	// gateway clock of its latest batch: a table that long idle goes.
	newest, updated int64
	// seen is the newest point time of the agent when its previous table
	// here expired, 0 for none: a run that began by then may have been
	// counted already, and counts from its first point.
	seen int64
	// rebaseAt is the agent's newest point time when this gateway settled
	// without the counts of the holder it knew of: a point not newer may
	// have been counted there, so a source counts from its first point
	// after it.
	rebaseAt int64

	counters slots[counterSlot]
	hists    slots[histSlot]
	natives  slots[nativeSlot]
	gauges   slots[gaugeSlot]
	deltas   slots[deltaSlot]
	size     int
	// The ends of each source's runs before its latest, oldest first: the
	// agent restarted, or a counter reset. While the agent's points wait
	// they are segments to count at settle; once counted, markers that a
	// handover carries, so that the next holder counts the tail of a run
	// it saw more of.
	endedCounters map[uint64][]counterSlot
	endedHists    map[uint64][]histSlot
	endedNatives  map[uint64][]nativeSlot
	// counted says that increments went into groups since the last Close.
	counted bool
	// dead: swept away; Open looks the agent up again.
	dead bool
	inc  []uint64 // scratch for a histogram's increment
}

// counting reports whether points count now, rather than wait.
func (t *Table) counting() bool { return t.owned && t.settled }

// maxEnded bounds the ended runs kept of one source; of an agent that
// restarts faster, the oldest go.
const maxEnded = 4

func stash[S any](m map[uint64][]S, key uint64, s S) map[uint64][]S {
	if m == nil {
		m = map[uint64][]S{}
	}
	runs := m[key]
	if len(runs) == maxEnded {
		runs = append(runs[:0], runs[1:]...)
	}
	m[key] = append(runs, s)
	return m
}

// counts reports whether a cumulative source's next point counts from its
// latest, at ts: when this gateway counts, and the latest is not one that a
// holder whose counts it missed may have counted.
func (t *Table) counts(ts int64) bool { return t.counting() && ts > t.rebaseAt }

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// badTimes reports a start after its time, or a time that is negative: an
// OTLP time past 2262 does not fit int64 nanoseconds and wraps.
func badTimes(start, ts int64) bool { return start < 0 || start > ts }

// saw records the time of a point.
func (t *Table) saw(ts int64) { t.newest = max(t.newest, ts) }

// source takes a place for a new source in its group, or says why not.
func (t *Table) source(gr Grouper) (*Group, Reason) {
	if t.size >= t.a.cfg.MaxSourcesPerTable || !t.a.reserve() {
		return nil, MaxSources
	}
	g := gr.Group()
	if g == nil {
		t.a.release(1)
		return nil, GroupRefused
	}
	t.size++
	g.rule.sources.Add(1)
	return g, Aggregated
}

// forget releases a removed source's place and its group.
func (t *Table) forget(g *Group) {
	t.size--
	t.a.release(1)
	if g != nil {
		g.rule.sources.Add(-1)
		t.a.unref(g)
	}
}

// groupOf gives a source handed over before its first point here its group.
func groupOf(g **Group, gr Grouper) bool {
	if *g == nil {
		if *g = gr.Group(); *g != nil {
			(*g).rule.sources.Add(1)
		}
	}
	return *g != nil
}

// Counter aggregates a monotonic sum point. Call with the table locked and
// the metric's family open in w.
func (t *Table) Counter(w *store.Writer, key uint64, p Number, delta bool, gr Grouper) Reason {
	if !finite(p.Value) || p.Value < 0 || badTimes(p.Start, p.Time) {
		return Invalid
	}
	return cumulate(t, w, &t.counters, &t.endedCounters, key, p.Start, p.Time, delta, gr, counterPoint{p})
}

// counterPoint is a counter's point in the flow of cumulate.
type counterPoint struct{ p Number }

func (counterPoint) accept(*Group) Reason { return Aggregated }
func (c counterPoint) whole(t *Table, w *store.Writer, g *Group) Reason {
	return g.addCounter(w, c.p.Value, t.now)
}
func (c counterPoint) slot(g *Group) counterSlot {
	return counterSlot{start: c.p.Start, ts: c.p.Time, value: c.p.Value, g: g}
}
func (c counterPoint) since(t *Table, w *store.Writer, sl *counterSlot, o order) Reason {
	return sl.g.addCounter(w, counterIncrement(o, sl.value, c.p.Value), t.now)
}
func (c counterPoint) ends(sl *counterSlot, o order) bool { return o == newRun || c.p.Value < sl.value }
func (counterPoint) ended(sl *counterSlot) counterSlot    { return *sl }
func (c counterPoint) advance(sl *counterSlot) {
	sl.start, sl.ts, sl.value = runStart(sl.start, c.p.Start), c.p.Time, c.p.Value
}

// runStart keeps a known start when a point does not say its own.
func runStart(known, start int64) int64 {
	if start == 0 {
		return known
	}
	return start
}

// Histogram aggregates a classic histogram point. Call as Counter.
func (t *Table) Histogram(w *store.Writer, key uint64, p Hist, delta bool, gr Grouper) Reason {
	if !finite(p.Sum) || badTimes(p.Start, p.Time) {
		return Invalid
	}
	return cumulate(t, w, &t.hists, &t.endedHists, key, p.Start, p.Time, delta, gr, histPoint{p})
}

// histPoint is a classic histogram's point in the flow of cumulate: its
// group must have its bounds.
type histPoint struct{ p Hist }

func (h histPoint) accept(g *Group) Reason {
	if !sameBounds(g.bounds, h.p.Bounds) {
		return BoundsMismatch
	}
	return Aggregated
}
func (h histPoint) whole(t *Table, w *store.Writer, g *Group) Reason {
	return g.addHistogram(w, h.p.Count, h.p.Sum, h.p.Cumulative, t.now)
}
func (h histPoint) slot(g *Group) histSlot {
	return histSlot{start: h.p.Start, ts: h.p.Time, sum: h.p.Sum, count: h.p.Count, cum: append([]uint64(nil), h.p.Cumulative...), g: g}
}
func (h histPoint) since(t *Table, w *store.Writer, sl *histSlot, o order) Reason {
	return t.histIncrement(w, sl, o, h.p)
}
func (h histPoint) ends(sl *histSlot, o order) bool {
	return histogramReset(o, sl.count, sl.cum, h.p.Count, h.p.Cumulative)
}
func (histPoint) ended(sl *histSlot) histSlot {
	ended := *sl
	ended.cum = slices.Clone(sl.cum)
	return ended
}
func (h histPoint) advance(sl *histSlot) {
	sl.start, sl.ts, sl.sum, sl.count = runStart(sl.start, h.p.Start), h.p.Time, h.p.Sum, h.p.Count
	sl.cum = append(sl.cum[:0], h.p.Cumulative...)
}

// histIncrement adds what a histogram source gained since its latest point.
func (t *Table) histIncrement(w *store.Writer, sl *histSlot, o order, p Hist) Reason {
	if histogramReset(o, sl.count, sl.cum, p.Count, p.Cumulative) {
		return sl.g.addHistogram(w, p.Count, p.Sum, p.Cumulative, t.now)
	}
	t.inc = t.inc[:0]
	for i, c := range p.Cumulative {
		t.inc = append(t.inc, c-sl.cum[i])
	}
	return sl.g.addHistogram(w, p.Count-sl.count, p.Sum-sl.sum, t.inc, t.now)
}

// sameBounds reports whether a point's buckets are its group's.
func sameBounds(group, point *store.Bounds) bool {
	if group == nil || point == nil {
		return group == point
	}
	if group == point {
		return true
	}
	if len(group.Values) != len(point.Values) {
		return false
	}
	for i, v := range group.Values {
		if point.Values[i] != v {
			return false
		}
	}
	return true
}

// Native aggregates an exponential histogram point. Call as Counter.
func (t *Table) Native(w *store.Writer, key uint64, p Native, delta bool, gr Grouper) Reason {
	if badTimes(p.Start, p.Time) || !finite(p.H.Sum) || p.H.Validate() != nil {
		return Invalid
	}
	return cumulate(t, w, &t.natives, &t.endedNatives, key, p.Start, p.Time, delta, gr, nativePoint{p})
}

// nativePoint is an exponential histogram's point in the flow of cumulate.
type nativePoint struct{ p Native }

func (nativePoint) accept(*Group) Reason { return Aggregated }
func (n nativePoint) whole(t *Table, w *store.Writer, g *Group) Reason {
	return g.addNative(w, n.p.H, t.now)
}
func (n nativePoint) slot(g *Group) nativeSlot {
	return nativeSlot{start: n.p.Start, ts: n.p.Time, last: n.p.H, g: g}
}
func (n nativePoint) since(t *Table, w *store.Writer, sl *nativeSlot, o order) Reason {
	inc, err := nativeIncrement(o, sl.last, n.p.H)
	if err != nil {
		return Invalid
	}
	return sl.g.addNative(w, inc, t.now)
}
func (n nativePoint) ends(sl *nativeSlot, o order) bool {
	return o == newRun || n.p.H.DetectReset(sl.last)
}
func (nativePoint) ended(sl *nativeSlot) nativeSlot { return *sl }
func (n nativePoint) advance(sl *nativeSlot) {
	sl.start, sl.ts, sl.last = runStart(sl.start, n.p.Start), n.p.Time, n.p.H
}

// nativeIncrement is what h gained since last: all of h when it began a
// new run or reset, as Prometheus detects a native histogram's reset.
func nativeIncrement(o order, last, h *histogram.FloatHistogram) (*histogram.FloatHistogram, error) {
	if o == newRun || h.DetectReset(last) {
		return h, nil
	}
	inc, _, _, err := h.Copy().Sub(last)
	return inc, err
}

// Gauge aggregates a gauge point: its group holds each member's latest.
func (t *Table) Gauge(w *store.Writer, key uint64, p Number, gr Grouper) Reason {
	if !finite(p.Value) || p.Time < 0 {
		return Invalid
	}
	t.saw(p.Time)
	sl := t.gauges.get(key)
	if sl == nil {
		g, r := t.source(gr)
		if r != Aggregated {
			return r
		}
		sl = t.gauges.add(key, gaugeSlot{ts: p.Time, value: p.Value, g: g, member: -1})
		if t.counting() {
			sl.member = g.join(w, p.Value, t.now)
		}
		return Aggregated
	}
	if p.Time <= sl.ts {
		return OutOfOrder
	}
	sl.ts, sl.value = p.Time, p.Value
	switch {
	case sl.member >= 0:
		sl.g.setGauge(w, sl.member, p.Value, t.now)
	case t.counting():
		sl.member = sl.g.join(w, p.Value, t.now)
	}
	return Aggregated
}

// delta finds a delta source's group, or creates the source; deltas count
// wherever they arrive, each point once: a point not newer than the
// source's latest is a retry.
func (t *Table) delta(key uint64, ts int64, gr Grouper) (*Group, Reason) {
	sl := t.deltas.get(key)
	if sl == nil {
		g, r := t.source(gr)
		if r != Aggregated {
			return nil, r
		}
		t.deltas.add(key, deltaSlot{ts: ts, g: g})
		return g, Aggregated
	}
	if ts <= sl.ts {
		return nil, OutOfOrder
	}
	sl.ts = ts
	return sl.g, Aggregated
}

// add notes that an increment went into a group.
func (t *Table) add(r Reason) Reason {
	if r == Aggregated {
		t.counted = true
	}
	return r
}

// End removes the source of a point that says its series ended: what it
// counted stays in its group, a gauge leaves its group.
func (t *Table) End(w *store.Writer, key uint64, kind Kind) {
	if sl := t.deltas.get(key); sl != nil {
		t.forget(sl.g)
		t.deltas.remove(key)
	}
	switch kind {
	case KindCounter:
		if sl := t.counters.get(key); sl != nil {
			t.forget(sl.g)
			t.counters.remove(key)
		}
	case KindHistogram:
		if sl := t.hists.get(key); sl != nil {
			t.forget(sl.g)
			t.hists.remove(key)
		}
	case KindNative:
		if sl := t.natives.get(key); sl != nil {
			t.forget(sl.g)
			t.natives.remove(key)
		}
	case KindGauge:
		if sl := t.gauges.get(key); sl != nil {
			if sl.member >= 0 {
				sl.g.leave(w, sl.member, t.now)
			}
			t.forget(sl.g)
			t.gauges.remove(key)
		}
	}
}

// awaits reports whether t waits for counts from: those answering its
// claim. They come from the gateway that held the agent when it heard the
// claim, which need not be the one expected: a claim made since that one's,
// which gossip had not brought here yet, made another the holder.
func (t *Table) awaits(from From) bool {
	return t.claimPoint != 0 && from.Answers == t.claimPoint
}

// upTo copies what t holds of its points up to through, the point of the
// claim of relay, to count as relay once the counts it waits for come.
// Call with t locked.
func (t *Table) upTo(through int64, relay uint64) *Table {
	r := &Table{a: t.a, id: t.id, now: t.now, expect: t.expect, settleBy: t.settleBy, seen: t.seen,
		claimPoint: t.claimPoint, relay: relay, relayPoint: through,
		newest: min(t.newest, through), rebaseAt: t.rebaseAt}
	t.counters.each(func(key uint64, sl *counterSlot) bool {
		if sl.ts <= through {
			r.counters.add(key, *sl)
		}
		return true
	})
	t.hists.each(func(key uint64, sl *histSlot) bool {
		if sl.ts <= through {
			c := *sl
			c.cum = slices.Clone(sl.cum)
			r.hists.add(key, c)
		}
		return true
	})
	t.natives.each(func(key uint64, sl *nativeSlot) bool {
		if sl.ts <= through {
			r.natives.add(key, *sl)
		}
		return true
	})
	r.endedCounters = runsUpTo(t.endedCounters, through)
	r.endedHists = runsUpTo(t.endedHists, through)
	r.endedNatives = runsUpTo(t.endedNatives, through)
	return r
}

func runsUpTo[S runPoint](m map[uint64][]S, through int64) map[uint64][]S {
	var out map[uint64][]S
	for key, runs := range m {
		for _, r := range runs {
			if _, ts := r.at(); ts <= through {
				if out == nil {
					out = map[uint64][]S{}
				}
				out[key] = append(out[key], r)
			}
		}
	}
	return out
}
