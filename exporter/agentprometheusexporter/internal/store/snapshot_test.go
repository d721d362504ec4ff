package store

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCreatedIsWrittenFromOneSecondOnAndAlwaysForAHeldZero(t *testing.T) {
	for _, c := range []struct {
		start int64
		held  bool
		ok    bool
	}{
		{0, false, false},
		{1, false, false},
		{1e9 - 1, false, false},
		{1e9, false, true},
		{1700000000e9, false, true},
		{-5e9, false, false},
		{0, true, true},
		{1700000000e9, true, true},
	} {
		s := Snapshot{Start: c.start, Held: c.held}
		ns, ok := s.Created()
		assert.Equal(t, c.ok, ok, "start %d, held %v", c.start, c.held)
		assert.Equal(t, c.start, ns)
	}
}

func TestCounterExemplarIsTheLatest(t *testing.T) {
	assert.Nil(t, (&Snapshot{}).CounterExemplar())
	s := Snapshot{Exemplars: []Exemplar{{Value: 1}, {Value: 2}}}
	assert.Equal(t, 2.0, s.CounterExemplar().Value)
}

func TestBucketExemplarsGoToTheFirstBucketNotBelowThem(t *testing.T) {
	bounds := &Bounds{Values: []float64{1, 2, 5}}
	s := Snapshot{Bounds: bounds, Exemplars: []Exemplar{
		{Value: 0.5}, {Value: 2}, {Value: 1.5}, {Value: 9}, {Value: math.Inf(-1)}, {Value: 3},
	}}
	// 0.5 and then -Inf to bound 1; 2 and then 1.5 to bound 2; 3 to 5; 9 to +Inf.
	assert.Equal(t, []int{4, 2, 5, 3}, s.BucketExemplars(nil))

	at := make([]int, 0, 8)
	assert.Empty(t, (&Snapshot{Bounds: bounds}).BucketExemplars(at), "no exemplars")
	assert.Empty(t, (&Snapshot{Exemplars: s.Exemplars}).BucketExemplars(at), "no classic buckets")
	assert.Empty(t, (&Snapshot{Bounds: bounds, Native: &NativeSnapshot{}, Exemplars: s.Exemplars}).BucketExemplars(at), "native")
}
