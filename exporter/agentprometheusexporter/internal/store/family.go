package store // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"

import (
	"sync"
	"time"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/prommodel"
)

// chunk bounds how many series a scrape or sweep handles per lock hold, so
// ingestion into the same family waits at most that long.
const chunk = 1024

// Family is one Prometheus metric family and its series.
type Family struct {
	Name string
	Help string
	Unit string
	Kind prommodel.Kind

	store *Store

	mu     sync.RWMutex
	series []*Series
	// index maps a label-set hash to the series' position; overflow holds the
	// rare series whose hash another label set already took.
	index    map[uint32]int32
	overflow map[overflowKey]int32
	// deleted counts the removals from index since it was last rebuilt: Go
	// maps never shrink, and one that entries churn through keeps growing
	// its table (see compact).
	deleted int
	// hints remember, per resource, the series each point position of its
	// previous batch resolved to: agents send the same shape every time, so
	// most points find their series without hashing or probing the index.
	hints map[*Resource]*[]*Series
	dead  bool // removed from the store; ingestion must look it up again
	card  familyCounts
	// clashes records the series that would be written alike to a scraper
	// that does not take UTF-8 names (clash.go); nil while every set of
	// names is plain.
	clashes *clashes
}

// Outcome tells what Writer.Put did.
type Outcome uint8

const (
	Updated Outcome = iota
	Created
	RefusedMaxSeries
	RefusedMaxSeriesPerResource
	// RefusedLabelClash: a scraper that does not take UTF-8 names would get
	// the new series and another as one (clash.go).
	RefusedLabelClash
)

// lockSpin is how long lock retries before it sleeps: longer than a scrape
// holds the read lock to copy one chunk of series (tens of µs).
const lockSpin = 100 * time.Microsecond

// lock takes the family for ingestion. It spins briefly before it sleeps: a
// writer put to sleep behind a scrape's read lock is woken by RUnlock but then
// waits for the scrape's goroutine to use up its time slice (10 ms), once per
// family of a batch. BenchmarkIngestPauseDuringScrape measures the slowest
// single-point update during a 1M-series gzip scrape (BENCHMARKS.md,
// "Ingestion during scrapes").
func (f *Family) lock() {
	if f.mu.TryLock() {
		return
	}
	for start := time.Now(); time.Since(start) < lockSpin; {
		if f.mu.TryLock() {
			return
		}
	}
	f.mu.Lock()
}

// lookup finds a series by its labels; call with a lock held.
func (f *Family) lookup(l *Labels, hash uint32) (int32, bool) {
	if i, ok := f.index[hash]; ok && f.series[i].Labels.is(l) {
		return i, true
	}
	if len(f.overflow) > 0 {
		i, ok := f.overflow[l.overflowKey()]
		return i, ok
	}
	return 0, false
}

// upsert returns the series with these labels, creating it when the limits
// allow. The values are copied only when a series is created. Call with the
// family locked.
func (f *Family) upsert(l *Labels, hash uint32, res *Resource, now int64) (*Series, Outcome) {
	if i, ok := f.lookup(l, hash); ok {
		s := f.series[i]
		s.updated = now
		return s, Updated
	}
	var written string
	if !l.Names.Plain || f.clashes != nil {
		var taken bool
		if written, taken = f.clash(l); taken {
			return nil, RefusedLabelClash
		}
	}
	st := f.store
	if st.total.Add(1) > st.maxSeries {
		st.total.Add(-1)
		res.refused(RefusedMaxSeries)
		return nil, RefusedMaxSeries
	}
	if res.series.Add(1) > st.maxPerResource {
		res.series.Add(-1)
		st.total.Add(-1)
		res.refused(RefusedMaxSeriesPerResource)
		return nil, RefusedMaxSeriesPerResource
	}
	s := &Series{Labels: LabelSet{Names: l.Names, shared: l.Shared, values: string(l.Own)}, index: int32(len(f.series)), Resource: res, updated: now, born: st.births.Add(1)}
	if _, taken := f.index[hash]; taken {
		f.overflow[s.Labels.overflowKey()] = s.index
	} else {
		f.index[hash] = s.index
	}
	f.series = append(f.series, s)
	f.recordClash(s, written)
	f.hold(res, 1)
	res.join(f, s)
	return s, Created
}

// hintsOf returns the position hints of a resource. Call with the family locked.
func (f *Family) hintsOf(res *Resource) *[]*Series {
	h := f.hints[res]
	if h == nil {
		h = new([]*Series)
		f.hints[res] = h
	}
	return h
}

// reuse returns the series hinted at position i when it still exists and has
// these labels, marking it updated. Call with the family locked.
func (f *Family) reuse(h *[]*Series, i int, l *Labels, now int64) *Series {
	if i < len(*h) {
		if s := (*h)[i]; s != nil && !s.removed && s.Labels.is(l) {
			s.updated = now
			return s
		}
	}
	return nil
}

// remember records s as the series of position i. Call with the family locked.
func (f *Family) remember(h *[]*Series, i int, s *Series) {
	if i < len(*h) {
		(*h)[i] = s
	} else if i == len(*h) {
		*h = append(*h, s)
	}
}

// delete removes the series with these labels, if any. Call with the family locked.
func (f *Family) delete(l *Labels, hash uint32) bool {
	i, ok := f.lookup(l, hash)
	if ok {
		f.remove(i)
	}
	return ok
}

// remove takes series i out by moving the last series into its place. A
// scrape walking forward in chunks can therefore miss a series that moved
// behind it, but never writes one twice: not a moved one, and not one
// removed and created again at the end, which is born after the scrape
// began (Release.Horizon).
func (f *Family) remove(i int32) {
	s := f.series[i]
	hash := s.hash()
	if j, ok := f.index[hash]; ok && j == i {
		delete(f.index, hash)
		f.deleted++
		// Promote an overflow series with the same hash into the index.
		for l, k := range f.overflow {
			if f.series[k].hash() == hash {
				f.index[hash] = k
				delete(f.overflow, l)
				break
			}
		}
	} else {
		delete(f.overflow, s.Labels.overflowKey())
	}
	last := int32(len(f.series) - 1)
	if i != last {
		moved := f.series[last]
		moved.index = i
		f.series[i] = moved
		movedHash := moved.hash()
		if j, ok := f.index[movedHash]; ok && j == last {
			f.index[movedHash] = i
		} else {
			f.overflow[moved.Labels.overflowKey()] = i
		}
	}
	f.series[last] = nil
	f.series = f.series[:last]
	f.forgetClash(s)
	s.removed = true
	s.Resource.leave(f, s)
	f.hold(s.Resource, -1)
	s.Resource.series.Add(-1)
	f.store.total.Add(-1)
}

// compact rebuilds the index once more entries have been deleted from it
// than it holds: a map that series churn through (agents replaced by new
// ones) otherwise grows its table with every generation (BenchmarkChurn's
// heap growth). The copy costs a pass over the index, no more often than
// once per as many removals. Call with the family locked.
func (f *Family) compact() {
	if f.deleted < 1024 || f.deleted < len(f.index) {
		return
	}
	index := make(map[uint32]int32, len(f.index))
	for h, i := range f.index {
		index[h] = i
	}
	f.index, f.deleted = index, 0
}

// Len is the number of series now.
func (f *Family) Len() int {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return len(f.series)
}

// Range calls fn for every series, holding the read lock for at most a chunk
// of series at a time. fn must not keep s after it returns.
func (f *Family) Range(fn func(s *Series)) {
	for start := 0; ; start += chunk {
		f.mu.RLock()
		end := min(start+chunk, len(f.series))
		for _, s := range f.series[start:max(start, end)] {
			fn(s)
		}
		more := end < len(f.series)
		f.mu.RUnlock()
		if !more {
			return
		}
	}
}

// sweep removes the series last updated before cutoff, a chunk per lock hold,
// walking backwards so that the series moved by a removal were already seen.
func (f *Family) sweep(cutoff int64) (expired int, empty bool) {
	f.mu.Lock()
	i := len(f.series) - 1
	f.mu.Unlock()
	for i >= 0 {
		f.mu.Lock()
		i = min(i, len(f.series)-1)
		for stop := i - chunk; i >= 0 && i > stop; i-- {
			if f.series[i].updated < cutoff {
				f.remove(int32(i))
				expired++
			}
		}
		f.mu.Unlock()
	}
	f.mu.Lock()
	f.compact()
	// Forget the hints of resources that hold nothing any more.
	for res := range f.hints {
		if res.series.Load() == 0 {
			delete(f.hints, res)
		}
	}
	empty = len(f.series) == 0
	f.mu.Unlock()
	return expired, empty
}
