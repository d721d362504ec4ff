package prommodel // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/prommodel"

import "sort"

// The rules below are what every writer writes of a series, so that they
// are written once. exposition's reference writer (its reference_test.go,
// the oracle of the equivalence tests) keeps its own copy of them: sharing
// them with it would hide a wrong rule from those tests.

// Created returns the created time a scrape writes for a series that
// started at start (unix nanoseconds), and whether it writes one: the zero
// of a held run of deltas always has its run's start; any other series one
// from one second after the epoch on (0 and tiny values mean unknown).
func Created(start int64, heldZero bool) (ns int64, ok bool) {
	return start, heldZero || start >= 1e9
}

// CounterExemplar is the index, among the n exemplars a counter kept in
// the order they came, of the one it carries: its latest, as client_golang
// keeps one; -1 for none.
func CounterExemplar(n int) int { return n - 1 }

// BucketExemplars places the exemplars of a classic histogram with bounds
// in its buckets: it returns at, reused, holding per bound and then for +Inf
// the index of the exemplar that bucket carries, -1 for none. Exemplar i of
// n has the value value(i); each goes to the first bucket whose bound is
// not below its value, a later one replacing an earlier; one above every
// bound goes to +Inf (which client_golang then writes as a bucket of its
// own). It returns an empty slice when no bucket carries one: no exemplars,
// or no classic buckets (nil bounds; a native histogram carries its
// exemplars apart).
func BucketExemplars(at []int, bounds []float64, n int, value func(i int) float64) []int {
	at = at[:0]
	if n == 0 || bounds == nil {
		return at
	}
	for range len(bounds) + 1 {
		at = append(at, -1)
	}
	for i := range n {
		at[sort.SearchFloat64s(bounds, value(i))] = i
	}
	return at
}
