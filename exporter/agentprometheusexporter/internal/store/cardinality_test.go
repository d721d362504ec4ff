package store

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/prommodel"
)

// TestCardinalityCounts follows the counts of the cardinality view through
// creation, refusal by each limit, deletion and expiry.
func TestCardinalityCounts(t *testing.T) {
	st := New(5, 3, prommodel.Claims{})
	g, _ := st.Family("g", prommodel.KindGauge, "", "")
	c, _ := st.Family("c_total", prommodel.KindCounter, "", "")
	flood, calm := st.Resource([]byte("flood\xffa"), 1), st.Resource([]byte("calm\xffb"), 1)
	upsert := func(f *Family, r *Resource, labels string, now int64) Outcome {
		f.lock()
		defer f.mu.Unlock()
		_, out := upsertText(t, f, labels, r, now)
		return out
	}
	for _, l := range []string{`id="1"`, `id="2"`, `id="3"`, `id="4"`} {
		upsert(g, flood, l, 3)
	}
	require.Equal(t, Created, upsert(c, calm, `k="a"`, 1))
	require.Equal(t, Created, upsert(g, calm, `k="a"`, 2))
	require.Equal(t, RefusedMaxSeries, upsert(c, calm, `k="b"`, 2))

	assert.Equal(t, ResourceStat{Resource: flood, Job: "flood", Instance: "a", Series: 3, RefusedPerResource: 1}, flood.Stat())
	assert.Equal(t, ResourceStat{Resource: calm, Job: "calm", Instance: "b", Series: 2, RefusedMaxSeries: 1}, calm.Stat())
	assert.Equal(t, FamilyStat{Family: g, Series: 4, Resources: 2}, g.Stat())
	assert.Equal(t, FamilyStat{Family: c, Series: 1, Resources: 1}, c.Stat())
	assert.Equal(t, 3, g.HeldBy(flood))
	assert.Equal(t, 0, c.HeldBy(flood))
	assert.Same(t, flood, st.LookupResource("flood", "a"))
	assert.Nil(t, st.LookupResource("flood", "b"))
	assert.Same(t, c, st.LookupFamily("c_total"))
	assert.ElementsMatch(t, []*Resource{flood, calm}, st.Resources())

	// A deletion and an expiry give the slots back; a resource holding
	// nothing more in a family no longer counts as one of its senders.
	g.lock()
	require.True(t, deleteText(t, g, `k="a"`))
	g.mu.Unlock()
	assert.Equal(t, FamilyStat{Family: g, Series: 3, Resources: 1}, g.Stat())
	assert.Equal(t, 1, st.Sweep(2)) // c's k="a" was last updated at 1
	assert.Equal(t, int64(0), calm.Stat().Series)
	assert.Nil(t, st.LookupFamily("c_total"), "the emptied family is gone")
	assert.Equal(t, int64(1), calm.Stat().RefusedMaxSeries, "refusals are counted since the resource was first seen")
}

func TestScanChunk(t *testing.T) {
	st := New(10_000, 10_000, prommodel.Claims{})
	f, _ := st.Family("g", prommodel.KindGauge, "", "")
	a, b := st.Resource([]byte("a\xff1"), 1), st.Resource([]byte("b\xff2"), 1)
	f.lock()
	n := ChunkSize + 10
	for i := range n {
		r, l := a, fmt.Sprintf(`x="%d"`, i)
		if i%2 == 1 {
			r = b
		}
		_, out := upsertText(t, f, l, r, 1)
		require.Equal(t, Created, out)
	}
	f.mu.Unlock()

	labels, res, total := f.ScanChunk(0, nil, nil, nil)
	assert.Equal(t, n, total)
	assert.Len(t, labels, ChunkSize, "one chunk at most")
	assert.Len(t, res, ChunkSize)
	labels, res, _ = f.ScanChunk(ChunkSize, b, labels[:0], res[:0])
	assert.Len(t, labels, 5, "only b's series of the last 10")
	for _, r := range res {
		assert.Same(t, b, r)
	}
	labels, _, total = f.ScanChunk(n+5, nil, labels[:0], res[:0])
	assert.Empty(t, labels, "past the end")
	assert.Equal(t, n, total)
}
