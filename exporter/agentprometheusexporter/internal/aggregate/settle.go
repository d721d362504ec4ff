package aggregate // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/aggregate"

import (
	"cmp"
	"slices"

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
// A run that ended while this gateway waited (the agent restarted, or its
// counter reset) is a segment of its own, counted by the same rules: a
// segment that began after the holder's latest point counts whole.
//
// Call with t locked.
func (a *Aggregator) settle(t *Table, hd *handed) {
	fresh := hd == nil && t.expect == 0
	if hd == nil && t.expect != 0 {
		a.handovers[HandoverMissed].Add(1)
		t.rebaseAt = t.newest
	}
	// counts reports whether all of segment i of a source, of run start,
	// counts when the holder's points leave it before the segment: with the
	// holder's counts (handed), the holder counted none of it; without a holder, a segment after the first began within
	// this gateway's sight, and the first counts whole if its run began
	// since this gateway started. Without the counts of a known holder
	// (missed), none counts: the holder may have seen any of them.
	counts := func(handed bool, i int, start int64) bool {
		switch {
		case handed:
			return true
		case !fresh:
			return false
		}
		return i > 0 || start != 0 && start >= a.cfg.Started && start > t.seen
	}
	now := t.now
	t.counters.each(func(key uint64, sl *counterSlot) bool {
		runs := hd.counter(key)
		inc := 0.0
		var boundary int64
		segs := append(t.endedCounters[key], *sl)
		for i, seg := range segs {
			w, m := place(runs, seg.start, seg.ts, boundary)
			switch {
			case w == within:
				inc += counterIncrement(sameRun, m.value, seg.value)
			case w == before && (counts(hd != nil, i, seg.start)):
				inc += seg.value
			}
			boundary = seg.ts
		}
		if inc > 0 && sl.g != nil {
			a.write(sl.g, now, func(w *store.Writer) { t.add(sl.g.addCounter(w, inc, now)) })
		}
		t.endedCounters = markers(t.endedCounters, key, sl, runs, func(dst *counterSlot, src counterSlot) {
			src.g = dst.g
			*dst = src
		})
		return true
	})
	t.hists.each(func(key uint64, sl *histSlot) bool {
		runs := hd.hist(key)
		var boundary int64
		for i, seg := range append(t.endedHists[key], *sl) {
			w, m := place(runs, seg.start, seg.ts, boundary)
			switch {
			case w == within && len(m.cum) == len(seg.cum) && !histogramReset(sameRun, m.count, m.cum, seg.count, seg.cum):
				inc := make([]uint64, len(seg.cum))
				for i, c := range seg.cum {
					inc[i] = c - m.cum[i]
				}
				a.addHist(t, sl, seg.count-m.count, seg.sum-m.sum, inc)
			case w == within, w == before && (counts(hd != nil, i, seg.start)):
				a.addHist(t, sl, seg.count, seg.sum, seg.cum)
			}
			boundary = seg.ts
		}
		t.endedHists = markers(t.endedHists, key, sl, runs, func(dst *histSlot, src histSlot) {
			src.g = dst.g
			*dst = src
		})
		return true
	})
	t.natives.each(func(key uint64, sl *nativeSlot) bool {
		runs := hd.native(key)
		var boundary int64
		for i, seg := range append(t.endedNatives[key], *sl) {
			w, m := place(runs, seg.start, seg.ts, boundary)
			var inc *histogram.FloatHistogram
			switch {
			case w == within:
				inc, _ = nativeIncrement(sameRun, m.last, seg.last)
			case w == before && (counts(hd != nil, i, seg.start)):
				inc = seg.last
			}
			if inc != nil && sl.g != nil {
				a.write(sl.g, now, func(w *store.Writer) { t.add(sl.g.addNative(w, inc, now)) })
			}
			boundary = seg.ts
		}
		t.endedNatives = markers(t.endedNatives, key, sl, runs, func(dst *nativeSlot, src nativeSlot) {
			src.g = dst.g
			*dst = src
		})
		return true
	})
	if hd != nil {
		// The holder's sources that have not sent a point here yet: the
		// next one counts on from the holder's latest.
		addHanded(t, &t.counters, &t.endedCounters, hd.counters)
		addHanded(t, &t.hists, &t.endedHists, hd.hists)
		addHanded(t, &t.natives, &t.endedNatives, hd.natives)
	}
	if t.owned {
		t.gauges.each(func(_ uint64, sl *gaugeSlot) bool {
			if sl.member < 0 {
				a.write(sl.g, now, func(w *store.Writer) { sl.member = sl.g.join(w, sl.value, now) })
			}
			return true
		})
	}
	t.settled, t.settleBy = true, 0
}

// where is where the holder's counts leave a segment of a source's points:
// a run, or the part of one since a reset.
type where uint8

const (
	// covered: the holder counted the segment (it has a point of the
	// segment's run at or after the segment's latest, or a newer run).
	covered where = iota
	// within: the holder counted the segment up to its point of it.
	within
	// before: the segment began after what the holder counted (or there
	// is no holder's count of the source).
	before
)

// place finds where the holder's points of a source (runs, oldest first)
// leave our segment of run start with latest point at ts, which began after
// the point at boundary (the end of the segment before it, 0 for none), and
// the holder's point it counts on from when within. A segment of a run the
// holder never saw, older than one it did see, counts as covered: someone
// before the holder may have counted it, and a count is never guessed.
func place[S runPoint](runs []S, start, ts, boundary int64) (where, S) {
	var m S
	found, newer := false, false
	for _, r := range runs {
		rs, _ := r.at()
		switch {
		case rs == start || rs == 0 || start == 0:
			m, found = r, true
		case rs > start:
			newer = true
		}
	}
	switch _, mts := m.at(); {
	case found && mts >= ts:
		return covered, m
	case found && mts > boundary:
		return within, m
	case found:
		return before, m
	case newer:
		return covered, m
	}
	return before, m
}

// markers settles a source's state after its segments were counted: its
// latest point becomes the holder's when the holder's is newer, and its
// ended runs are kept for its next holder, with the holder's ends of runs
// it did not see itself (the same run's older points are not needed: the
// latest of a run is what a holder counts on from). with copies a point
// into a source's state, keeping the source's group.
func markers[S runPoint](ended map[uint64][]S, key uint64, sl *S, runs []S, with func(dst *S, src S)) map[uint64][]S {
	all := append(ended[key], runs...)
	if n := len(runs); n > 0 {
		start, ts := (*sl).at()
		hs, hts := runs[n-1].at()
		if orderOf(start, ts, hs, hts) != stale {
			all = append(all, *sl)
			with(sl, runs[n-1])
		}
	}
	start, _ := (*sl).at()
	slices.SortStableFunc(all, func(a, b S) int {
		as, ats := a.at()
		bs, bts := b.at()
		return cmp.Or(cmp.Compare(as, bs), cmp.Compare(ats, bts))
	})
	kept := all[:0]
	for i, r := range all {
		rs, _ := r.at()
		next := i+1 < len(all)
		if rs == start || next && func() bool { ns, _ := all[i+1].at(); return ns == rs }() {
			continue // the current run, or not a run's latest
		}
		kept = append(kept, r)
	}
	if len(kept) > maxEnded {
		kept = kept[len(kept)-maxEnded:]
	}
	if len(kept) == 0 {
		delete(ended, key)
		return ended
	}
	if ended == nil {
		ended = map[uint64][]S{}
	}
	ended[key] = slices.Clone(kept)
	return ended
}

// addHanded adds the holder's sources that sent no point here yet: the
// next point counts on from the holder's latest.
func addHanded[S runPoint](t *Table, s *slots[S], ended *map[uint64][]S, handed map[uint64][]S) {
	for key, runs := range handed {
		if s.get(key) != nil || len(runs) == 0 || !t.room() {
			continue
		}
		s.add(key, runs[len(runs)-1])
		if len(runs) > 1 {
			if *ended == nil {
				*ended = map[uint64][]S{}
			}
			(*ended)[key] = runs[:len(runs)-1]
		}
	}
}

func (a *Aggregator) addHist(t *Table, sl *histSlot, count uint64, sum float64, cum []uint64) {
	if sl.g != nil {
		a.write(sl.g, t.now, func(w *store.Writer) { t.add(sl.g.addHistogram(w, count, sum, cum, t.now)) })
	}
}

// room takes a place for a handed source that has no group yet.
func (t *Table) room() bool {
	if t.size >= t.a.cfg.MaxSourcesPerTable || !t.a.reserve() {
		return false
	}
	t.size++
	return true
}

// counter, hist and native take a source's points out of a handover: what
// remains are the sources that sent no point here. nil for none.
func (hd *handed) counter(key uint64) []counterSlot {
	if hd == nil {
		return nil
	}
	runs := hd.counters[key]
	delete(hd.counters, key)
	return runs
}

func (hd *handed) hist(key uint64) []histSlot {
	if hd == nil {
		return nil
	}
	runs := hd.hists[key]
	delete(hd.hists, key)
	return runs
}

func (hd *handed) native(key uint64) []nativeSlot {
	if hd == nil {
		return nil
	}
	runs := hd.natives[key]
	delete(hd.natives, key)
	return runs
}
