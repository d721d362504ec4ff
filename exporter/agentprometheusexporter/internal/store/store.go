package store // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Store holds every family and resource.
type Store struct {
	maxSeries      int64
	maxPerResource int64

	mu        sync.RWMutex
	families  map[string]*Family
	resources map[string]*Resource

	total atomic.Int64
}

// New returns an empty store with the given limits.
func New(maxSeries, maxSeriesPerResource int) *Store {
	return &Store{
		maxSeries:      int64(maxSeries),
		maxPerResource: int64(maxSeriesPerResource),
		families:       map[string]*Family{},
		resources:      map[string]*Resource{},
	}
}

// SeriesCount is the number of series held.
func (st *Store) SeriesCount() int64 { return st.total.Load() }

// Family returns the family with this name, creating it with the given type,
// help and unit. ok is false when the family exists with another type: the
// first type seen is kept and the caller drops the conflicting points.
func (st *Store) Family(name string, kind Kind, help, unit string) (f *Family, ok bool) {
	st.mu.RLock()
	f = st.families[name]
	st.mu.RUnlock()
	if f == nil {
		st.mu.Lock()
		if f = st.families[name]; f == nil {
			f = &Family{
				Name: name, Help: help, Unit: unit, Kind: kind, store: st,
				index: map[uint64]int32{}, overflow: map[string]int32{}, hints: map[*Resource]*[]*Series{},
			}
			st.families[name] = f
		}
		st.mu.Unlock()
	}
	return f, f.Kind == kind
}

// Resource returns the resource with this key (job, 0xff, instance),
// creating it, and marks it as updated at now. The key is copied only when
// the resource is new.
func (st *Store) Resource(key []byte, now int64) *Resource {
	st.mu.RLock()
	r := st.resources[string(key)]
	st.mu.RUnlock()
	if r == nil {
		st.mu.Lock()
		if r = st.resources[string(key)]; r == nil {
			r = &Resource{key: string(key)}
			st.resources[r.key] = r
		}
		st.mu.Unlock()
	}
	r.updated.Store(now)
	return r
}

// Families returns the families sorted by name.
func (st *Store) Families() []*Family {
	st.mu.RLock()
	out := make([]*Family, 0, len(st.families))
	for _, f := range st.families {
		out = append(out, f)
	}
	st.mu.RUnlock()
	slices.SortFunc(out, func(a, b *Family) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// TargetInfos returns the rendered target_info label sets of the resources
// that hold series, sorted.
func (st *Store) TargetInfos() []string {
	st.mu.RLock()
	out := make([]string, 0, len(st.resources))
	for _, r := range st.resources {
		if ti := r.TargetInfo(); ti != "" && r.SeriesCount() > 0 {
			out = append(out, ti)
		}
	}
	st.mu.RUnlock()
	slices.Sort(out)
	return out
}

// Sweep removes the series last updated before cutoff (unix nanoseconds),
// then the families and resources left without series. It returns how many
// series expired.
func (st *Store) Sweep(cutoff int64) int {
	expired := 0
	var emptyFamilies []*Family
	for _, f := range st.Families() {
		n, empty := f.sweep(cutoff)
		expired += n
		if empty {
			emptyFamilies = append(emptyFamilies, f)
		}
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, f := range emptyFamilies {
		// Ingestion may have added a series since; only a still-empty family
		// goes, and marking it dead sends late writers back to the store.
		f.mu.Lock()
		if len(f.series) == 0 && st.families[f.Name] == f {
			f.dead = true
			delete(st.families, f.Name)
		}
		f.mu.Unlock()
	}
	for k, r := range st.resources {
		// A resource touched since the cutoff may be about to get series.
		if r.series.Load() == 0 && r.updated.Load() < cutoff {
			delete(st.resources, k)
		}
	}
	return expired
}
