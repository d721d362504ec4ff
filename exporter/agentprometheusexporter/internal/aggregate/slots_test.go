package aggregate

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSlotsAgainstAMap adds, finds and removes keys at random, with keys
// that collide on their home slot, and compares with a Go map.
func TestSlotsAgainstAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var s slots[int]
	want := map[uint64]int{}
	keys := make([]uint64, 500)
	for i := range keys {
		// Half the keys share their low bits: long probe runs.
		keys[i] = rng.Uint64()
		if i%2 == 0 {
			keys[i] = keys[i]<<10 | 7
		}
	}
	for step := range 20000 {
		k := keys[rng.IntN(len(keys))]
		switch _, held := want[k]; {
		case !held && rng.IntN(3) > 0:
			s.add(k, step)
			want[k] = step
		case held && rng.IntN(2) == 0:
			s.remove(k)
			delete(want, k)
		}
		if step%97 == 0 {
			s.each(func(key uint64, v *int) bool { return true })
		}
	}
	require.Equal(t, len(want), s.len())
	for _, k := range keys {
		v, held := want[k]
		got := s.get(k)
		if !held {
			assert.Nil(t, got, "%x", k)
			continue
		}
		require.NotNil(t, got, "%x", k)
		assert.Equal(t, v, *got)
	}
	seen := map[uint64]int{}
	removed := s.each(func(key uint64, v *int) bool {
		seen[key] = *v
		return key%2 == 0
	})
	assert.Equal(t, want, seen)
	for k := range want {
		if k%2 == 1 {
			assert.Nil(t, s.get(k))
		} else {
			assert.NotNil(t, s.get(k))
		}
	}
	assert.Equal(t, len(want)-s.len(), removed)
}
