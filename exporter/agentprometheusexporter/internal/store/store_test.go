package store

import (
	"fmt"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/prommodel"
)

func labelsOf(f *Family) []string {
	var out []string
	f.Range(func(s *Series) { out = append(out, s.Labels.Text()) })
	sort.Strings(out)
	return out
}

func TestHashCollisionsKeepSeriesApart(t *testing.T) {
	st := New(100, 100, prommodel.Claims{})
	f, ok := st.Family("g", prommodel.KindGauge, "", "")
	require.True(t, ok)
	res := st.Resource([]byte("job\xffinst"), 0)
	allCollideForTests = true
	defer func() { allCollideForTests = false }()
	f.lock()
	a, out := upsertText(t, f, `k="a"`, res, 1)
	require.Equal(t, Created, out)
	b, out := upsertText(t, f, `k="b"`, res, 1)
	require.Equal(t, Created, out)
	c, out := upsertText(t, f, `k="c"`, res, 1)
	require.Equal(t, Created, out)
	require.NotSame(t, a, b)

	again, out := upsertText(t, f, `k="b"`, res, 2)
	assert.Equal(t, Updated, out)
	assert.Same(t, b, again)

	// Removing the indexed series promotes a colliding one into the index.
	require.True(t, deleteText(t, f, `k="a"`))
	got, out := upsertText(t, f, `k="c"`, res, 3)
	assert.Equal(t, Updated, out)
	assert.Same(t, c, got)
	got, out = upsertText(t, f, `k="b"`, res, 3)
	assert.Equal(t, Updated, out)
	assert.Same(t, b, got)
	assert.False(t, deleteText(t, f, `k="a"`))
	f.mu.Unlock()

	assert.Equal(t, []string{`k="b"`, `k="c"`}, labelsOf(f))
	assert.Equal(t, int64(2), st.SeriesCount())
	assert.Equal(t, int64(2), res.SeriesCount())
}

func TestLimits(t *testing.T) {
	st := New(3, 2, prommodel.Claims{})
	f, _ := st.Family("g", prommodel.KindGauge, "", "")
	r1, r2 := st.Resource([]byte("a\xff1"), 0), st.Resource([]byte("b\xff2"), 0)
	f.lock()
	defer f.mu.Unlock()
	upsert := func(r *Resource, l string) Outcome {
		_, out := upsertText(t, f, `k="`+l+`"`, r, 0)
		return out
	}
	assert.Equal(t, Created, upsert(r1, "x"))
	assert.Equal(t, Created, upsert(r1, "y"))
	assert.Equal(t, RefusedMaxSeriesPerResource, upsert(r1, "z"))
	assert.Equal(t, Updated, upsert(r1, "x"), "existing series keep updating at the limit")
	assert.Equal(t, Created, upsert(r2, "p"))
	assert.Equal(t, RefusedMaxSeries, upsert(r2, "q"))
	assert.Equal(t, int64(3), st.SeriesCount())
	assert.Equal(t, int64(1), r2.SeriesCount())
}

func TestSweepRemovesStaleSeriesAcrossChunksAndEmptyFamilies(t *testing.T) {
	st := New(1<<20, 1<<20, prommodel.Claims{})
	res := st.Resource([]byte("j\xffi"), 0)
	f, _ := st.Family("g", prommodel.KindGauge, "", "")
	other, _ := st.Family("h", prommodel.KindGauge, "", "")
	const n = 3*chunk + 17
	f.lock()
	for i := range n {
		l := fmt.Appendf(nil, `i="%d"`, i)
		// Every third series is fresh.
		updated := int64(0)
		if i%3 == 0 {
			updated = 100
		}
		upsertText(t, f, string(l), res, updated)
	}
	f.mu.Unlock()
	other.lock()
	upsertText(t, other, `x="1"`, res, 0)
	other.mu.Unlock()

	expired := st.Sweep(50)
	assert.Equal(t, n-(n+2)/3+1, expired)
	assert.Equal(t, (n+2)/3, f.Len())
	for _, l := range labelsOf(f) {
		var i int
		_, err := fmt.Sscanf(l, `i="%d"`, &i)
		require.NoError(t, err)
		assert.Zero(t, i%3, "a fresh series survives, a stale one does not: %s", l)
	}
	// The emptied family is gone and marked dead for late writers.
	names := []string{}
	for _, fam := range st.Families() {
		names = append(names, fam.Name)
	}
	assert.Equal(t, []string{"g"}, names)
	other.lock()
	assert.True(t, other.dead)
	other.mu.Unlock()
	assert.Equal(t, int64(f.Len()), st.SeriesCount())
}

func TestRangeVisitsEverySeriesOnce(t *testing.T) {
	st := New(1<<20, 1<<20, prommodel.Claims{})
	res := st.Resource([]byte("j\xffi"), 0)
	f, _ := st.Family("g", prommodel.KindGauge, "", "")
	const n = 2*chunk + 5
	f.lock()
	for i := range n {
		l := fmt.Appendf(nil, `i="%d"`, i)
		upsertText(t, f, string(l), res, 0)
	}
	f.mu.Unlock()
	seen := map[string]int{}
	f.Range(func(s *Series) { seen[s.Labels.Text()]++ })
	assert.Len(t, seen, n)
	for l, c := range seen {
		assert.Equal(t, 1, c, l)
	}
}

func TestTypeConflictKeepsFirstKind(t *testing.T) {
	st := New(10, 10, prommodel.Claims{})
	f1, ok := st.Family("m", prommodel.KindCounter, "first", "")
	require.True(t, ok)
	f2, ok := st.Family("m", prommodel.KindGauge, "second", "")
	assert.False(t, ok)
	assert.Same(t, f1, f2)
	assert.Equal(t, prommodel.KindCounter, f2.Kind)
	assert.Equal(t, "first", f2.Help)
}

func TestResourceSurvivesSweepWhileFresh(t *testing.T) {
	st := New(10, 10, prommodel.Claims{})
	r := st.Resource([]byte("j\xffi"), 100)
	ti, _ := parseLabels(`instance="i",job="j"`)
	r.SetTargetInfo(ti.Names, []byte(ti.values))
	st.Sweep(50)
	assert.Same(t, r, st.Resource([]byte("j\xffi"), 200), "a resource touched after the cutoff is kept")
	st.Sweep(300)
	assert.NotSame(t, r, st.Resource([]byte("j\xffi"), 400), "an idle resource without series is removed")
}

func TestNamesTakenByAnotherFamilyAreRefused(t *testing.T) {
	type clash struct {
		name string
		kind prommodel.Kind
	}
	always := []clash{
		{"h_count", prommodel.KindGauge}, {"h_bucket", prommodel.KindHistogram}, // h's series
		{"target_info", prommodel.KindGauge},
		{"a_b", prommodel.KindGauge}, // a.b as escaped for most scrapers
	}
	openMetrics := []clash{{"c", prommodel.KindGauge}, {"n_total", prommodel.KindGauge}} // c_total is "c" in OpenMetrics, n is n_total
	created := []clash{{"h_created", prommodel.KindGauge}, {"c_created", prommodel.KindCounter}}
	for _, tc := range []struct {
		claims          prommodel.Claims
		refused, served []clash
	}{
		{prommodel.Claims{}, always, append(openMetrics, created...)},
		{prommodel.Claims{OpenMetrics: true}, append(always, openMetrics...), created},
		{prommodel.Claims{OpenMetrics: true, CreatedSamples: true}, append(append(always, openMetrics...), created...), nil},
	} {
		st := New(10, 10, tc.claims)
		st.Reserve("target_info")
		for _, name := range []string{"h", "c_total", "n", "a.b"} {
			kind := map[string]prommodel.Kind{"h": prommodel.KindHistogram, "a.b": prommodel.KindGauge}[name]
			if name == "c_total" || name == "n" {
				kind = prommodel.KindCounter
			}
			_, ok := st.Family(name, kind, "", "")
			require.True(t, ok, name)
		}
		for _, c := range tc.refused {
			f, ok := st.Family(c.name, c.kind, "", "")
			assert.False(t, ok, "%+v: %s", tc.claims, c.name)
			assert.Nil(t, f, c.name)
		}
		for _, c := range tc.served {
			_, ok := st.Family(c.name, c.kind, "", "")
			assert.True(t, ok, "%+v: %s", tc.claims, c.name)
		}
	}

	st := New(10, 10, prommodel.Claims{OpenMetrics: true, CreatedSamples: true})
	h, ok := st.Family("h", prommodel.KindHistogram, "", "")
	require.True(t, ok)
	f, ok := st.Family("h_total", prommodel.KindGauge, "", "")
	assert.True(t, ok, "h_total is none of h's names")
	assert.NotNil(t, f)

	// A family swept away frees its names.
	res := st.Resource([]byte("j\xffi"), 0)
	h.lock()
	upsertText(t, h, `k="v"`, res, 0)
	h.mu.Unlock()
	st.Sweep(1)
	_, ok = st.Family("h_count", prommodel.KindGauge, "", "")
	assert.True(t, ok)
}

// A scrape walks a family forward a chunk at a time. A series it has
// written, then swept and sent again before the walk ends, is created anew at
// the end of the family, where the walk would reach it a second time: born
// after the scrape began, it is left to the next scrape.
func TestAScrapeDoesNotWriteASeriesSweptAndSentAgainDuringIt(t *testing.T) {
	walk := func(horizon bool) []string {
		st := New(1<<20, 1<<20, prommodel.Claims{})
		res := st.Resource([]byte("j\xffi"), 0)
		f, _ := st.Family("g", prommodel.KindGauge, "", "")
		f.lock()
		for i := range 3 {
			upsertText(t, f, fmt.Sprintf(`i="%d"`, i), res, int64(10*(i+1)))
		}
		f.mu.Unlock()

		var r Release
		if horizon {
			r.Horizon = st.Horizon()
		}
		var written []string
		sc := &SnapshotScratch{}
		step := func(start int) (int, bool) {
			sc.Reset()
			next, more := f.AppendSnapshots(sc, r, start, 1)
			for _, s := range sc.Snaps() {
				written = append(written, s.Labels.Text())
			}
			return next, more
		}
		next, _ := step(0) // writes i="0"
		// i="0" expires (the last series moves into its place) and its
		// agent sends it again.
		require.Equal(t, 1, st.Sweep(15))
		f.lock()
		_, outcome := upsertText(t, f, `i="0"`, res, 40)
		f.mu.Unlock()
		require.Equal(t, Created, outcome)
		for more := true; more; {
			next, more = step(next)
		}
		return written
	}
	assert.Equal(t, []string{`i="0"`, `i="1"`, `i="0"`}, walk(false), "without the horizon the walk writes i=\"0\" twice")
	assert.Equal(t, []string{`i="0"`, `i="1"`}, walk(true), "once; i=\"2\", moved behind the walk, is missed as before, never written twice")
}

// A family whose series churn (agents replaced by new ones) rebuilds its
// index once more entries have been deleted from it than it holds, and
// finds every series through it afterwards.
func TestChurnRebuildsTheIndex(t *testing.T) {
	st := New(1<<20, 1<<20, prommodel.Claims{})
	res := st.Resource([]byte("j\xffi"), 0)
	f, _ := st.Family("g", prommodel.KindGauge, "", "")
	const live = 2000
	for gen := range 3 {
		f.lock()
		for i := range live {
			upsertText(t, f, fmt.Sprintf(`gen="%d",i="%d"`, gen, i), res, int64(gen+1))
		}
		f.mu.Unlock()
		st.Sweep(int64(gen + 1)) // the generation before goes
		f.mu.RLock()
		assert.Len(t, f.index, live, "generation %d", gen)
		assert.Less(t, f.deleted, live, "the index is rebuilt once more than it holds were deleted")
		f.mu.RUnlock()
	}
	f.lock()
	defer f.mu.Unlock()
	for i := range live {
		_, out := upsertText(t, f, fmt.Sprintf(`gen="2",i="%d"`, i), res, 4)
		require.Equal(t, Updated, out, "series %d found after the rebuild", i)
	}
}
