package store

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/prommodel"
)

// put writes a series of res into family name at point time ts.
func put(t *testing.T, st *Store, name, labels string, res *Resource, ts int64, delta bool) *Series {
	t.Helper()
	f, ok := st.Family(name, prommodel.KindCounter, "", "")
	require.True(t, ok)
	f.lock()
	defer f.mu.Unlock()
	s, out := upsertText(t, f, labels, res, ts)
	require.NotNil(t, s, "%v", out)
	s.Timestamp, s.Delta = ts, delta
	if delta {
		s.RunStarted = ts
	}
	return s
}

// membersOf lists a resource's series as family and labels.
func membersOf(r *Resource) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for f, members := range r.members {
		for i, s := range members {
			if int(s.member) != i {
				out = append(out, fmt.Sprintf("member %d says it is at %d", i, s.member))
			}
			out = append(out, f.Name+"{"+s.Labels.Text()+"}")
		}
	}
	slices.Sort(out)
	return out
}

func TestRemoveUpToKeepsNewerSeriesAndDeltas(t *testing.T) {
	st := New(1<<20, 1<<20, prommodel.Claims{})
	agent := st.Resource([]byte("shop\xffpod-1"), 1)
	bystander := st.Resource([]byte("shop\xffpod-2"), 1)
	put(t, st, "a_total", `k="1"`, agent, 100, false)
	put(t, st, "a_total", `k="2"`, agent, 100, false)
	put(t, st, "b_total", `k="1"`, agent, 100, false)
	put(t, st, "a_total", `k="3"`, bystander, 100, false)
	put(t, st, "d_total", `k="1"`, agent, 100, true)
	// Written after the claim's point: the agent came back meanwhile.
	put(t, st, "c_total", `k="1"`, agent, 300, false)
	require.Equal(t, int64(6), st.SeriesCount())

	removed, held := st.RemoveUpTo(agent, 200)
	assert.Equal(t, 3, removed)
	assert.Equal(t, Held{Series: 1, RunStarted: 100, Updated: 100}, held)
	assert.Equal(t, []string{`c_total{k="1"}`, `d_total{k="1"}`}, membersOf(agent))
	assert.Equal(t, []string{`a_total{k="3"}`}, membersOf(bystander))
	assert.Equal(t, int64(3), st.SeriesCount())
	assert.Equal(t, int64(2), agent.SeriesCount())
	a, _ := st.Family("a_total", prommodel.KindCounter, "", "")
	assert.Equal(t, []string{`k="3"`}, labelsOf(a))

	// Once the scrapers took the deltas.
	assert.Equal(t, 1, st.RemoveDeltasUpTo(agent, 200))
	assert.Equal(t, []string{`c_total{k="1"}`}, membersOf(agent))
	assert.Equal(t, int64(2), st.SeriesCount())
	// Nothing left to depart up to that point.
	removed, held = st.RemoveUpTo(agent, 200)
	assert.Zero(t, removed)
	assert.Zero(t, held)
}

func TestRemoveDeltasUpToKeepsDeltasUpdatedSince(t *testing.T) {
	st := New(1<<20, 1<<20, prommodel.Claims{})
	agent := st.Resource([]byte("shop\xffpod-1"), 1)
	s := put(t, st, "d_total", `k="1"`, agent, 100, true)
	_, held := st.RemoveUpTo(agent, 150)
	require.Equal(t, 1, held.Series)
	s.Timestamp = 160 // the agent's next delta arrived here
	assert.Zero(t, st.RemoveDeltasUpTo(agent, 150))
	assert.Equal(t, int64(1), st.SeriesCount())
}

// Every path that removes a series takes it out of its resource's members:
// expiry, a point that ends the series, a departure; and the members stay
// consistent over thousands of creations and removals in any order.
func TestResourceMembersFollowEveryRemoval(t *testing.T) {
	st := New(1<<20, 1<<20, prommodel.Claims{})
	agents := []*Resource{st.Resource([]byte("j\xff1"), 0), st.Resource([]byte("j\xff2"), 0)}
	const n = 3 * chunk
	for i := range n {
		put(t, st, fmt.Sprintf("f%d_total", i%7), fmt.Sprintf(`i="%d"`, i), agents[i%2], int64(i), false)
	}
	f3, _ := st.Family("f3_total", prommodel.KindCounter, "", "")
	f3.lock()
	require.True(t, deleteText(t, f3, `i="3"`))
	f3.mu.Unlock()
	assert.Equal(t, n/2-1, len(membersOf(agents[1])))

	expired := st.Sweep(n / 2) // the older half
	assert.Equal(t, n/2-1, expired)
	removed, _ := st.RemoveUpTo(agents[0], n)
	assert.Equal(t, n/4, removed)
	assert.Empty(t, membersOf(agents[0]))
	got := membersOf(agents[1])
	assert.Len(t, got, n/4)
	for _, m := range got {
		assert.NotContains(t, m, "says it is at")
	}
	assert.Equal(t, int64(n/4), st.SeriesCount())
}

func TestResourcesAreFoundByID(t *testing.T) {
	st := New(10, 10, prommodel.Claims{})
	r := st.Resource([]byte("shop\xffpod-1"), 1)
	assert.Same(t, r, st.ResourceByID(IDOf([]byte("shop\xffpod-1"))))
	assert.Nil(t, st.ResourceByID(IDOf([]byte("shop\xffpod-2"))))
	assert.NotEqual(t, IDOf([]byte("a\xffbc")), IDOf([]byte("ab\xffc")))
	st.Sweep(2)
	assert.Nil(t, st.ResourceByID(r.ID()), "a swept resource is gone from the index too")
}
