package aggregate // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/aggregate"

import (
	"slices"

	"github.com/prometheus/prometheus/model/histogram"
)

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

// slots are the sources of one kind of one table, by key: the sources in
// a slab with their keys, and an open-addressing index of their places
// (linear probing, deletion by backward shift). A Go map of key to place
// cost ~35 B a source on top of the slab at the sizes agents have (its
// slots of 16 B at a load of 7/16 to 7/8); this index costs 4 B a slot at
// a load of 3/8 to 3/4 (BenchmarkAggregateSourceMemory). Removed places
// are reused, so a table that sources churn through does not grow.
type slots[S any] struct {
	items []entry[S]
	free  []int32
	// index holds a place + 1 per slot, 0 for an empty slot; its length
	// is a power of two, 0 while there is no source.
	index []uint32
	n     int
}

type entry[S any] struct {
	key uint64 // 0 for a free place
	v   S
}

// keyOf keeps 0 for free places: the one key in 2^64 that is 0 shares 1's.
func keyOf(key uint64) uint64 { return max(key, 1) }

// home is where a key's probe begins; the keys are hashes already, and the
// fold mixes their high bits in.
func (s *slots[S]) home(key uint64) int { return int((key ^ key>>32) & uint64(len(s.index)-1)) }

// find returns the index slot of key and its place, or the empty slot
// where it would go and -1.
func (s *slots[S]) find(key uint64) (slot, place int) {
	mask := len(s.index) - 1
	for i := s.home(key); ; i = (i + 1) & mask {
		e := s.index[i]
		if e == 0 {
			return i, -1
		}
		if s.items[e-1].key == key {
			return i, int(e - 1)
		}
	}
}

func (s *slots[S]) get(key uint64) *S {
	if s.n == 0 {
		return nil
	}
	key = keyOf(key)
	if _, p := s.find(key); p >= 0 {
		return &s.items[p].v
	}
	return nil
}

// add places a new source under a key not held yet and returns it; the
// pointer is valid until the next add.
func (s *slots[S]) add(key uint64, v S) *S {
	key = keyOf(key)
	if (s.n+1)*4 > len(s.index)*3 {
		s.rehash(max(8, len(s.index)*2))
	}
	var p int
	if n := len(s.free); n > 0 {
		p, s.free = int(s.free[n-1]), s.free[:n-1]
	} else {
		if len(s.items) == cap(s.items) {
			// A quarter more, not twice: the slab is most of a source's cost.
			s.items = slices.Grow(s.items, len(s.items)/4+8)
		}
		p = len(s.items)
		s.items = s.items[:p+1]
	}
	s.items[p] = entry[S]{key: key, v: v}
	slot, _ := s.find(key)
	s.index[slot] = uint32(p + 1)
	s.n++
	return &s.items[p].v
}

func (s *slots[S]) remove(key uint64) {
	if s.n == 0 {
		return
	}
	key = keyOf(key)
	slot, p := s.find(key)
	if p < 0 {
		return
	}
	s.items[p] = entry[S]{}
	s.free = append(s.free, int32(p))
	s.n--
	// Backward shift: pull each following entry of the run back into the
	// hole when its home is not between the hole and it.
	mask := len(s.index) - 1
	hole := slot
	for i := (slot + 1) & mask; s.index[i] != 0; i = (i + 1) & mask {
		h := s.home(s.items[s.index[i]-1].key)
		if (i > hole && (h <= hole || h > i)) || (i < hole && h <= hole && h > i) {
			s.index[hole] = s.index[i]
			hole = i
		}
	}
	s.index[hole] = 0
}

// rehash builds the index anew with size slots, from the slab.
func (s *slots[S]) rehash(size int) {
	s.index = make([]uint32, size)
	for p := range s.items {
		if key := s.items[p].key; key != 0 {
			slot, _ := s.find(key)
			s.index[slot] = uint32(p + 1)
		}
	}
}

func (s *slots[S]) len() int { return s.n }

// each calls fn for every source; fn returns false to remove it. A table
// whose sources mostly left gives its memory back.
func (s *slots[S]) each(fn func(key uint64, v *S) bool) (removed int) {
	for p := range s.items {
		if key := s.items[p].key; key != 0 && !fn(key, &s.items[p].v) {
			s.remove(key)
			removed++
		}
	}
	switch {
	case s.n == 0:
		*s = slots[S]{}
	case len(s.free) > len(s.items)/2:
		s.compact()
	}
	return removed
}

// compact moves the sources to a slab of their own size and indexes them.
func (s *slots[S]) compact() {
	items := make([]entry[S], 0, s.n)
	for _, e := range s.items {
		if e.key != 0 {
			items = append(items, e)
		}
	}
	size := 8
	for size*3 < s.n*4 {
		size *= 2
	}
	s.items, s.free = items, nil
	s.rehash(size)
}
