package aggregate // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/aggregate"

import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"

// cumulativePoint is a point of one kind of cumulative source (counter,
// classic or native histogram) in the flow every kind shares (cumulate):
// what the kind adds to it, over its slot S.
type cumulativePoint[S any] interface {
	// accept reports whether the point may go into group g, or why not.
	accept(g *Group) Reason
	// whole adds all of the point to g: a delta, or a new run counted whole.
	whole(t *Table, w *store.Writer, g *Group) Reason
	// slot is a new source's state at the point, in group g.
	slot(g *Group) S
	// since adds what the point gained since the source's state sl.
	since(t *Table, w *store.Writer, sl *S, o order) Reason
	// ends reports whether the point ends sl's run (a new run or a reset);
	// ended is sl as it is kept among the ended runs.
	ends(sl *S, o order) bool
	ended(sl *S) S
	// advance makes sl the source's state at the point.
	advance(sl *S)
}

// slotOf is the pointer to a slot: where its run and group are.
type slotOf[S any] interface {
	*S
	at() (start, ts int64)
	group() **Group
}

func (s *counterSlot) group() **Group { return &s.g }
func (s *histSlot) group() **Group    { return &s.g }
func (s *nativeSlot) group() **Group  { return &s.g }

// cumulate aggregates point p (of a run that started at start, at ts) of
// source key, kept in sources, its ended runs in ended: a delta's every
// point is an increment; a cumulative source's first point counts whole
// when the table counts it, and each later point adds what it gained since
// the source's latest (all of it after a new run or a reset, which keeps
// the run that ended for a handover).
func cumulate[S any, PS slotOf[S], P cumulativePoint[S]](t *Table, w *store.Writer, sources *slots[S], ended *map[uint64][]S,
	key uint64, start, ts int64, delta bool, gr Grouper, p P) Reason {
	t.saw(ts)
	if delta {
		g, r := t.delta(key, ts, gr)
		if r != Aggregated {
			return r
		}
		if r := p.accept(g); r != Aggregated {
			return r
		}
		return t.add(p.whole(t, w, g))
	}
	sl := sources.get(key)
	if sl == nil {
		g, r := t.source(gr)
		if r != Aggregated {
			return r
		}
		if r := p.accept(g); r != Aggregated {
			t.forget(g)
			return r
		}
		sources.add(key, p.slot(g))
		if !t.counts(ts) {
			return Aggregated
		}
		// A new source of an agent this gateway counts: it began since.
		return t.add(p.whole(t, w, g))
	}
	slStart, slTS := PS(sl).at()
	o := orderOf(slStart, slTS, start, ts)
	if o == stale {
		return OutOfOrder
	}
	g := PS(sl).group()
	if !groupOf(g, gr) {
		return GroupRefused
	}
	if r := p.accept(*g); r != Aggregated {
		return r
	}
	if t.counts(slTS) {
		if r := t.add(p.since(t, w, sl, o)); r != Aggregated {
			return r // the source keeps its point: the next one carries the increment
		}
	}
	if p.ends(sl, o) {
		*ended = stash(*ended, key, p.ended(sl))
	}
	p.advance(sl)
	return Aggregated
}
