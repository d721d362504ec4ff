package store // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"

import (
	"strings"
	"sync/atomic"
)

// What the cardinality view reads (internal/cardinality). The counts are
// kept as series come and go, on the paths that create, refuse and remove
// a series, never on the path that updates one; what needs a scan is read a
// chunk at a time, like a scrape.

// resourceCounts are a resource's refused series since it was first seen.
type resourceCounts struct {
	refusedMaxSeries   atomic.Int64
	refusedPerResource atomic.Int64
}

// refused counts a series of r that a limit refused.
func (r *Resource) refused(o Outcome) {
	if o == RefusedMaxSeries {
		r.card.refusedMaxSeries.Add(1)
	} else {
		r.card.refusedPerResource.Add(1)
	}
}

// familyCounts count the series each resource holds in a family. Guarded by
// the family's lock.
type familyCounts struct {
	held map[*Resource]int32
}

// hold adds d to the series r holds in f. Call with the family locked.
func (f *Family) hold(r *Resource, d int32) {
	if f.card.held == nil {
		f.card.held = map[*Resource]int32{}
	}
	if n := f.card.held[r] + d; n > 0 {
		f.card.held[r] = n
	} else {
		delete(f.card.held, r)
	}
}

// ResourceStat is a resource as the cardinality view shows it.
type ResourceStat struct {
	Resource      *Resource
	Job, Instance string
	// Own says that the resource holds the gateway's own series (the
	// groups of an aggregate rule), not an agent's: its key is not a job
	// and an instance.
	Own    bool
	Series int64
	// RefusedMaxSeries and RefusedPerResource count the new series of the
	// resource that max_series and max_series_per_resource refused.
	RefusedMaxSeries, RefusedPerResource int64
}

// Stat reads the resource's counts.
func (r *Resource) Stat() ResourceStat {
	job, instance, _ := strings.Cut(r.key, "\xff")
	return ResourceStat{
		Resource: r, Job: job, Instance: instance, Own: strings.Count(r.key, "\xff") > 1, Series: r.series.Load(),
		RefusedMaxSeries: r.card.refusedMaxSeries.Load(), RefusedPerResource: r.card.refusedPerResource.Load(),
	}
}

// Resources returns every resource, in no order. The store's map is read
// under its read lock, as a scrape reads it for target_info.
func (st *Store) Resources() []*Resource {
	st.mu.RLock()
	out := make([]*Resource, 0, len(st.resources))
	for _, r := range st.resources {
		out = append(out, r)
	}
	st.mu.RUnlock()
	return out
}

// LookupKey returns the resource of this key, nil for none.
func (st *Store) LookupKey(key []byte) *Resource {
	st.mu.RLock()
	defer st.mu.RUnlock()
	return st.resources[string(key)]
}

// LookupResource returns the resource of this job and instance, nil for none.
func (st *Store) LookupResource(job, instance string) *Resource {
	st.mu.RLock()
	defer st.mu.RUnlock()
	return st.resources[job+"\xff"+instance]
}

// LookupFamily returns the family of this name, nil for none.
func (st *Store) LookupFamily(name string) *Family {
	st.mu.RLock()
	defer st.mu.RUnlock()
	return st.families[name]
}

// Limits returns max_series and max_series_per_resource.
func (st *Store) Limits() (maxSeries, maxSeriesPerResource int64) {
	return st.maxSeries, st.maxPerResource
}

// FamilyStat is a family as the cardinality view shows it.
type FamilyStat struct {
	Family *Family
	Series int
	// Resources is the number of resources that hold series of the family.
	Resources int
}

// Stat reads the family's counts under one short read lock.
func (f *Family) Stat() FamilyStat {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return FamilyStat{Family: f, Series: len(f.series), Resources: len(f.card.held)}
}

// HeldBy is the number of series r holds in the family.
func (f *Family) HeldBy(r *Resource) int {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return int(f.card.held[r])
}

// ScanChunk copies the label sets and resources of at most one chunk of the
// family's series, from position start, under one read lock hold: less than
// a scrape's chunk holds it, which copies values too. With of set only that
// resource's series are copied. It appends to labels and res and returns
// them with the number of series the family holds now. A series that a
// removal moves between two calls may be seen twice or not at all.
func (f *Family) ScanChunk(start int, of *Resource, labels []LabelSet, res []*Resource) ([]LabelSet, []*Resource, int) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	end := min(start+chunk, len(f.series))
	for _, s := range f.series[min(start, end):end] {
		if of == nil || s.Resource == of {
			labels, res = append(labels, s.Labels), append(res, s.Resource)
		}
	}
	return labels, res, len(f.series)
}

// ChunkSize is how many series ScanChunk copies at most.
const ChunkSize = chunk
