package prommodel

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
		ns, ok := Created(c.start, c.held)
		assert.Equal(t, c.ok, ok, "start %d, held %v", c.start, c.held)
		assert.Equal(t, c.start, ns)
	}
}

func TestCounterExemplarIsTheLatest(t *testing.T) {
	assert.Equal(t, -1, CounterExemplar(0))
	assert.Equal(t, 1, CounterExemplar(2))
}

func TestBucketExemplarsGoToTheFirstBucketNotBelowThem(t *testing.T) {
	bounds := []float64{1, 2, 5}
	values := []float64{0.5, 2, 1.5, 9, math.Inf(-1), 3}
	value := func(i int) float64 { return values[i] }
	// 0.5 and then -Inf to bound 1; 2 and then 1.5 to bound 2; 3 to 5; 9 to +Inf.
	assert.Equal(t, []int{4, 2, 5, 3}, BucketExemplars(nil, bounds, len(values), value))

	at := make([]int, 0, 8)
	assert.Empty(t, BucketExemplars(at, bounds, 0, value), "no exemplars")
	assert.Empty(t, BucketExemplars(at, nil, len(values), value), "no classic buckets")
}
