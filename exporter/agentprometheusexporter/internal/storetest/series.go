package storetest

import (
	"slices"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
)

// Series is a copy of what a stored series holds, for assertions: it stays
// as it was when taken, whatever the store does next.
type Series struct {
	Value                        float64
	Count                        uint64
	Start, Timestamp, RunStarted int64
	Delta                        bool
	// Bounds are shared by every series of one bucket layout (nil unless an
	// explicit-bucket histogram); Cumulative is a copy of the counts.
	Bounds     *store.Bounds
	Cumulative []uint64
	Native     *store.NativeHistogram
	Quantiles  []store.Quantile
	Exemplars  []store.Exemplar
}

// FamilyNamed returns the family of this name, nil when there is none.
func (s *Store) FamilyNamed(name string) *store.Family {
	for _, f := range s.Families() {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// FamilyNames are the names of the families, sorted.
func (s *Store) FamilyNames() []string {
	var names []string
	for _, f := range s.Families() {
		names = append(names, f.Name)
	}
	return names
}

// Series returns copies of the series of family name by their labels as
// LabelSet.Text writes them; nil when there is no such family.
func (s *Store) Series(name string) map[string]Series {
	f := s.FamilyNamed(name)
	if f == nil {
		return nil
	}
	out := map[string]Series{}
	f.Range(func(sr *store.Series) {
		c := Series{
			Value: sr.Value, Count: sr.Count,
			Start: sr.Start, Timestamp: sr.Timestamp, RunStarted: sr.RunStarted, Delta: sr.Delta,
			Quantiles: slices.Clone(sr.Quantiles()),
			Exemplars: slices.Clone(sr.Exemplars()),
		}
		if h := sr.Histogram; h != nil {
			c.Bounds, c.Cumulative = h.Bounds, slices.Clone(h.Cumulative)
		}
		if n := sr.Native(); n != nil {
			c.Native = &store.NativeHistogram{
				Schema: n.Schema, ZeroThreshold: n.ZeroThreshold, ZeroCount: n.ZeroCount,
				Positive: store.Buckets{Offset: n.Positive.Offset, Counts: slices.Clone(n.Positive.Counts)},
				Negative: store.Buckets{Offset: n.Negative.Offset, Counts: slices.Clone(n.Negative.Counts)},
			}
		}
		out[sr.Labels.Text()] = c
	})
	return out
}
