package descriptors

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
)

func TestCacheIsBoundedAndCounts(t *testing.T) {
	c, err := NewCache(2)
	require.NoError(t, err)
	ids := []Identity{{Family: "a"}, {Family: "b"}, {Family: "c"}}
	for i := range ids {
		assert.Nil(t, c.Get(uint64(i), &ids[i]))
		c.Add(uint64(i), &Descriptor{Identity: ids[i]})
	}
	assert.Equal(t, 2, c.Len())
	assert.Nil(t, c.Get(0, &ids[0]), "the least recently used descriptor was evicted")
	assert.NotNil(t, c.Get(2, &ids[2]))
	hits, misses, evictions := c.Stats()
	assert.Equal(t, int64(1), hits)
	assert.Equal(t, int64(4), misses)
	assert.Equal(t, int64(1), evictions)
}

func TestHashCollisionIsAMiss(t *testing.T) {
	c, err := NewCache(10)
	require.NoError(t, err)
	stored := Identity{Family: "a", Keys: []string{"x"}}
	c.Add(7, &Descriptor{Identity: stored})
	other := Identity{Family: "a", Keys: []string{"y"}}
	assert.Nil(t, c.Get(7, &other), "same hash, other label names")
	same := Identity{Family: "a", Keys: []string{"x"}}
	assert.NotNil(t, c.Get(7, &same))
}

func TestReducedSetsLeaveAbsentLabelsOutAndAreShared(t *testing.T) {
	d := &Descriptor{Names: store.NewLabelNames([]string{"a", "b", "c"})}
	got := d.Reduced([]byte{0, 1, 0})
	assert.Equal(t, []string{"a", "c"}, got.Names)
	assert.Same(t, got, d.Reduced([]byte{0, 1, 0}), "made once per descriptor")
	assert.Empty(t, d.Reduced([]byte{1, 1, 1}).Names)
}
