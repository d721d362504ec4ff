package aggregate // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/aggregate"

import "github.com/prometheus/prometheus/model/histogram"

// The state of one source — one series of one agent that a rule aggregates
// — holds only what the next increment needs: its latest point and group.

// counterSlot is a cumulative counter source: its latest point.
type counterSlot struct {
	start, ts int64
	value     float64
	g         *Group // nil for a source handed over before its first point here
}

// histSlot is a cumulative classic histogram source.
type histSlot struct {
	start, ts int64
	sum       float64
	count     uint64
	cum       []uint64 // cumulative per bound of its group
	g         *Group
}

// nativeSlot is a cumulative exponential histogram source.
type nativeSlot struct {
	start, ts int64
	last      *histogram.FloatHistogram
	g         *Group
}

// gaugeSlot is a gauge source: its latest value, and its place among its
// group's members while it counts (-1 while it does not).
type gaugeSlot struct {
	ts     int64
	value  float64
	g      *Group
	member int32
}

// deltaSlot is a delta source of any kind: every point is an increment of
// its own, so the source keeps only its latest time, to refuse a retry.
type deltaSlot struct {
	ts int64
	g  *Group
}

// at is where a source's latest point is: its run's start and its time.
func (s counterSlot) at() (start, ts int64) { return s.start, s.ts }
func (s histSlot) at() (start, ts int64)    { return s.start, s.ts }
func (s nativeSlot) at() (start, ts int64)  { return s.start, s.ts }

// runPoint is a source's state at one point.
type runPoint interface {
	counterSlot | histSlot | nativeSlot
	at() (start, ts int64)
}

// slots are the sources of one kind of one table, by key. Removed places
// are reused, so a table that sources churn through does not grow.
type slots[S any] struct {
	index map[uint64]int32
	items []S
	free  []int32
}

func (s *slots[S]) get(key uint64) *S {
	if i, ok := s.index[key]; ok {
		return &s.items[i]
	}
	return nil
}

// add places a new source and returns it; the pointer is valid until the
// next add.
func (s *slots[S]) add(key uint64, v S) *S {
	if s.index == nil {
		s.index = map[uint64]int32{}
	}
	var i int32
	if n := len(s.free); n > 0 {
		i, s.free = s.free[n-1], s.free[:n-1]
		s.items[i] = v
	} else {
		i = int32(len(s.items))
		s.items = append(s.items, v)
	}
	s.index[key] = i
	return &s.items[i]
}

func (s *slots[S]) remove(key uint64) {
	if i, ok := s.index[key]; ok {
		var zero S
		s.items[i] = zero
		s.free = append(s.free, i)
		delete(s.index, key)
	}
}

func (s *slots[S]) len() int { return len(s.index) }

// each calls fn for every source; fn returns false to remove it.
func (s *slots[S]) each(fn func(key uint64, v *S) bool) (removed int) {
	for key, i := range s.index {
		if !fn(key, &s.items[i]) {
			s.remove(key)
			removed++
		}
	}
	if len(s.index) == 0 && len(s.items) > 0 {
		*s = slots[S]{}
	}
	return removed
}
