package store // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"

import (
	"slices"
)

// Held describes the series that accumulate deltas that RemoveUpTo kept.
type Held struct {
	Series int
	// RunStarted is the latest start of their runs (see Series.Shown), and
	// Updated their latest update, in store clock.
	RunStarted, Updated int64
}

// ResourceByID returns the resource with this ID, or nil.
func (st *Store) ResourceByID(id ID) *Resource {
	st.mu.RLock()
	defer st.mu.RUnlock()
	return st.byID[id]
}

// RemoveUpTo removes the series of r not newer than point time through,
// except those that accumulate deltas, which it reports: their values exist
// nowhere else until every scraper has taken them (RemoveDeltasUpTo).
func (st *Store) RemoveUpTo(r *Resource, through int64) (removed int, held Held) {
	removed = st.removeMembers(r, func(s *Series) bool {
		if s.Timestamp > through {
			return false
		}
		if s.Delta {
			held.Series++
			held.RunStarted = max(held.RunStarted, s.RunStarted)
			held.Updated = max(held.Updated, s.updated)
			return false
		}
		return true
	})
	return removed, held
}

// RemoveDeltasUpTo removes the series of r that accumulate deltas and are
// not newer than point time through.
func (st *Store) RemoveDeltasUpTo(r *Resource, through int64) int {
	return st.removeMembers(r, func(s *Series) bool { return s.Delta && s.Timestamp <= through })
}

// removeMembers removes the series of r for which remove says so, taking
// each family's lock for at most a chunk of them at a time, and returns how
// many it removed. remove runs with the series' family locked.
func (st *Store) removeMembers(r *Resource, remove func(*Series) bool) int {
	type group struct {
		f       *Family
		members []*Series
	}
	r.mu.Lock()
	groups := make([]group, 0, len(r.members))
	for f, members := range r.members {
		groups = append(groups, group{f, slices.Clone(members)})
	}
	r.mu.Unlock()
	// A family's series together: one lock hold per family and chunk.
	removed := 0
	for _, g := range groups {
		for members := g.members; len(members) > 0; {
			n := min(len(members), chunk)
			g.f.lock()
			for _, s := range members[:n] {
				// Removed meanwhile (expired, ended) or already moved on.
				if !s.removed && remove(s) {
					g.f.remove(s.index)
					removed++
				}
			}
			g.f.mu.Unlock()
			members = members[n:]
		}
	}
	return removed
}
