package fleet

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOverlapsOfMeasuresEachMoveFromWholeSamples(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	// sample begins at begin ms and is read in read ms; agent a of job is
	// on the replicas named.
	sample := func(begin, read int, replicas ...string) holdings {
		h := holdings{at: at(begin), done: at(begin + read), byAgent: map[string]map[string]int64{}}
		if len(replicas) > 0 {
			h.byAgent[agentKey("job", "a")] = map[string]int64{}
			for _, r := range replicas {
				h.byAgent[agentKey("job", "a")][r] = 4
			}
		}
		// Another job's agent on two replicas throughout: not counted.
		h.byAgent[agentKey("other", "a")] = map[string]int64{"r1": 4, "r2": 4}
		return h
	}
	s := &sampler{samples: []holdings{
		sample(0, 20, "r1"),
		sample(500, 20, "r1", "r2"), // a move: from 520 ms
		sample(1000, 20, "r1", "r2"),
		sample(1500, 20, "r2"), // to 1000 ms: 480 ms
		sample(2000, 20, "r2", "r3"),
		sample(2500, 600, "r2", "r3"), // read too slowly: left out
		sample(3000, 20, "r1", "r2", "r3"),
		sample(3500, 20, "r3"), // 2020 to 3000 ms, three holders
		sample(4000, 20, "r3"),
		sample(6000, 20, "r3", "r1"),
		sample(7500, 20, "r3", "r1"), // after a gap: a stretch of its own
		sample(8000, 20, "r1"),
		sample(9000, 20, "r1", "r2"), // after the window
	}}
	o := s.overlapsOf("job", []window{{at(0), at(8500)}}, time.Second, 500*time.Millisecond)
	assert.Equal(t, 11, o.samples, "the samples in the window read in time")
	require.Len(t, o.byAgent["a"], 4)
	assert.Len(t, o.byAgent, 1, "only job's agents")
	for i, want := range []struct {
		length           time.Duration
		samples, holders int
	}{
		{480 * time.Millisecond, 2, 2},
		{980 * time.Millisecond, 2, 3},
		{0, 1, 2},
		{0, 1, 2},
	} {
		got := o.byAgent["a"][i]
		assert.Equal(t, want.length, got.length(), "stretch %d", i)
		assert.Equal(t, want.samples, got.samples, "stretch %d", i)
		assert.Equal(t, want.holders, got.holders, "stretch %d", i)
	}
	inst, l := o.longest()
	assert.Equal(t, "a", inst)
	assert.Equal(t, 980*time.Millisecond, l.length())

	f := s.copiesOf([]string{"job"}, []window{{at(0), at(8500)}}, 500*time.Millisecond)
	assert.Equal(t, 11, f.samples)
	assert.InDelta(t, (1+2+2+1+2+3+1+1+2+2+1)/11.0, f.mean, 1e-9)
	assert.InDelta(t, 3, f.max, 1e-9)
}
