package aggregate // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/aggregate"

import (
	"github.com/prometheus/prometheus/model/histogram"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
)

// settle decides from where this gateway counts an agent it now holds, and
// counts the points it kept meanwhile from there:
//
//   - with the previous holder's counts (hd), each source counts on from
//     the holder's latest point: its own latest minus the holder's, or all of
//     it when its run began since; a source the holder did not have began
//     since, and counts from zero;
//   - without them, when nobody is known to have held the agent, a source
//     counts from zero if its run began since this gateway started (and
//     since the agent's newest point when it last expired here), and from
//     its first point here if it began before (what was counted of it then
//     is not this gateway's to know);
//   - without them though a holder is known (the handover missed): from its
//     first point newer than any it has now (rebaseAt), which the holder
//     cannot have counted, since it stopped counting when it heard this
//     gateway's claim, long before the handover timed out: never guessing
//     what the holder counted.
//
// Call with t locked.
func (a *Aggregator) settle(t *Table, hd *handed) {
	fresh := hd == nil && t.expect == 0
	if hd == nil && t.expect != 0 {
		a.handovers[HandoverMissed].Add(1)
		t.rebaseAt = t.newest
	}
	// whole reports whether all of a run counts.
	whole := func(start int64) bool {
		return hd != nil || fresh && start != 0 && start >= a.cfg.Started && start > t.seen
	}
	now := t.now
	t.counters.each(func(key uint64, sl *counterSlot) bool {
		inc := 0.0
		if h, ok := hd.counter(key); ok {
			switch o := orderOf(h.start, h.ts, sl.start, sl.ts); o {
			case stale:
				*sl = counterSlot{start: h.start, ts: h.ts, value: h.value, g: sl.g}
			default:
				inc = counterIncrement(o, h.value, sl.value)
			}
		} else if whole(sl.start) {
			inc = sl.value
		}
		if inc > 0 && sl.g != nil {
			a.write(sl.g, now, func(w *store.Writer) { t.add(sl.g.addCounter(w, inc, now)) })
		}
		return true
	})
	t.hists.each(func(key uint64, sl *histSlot) bool {
		if h, ok := hd.hist(key); ok {
			switch o := orderOf(h.start, h.ts, sl.start, sl.ts); {
			case o == stale || !sameLength(h.cum, sl.cum):
				h.g = sl.g
				*sl = h
			case histogramReset(o, h.count, h.cum, sl.count, sl.cum):
				a.addHist(t, sl, sl.count, sl.sum, sl.cum)
			default:
				inc := make([]uint64, len(sl.cum))
				for i, c := range sl.cum {
					inc[i] = c - h.cum[i]
				}
				a.addHist(t, sl, sl.count-h.count, sl.sum-h.sum, inc)
			}
		} else if whole(sl.start) {
			a.addHist(t, sl, sl.count, sl.sum, sl.cum)
		}
		return true
	})
	t.natives.each(func(key uint64, sl *nativeSlot) bool {
		var inc *histogram.FloatHistogram
		if h, ok := hd.native(key); ok {
			switch o := orderOf(h.start, h.ts, sl.start, sl.ts); o {
			case stale:
				h.g = sl.g
				*sl = h
			default:
				inc, _ = nativeIncrement(o, h.last, sl.last)
			}
		} else if whole(sl.start) {
			inc = sl.last
		}
		if inc != nil && sl.g != nil {
			a.write(sl.g, now, func(w *store.Writer) { t.add(sl.g.addNative(w, inc, now)) })
		}
		return true
	})
	if hd != nil {
		// The holder's sources that have not sent a point here yet: the
		// next one counts on from the holder's.
		for key, h := range hd.counters {
			if t.room() {
				t.counters.add(key, h)
			}
		}
		for key, h := range hd.hists {
			if t.room() {
				t.hists.add(key, h)
			}
		}
		for key, h := range hd.natives {
			if t.room() {
				t.natives.add(key, h)
			}
		}
	}
	t.gauges.each(func(_ uint64, sl *gaugeSlot) bool {
		if sl.member < 0 {
			a.write(sl.g, now, func(w *store.Writer) { sl.member = sl.g.join(w, sl.value, now) })
		}
		return true
	})
	t.settled, t.settleBy = true, 0
}

func (a *Aggregator) addHist(t *Table, sl *histSlot, count uint64, sum float64, cum []uint64) {
	if sl.g != nil {
		a.write(sl.g, t.now, func(w *store.Writer) { t.add(sl.g.addHistogram(w, count, sum, cum, t.now)) })
	}
}

func sameLength(a, b []uint64) bool { return len(a) == len(b) }

// room takes a place for a handed source that has no group yet.
func (t *Table) room() bool {
	if t.size >= t.a.cfg.MaxSourcesPerTable || !t.a.reserve() {
		return false
	}
	t.size++
	return true
}

// counter, hist and native take a source out of a handover: what remains
// are the sources that sent no point here.
func (hd *handed) counter(key uint64) (counterSlot, bool) {
	if hd == nil {
		return counterSlot{}, false
	}
	h, ok := hd.counters[key]
	delete(hd.counters, key)
	return h, ok
}

func (hd *handed) hist(key uint64) (histSlot, bool) {
	if hd == nil {
		return histSlot{}, false
	}
	h, ok := hd.hists[key]
	delete(hd.hists, key)
	return h, ok
}

func (hd *handed) native(key uint64) (nativeSlot, bool) {
	if hd == nil {
		return nativeSlot{}, false
	}
	h, ok := hd.natives[key]
	delete(hd.natives, key)
	return h, ok
}
