package store // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/prometheus/common/model"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/prommodel"
)

// Store holds every family and resource.
type Store struct {
	maxSeries      int64
	maxPerResource int64
	claimsOf       prommodel.Claims

	mu        sync.RWMutex
	families  map[string]*Family
	resources map[string]*Resource
	byID      map[ID]*Resource
	// claims maps every name a family's exposition writes (see prommodel.ExposedNames)
	// to the family, so that a new family whose names would clash with
	// another's is refused instead of making the scrape unparseable.
	claims map[string]*Family

	total atomic.Int64
	// births counts the series ever created: a series' birth number orders
	// it against the scrapes (Release.Horizon).
	births atomic.Uint64
	// deltaAt and runAt are the store clock of the latest batch that
	// accumulated deltas, and of the latest that began a run of them.
	deltaAt, runAt atomic.Int64
}

// NoteDeltas records that a batch at now accumulated deltas — values that
// exist nowhere else until a scrape has taken them — and whether it began a
// run of them (see Series.Held).
func (st *Store) NoteDeltas(now int64, newRun bool) {
	raise(&st.deltaAt, now)
	if newRun {
		raise(&st.runAt, now)
	}
}

func raise(a *atomic.Int64, v int64) {
	for {
		old := a.Load()
		if v <= old || a.CompareAndSwap(old, v) {
			return
		}
	}
}

// Horizon is the Release.Horizon of a scrape that begins now: the series
// created from now on are left to the next scrape.
func (st *Store) Horizon() uint64 { return st.births.Load() + 1 }

// DeltasAt is the store clock of the latest batch that accumulated deltas, 0 for none.
func (st *Store) DeltasAt() int64 { return st.deltaAt.Load() }

// RunAt is the store clock of the latest batch that began a run of deltas, 0 for none.
func (st *Store) RunAt() int64 { return st.runAt.Load() }

// New returns an empty store with the given limits.
func New(maxSeries, maxSeriesPerResource int, claims prommodel.Claims) *Store {
	return &Store{
		maxSeries:      int64(maxSeries),
		maxPerResource: int64(maxSeriesPerResource),
		claimsOf:       claims,
		families:       map[string]*Family{},
		resources:      map[string]*Resource{},
		byID:           map[ID]*Resource{},
		claims:         map[string]*Family{},
	}
}

// reserved owns the names Reserve takes; it is never returned as a family.
var reserved = &Family{}

// Reserve keeps name from ever being a family: the exposition writes it
// itself (target_info).
func (st *Store) Reserve(name string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.claims[model.EscapeName(name, model.UnderscoreEscaping)] = reserved
}

// SeriesCount is the number of series held.
func (st *Store) SeriesCount() int64 { return st.total.Load() }

// Family returns the family with this name, creating it with the given type,
// help and unit. ok is false when the family exists with another type (f is
// that family), or when a new family's exposed names clash with another
// family's (f is nil): the first family keeps its names and the caller drops
// the conflicting points.
func (st *Store) Family(name string, kind prommodel.Kind, help, unit string) (f *Family, ok bool) {
	st.mu.RLock()
	f = st.families[name]
	st.mu.RUnlock()
	if f == nil {
		st.mu.Lock()
		defer st.mu.Unlock()
		if f = st.families[name]; f == nil {
			claims := prommodel.ExposedNames(name, kind, st.claimsOf)
			for _, c := range claims {
				if st.claims[c] != nil {
					return nil, false
				}
			}
			f = &Family{
				// Help goes into protobuf, which refuses invalid UTF-8.
				Name: name, Help: strings.ToValidUTF8(help, "\uFFFD"), Unit: unit, Kind: kind, store: st,
				index: map[uint32]int32{}, overflow: map[overflowKey]int32{}, hints: map[*Resource]*[]*Series{},
			}
			st.families[name] = f
			for _, c := range claims {
				st.claims[c] = f
			}
		}
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
			r = &Resource{key: string(key), id: IDOf(key)}
			st.resources[r.key] = r
			st.byID[r.id] = r
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

// TargetInfo is the target_info series of a resource.
type TargetInfo struct {
	Labels LabelSet
	// Updated is the store clock of the resource's latest batch, unix
	// nanoseconds: target_info's timestamp, so that it goes stale in
	// Prometheus with the resource's other series.
	Updated int64
}

// TargetInfos returns the target_info series of the resources that hold
// series, sorted by labels.
func (st *Store) TargetInfos() []TargetInfo {
	st.mu.RLock()
	out := make([]TargetInfo, 0, len(st.resources))
	for _, r := range st.resources {
		if ti, ok := r.TargetInfo(); ok && r.SeriesCount() > 0 {
			out = append(out, TargetInfo{Labels: ti, Updated: r.updated.Load()})
		}
	}
	st.mu.RUnlock()
	slices.SortFunc(out, func(a, b TargetInfo) int { return CompareSets(a.Labels, b.Labels) })
	return out
}

// forgetIfEmpty removes f from the store when it has no series.
func (st *Store) forgetIfEmpty(f *Family) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.forgetLocked(f)
}

// forgetLocked removes f from the store when it has no series. Ingestion
// may have added a series since its caller saw it empty; only a still-empty
// family goes, and marking it dead sends late writers back to the store.
// Call with st.mu held.
func (st *Store) forgetLocked(f *Family) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.series) != 0 || st.families[f.Name] != f {
		return
	}
	f.dead = true
	delete(st.families, f.Name)
	for _, c := range prommodel.ExposedNames(f.Name, f.Kind, st.claimsOf) {
		if st.claims[c] == f {
			delete(st.claims, c)
		}
	}
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
		st.forgetLocked(f)
	}
	for k, r := range st.resources {
		// A resource touched since the cutoff may be about to get series.
		if r.series.Load() == 0 && r.updated.Load() < cutoff {
			delete(st.resources, k)
			delete(st.byID, r.id)
		}
	}
	return expired
}
