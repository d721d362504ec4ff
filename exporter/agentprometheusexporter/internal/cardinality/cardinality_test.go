package cardinality

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
)

func TestDistinctIsExactThenEstimated(t *testing.T) {
	for _, n := range []int{0, 1, 999, exactLimit, exactLimit + 1, 50_000, 1_000_000} {
		var d distinct
		for i := range n {
			// Every value twice: duplicates must not count.
			d.add(xxhash.Sum64String(fmt.Sprint("v", i)))
			d.add(xxhash.Sum64String(fmt.Sprint("v", i)))
		}
		got, est := d.count()
		if n <= exactLimit {
			assert.Equal(t, int64(n), got, "%d values", n)
			assert.False(t, est)
			continue
		}
		assert.True(t, est, "%d values", n)
		assert.Greater(t, got, int64(exactLimit), "an estimate is never below the exact count it replaced")
		assert.InEpsilon(t, float64(n), float64(got), 0.03, "%d values: %d", n, got)
		assert.Len(t, d.regs, 1<<hllBits, "the sketch's size does not grow with the values")
	}
}

func TestTopKeepsTheFirstInOrder(t *testing.T) {
	items := []int{5, 3, 9, 1, 9, 7, 2, 8}
	desc := func(a, b int) int { return b - a }
	assert.Equal(t, []int{9, 9, 8}, top(items, 3, desc))
	assert.Equal(t, []int{9, 9, 8, 7, 5, 3, 2, 1}, top(items, 20, desc))
	assert.Equal(t, []int{5, 3, 9, 1, 9, 7, 2, 8}, items, "the input is left as it was")
	assert.Empty(t, top([]int(nil), 3, desc))
}

func TestSpreadOrderVisitsEveryChunkOnce(t *testing.T) {
	for n := range 300 {
		seen := make([]bool, n)
		for c := range spreadOrder(n) {
			require.False(t, seen[c], "n=%d visits %d twice", n, c)
			seen[c] = true
		}
		require.NotContains(t, seen, false, "n=%d", n)
	}
	// The first √n visits span the range.
	var first []int
	for c := range spreadOrder(1000) {
		if len(first) == 32 {
			break
		}
		first = append(first, c)
	}
	assert.Equal(t, 0, first[0])
	assert.Equal(t, 992, first[31])
}

func TestChangesKeepTheLastMinutes(t *testing.T) {
	var c Changes
	t0 := time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)
	c.Record(t0, Change{Created: 5})
	c.Record(t0.Add(30*time.Second), Change{Refused: Refused{MaxSeries: 2}})
	c.Record(t0.Add(2*time.Minute), Change{Expired: 3})
	c.Record(t0.Add(2*time.Minute), Change{}) // nothing happened: nothing is taken

	minutes, since := c.Last(t0.Add(2*time.Minute + time.Second))
	require.Len(t, minutes, Minutes)
	assert.Equal(t, t0.Add(2*time.Minute), minutes[Minutes-1].Start)
	assert.Equal(t, Change{Expired: 3}, minutes[Minutes-1].Change)
	assert.Equal(t, Change{}, minutes[Minutes-2].Change)
	assert.Equal(t, Change{Created: 5, Refused: Refused{MaxSeries: 2}}, minutes[Minutes-3].Change)
	assert.Equal(t, Change{Created: 5, Expired: 3, Refused: Refused{MaxSeries: 2}}, since)

	// A quarter of an hour later the buckets have been reused or are
	// outside the window; the total since the start stays.
	c.Record(t0.Add(17*time.Minute), Change{Ended: 1})
	minutes, since = c.Last(t0.Add(17 * time.Minute))
	for _, m := range minutes[:Minutes-1] {
		assert.Equal(t, Change{}, m.Change, "%v", m.Start)
	}
	assert.Equal(t, Change{Ended: 1}, minutes[Minutes-1].Change)
	assert.Equal(t, int64(1), since.Ended)
}

func TestWantsJSON(t *testing.T) {
	for accept, want := range map[string]bool{
		"":                                  false,
		"*/*":                               false,
		"application/json":                  true,
		"application/json;q=0.5, text/html": false,
		"text/html;q=0.4, application/json": true,
		"application/*":                     false,
		"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8": false,
	} {
		r := httptest.NewRequest(http.MethodGet, "/cardinality", nil)
		r.Header.Set("Accept", accept)
		assert.Equal(t, want, wantsJSON(r), accept)
	}
}

func TestFormats(t *testing.T) {
	assert.Equal(t, "0", formatCount(0))
	assert.Equal(t, "999", formatCount(int64(999)))
	assert.Equal(t, "1\u202f000", formatCount(1000))
	assert.Equal(t, "1\u202f234\u202f567", formatCount(int64(1234567)))
	assert.Equal(t, "-12\u202f345", formatCount(-12345))
	assert.Equal(t, "0%", formatPercent(0))
	assert.Equal(t, "<0.1%", formatPercent(0.0004))
	assert.Equal(t, "2.5%", formatPercent(0.025))
	assert.Equal(t, "100%", formatPercent(1))
	assert.Equal(t, "width:0.5%", string(barWidth(0.0001)), "a sliver for what is not nothing")
	assert.Equal(t, "width:100.0%", string(barWidth(math.Inf(1))))
	assert.Equal(t, "hot", heat(0.95))
	assert.Equal(t, "warm", heat(0.7))
	long := strings.Repeat("é", 60)
	assert.Equal(t, strings.Repeat("é", 40)+"…", example(long), "cut at 80 bytes, on a character")
	assert.Equal(t, `a"b`+"\n", example(`a\"b\n`), "unescaped")
}

// TestScanSpreadsOverTheFamily: a scan stopped early has read chunks from
// all over the family, not only its first agents.
func TestScanSpreadsOverTheFamily(t *testing.T) {
	st := store.New(1<<20, 1<<20, store.Claims{})
	const agents, per = 40, store.ChunkSize
	var f *store.Family
	for a := range agents {
		res := st.Resource([]byte(fmt.Sprint("job\xffagent-", a)), 1)
		var w store.Writer
		require.True(t, st.Write(&w, "g", store.KindGauge, "", "", res, 1))
		for i := range per {
			set, _ := store.ParseLabels(fmt.Sprintf(`instance="agent-%d",k="%d"`, a, i))
			w.Put(set.Labels())
		}
		f = w.Family()
		w.Close()
	}

	// A clock that moves 1 ms per look (the scan looks once as it begins,
	// then before each chunk): the deadline comes after a quarter of the chunks.
	clock := time.Unix(0, 0)
	tick := func() time.Time { clock = clock.Add(time.Millisecond); return clock }
	sc := newScan(time.Unix(0, 0).Add((1+agents/4)*time.Millisecond+time.Millisecond/2), tick)
	require.False(t, sc.family(f, nil, true))
	labels, scan := sc.result()
	assert.Equal(t, int64(agents/4*per), scan.Series)
	var seen []int
	for res := range sc.resources {
		var a int
		_, err := fmt.Sscanf(res.Stat().Instance, "agent-%d", &a)
		require.NoError(t, err)
		seen = append(seen, a)
	}
	slices.Sort(seen)
	assert.Len(t, seen, agents/4)
	assert.Less(t, seen[0], agents/4)
	assert.Greater(t, seen[len(seen)-1], agents*3/4, "the sample reaches the last agents: %v", seen)
	assert.Equal(t, "k", labels[0].Name)
	assert.Equal(t, int64(per), labels[0].Distinct)

	// A whole scan reads everything once.
	sc = newScan(time.Now().Add(time.Hour), time.Now)
	require.True(t, sc.family(f, nil, true))
	_, scan = sc.result()
	assert.Equal(t, Scan{Series: agents * per, Complete: true, Seconds: scan.Seconds}, scan)

	// A scan past its deadline reads nothing more and says so.
	sc = newScan(time.Now().Add(-time.Second), time.Now)
	require.False(t, sc.family(f, nil, true))
	_, scan = sc.result()
	assert.False(t, scan.Complete)
	assert.Zero(t, scan.Series)
}

func TestAThirdReportAtOnceIsRefused(t *testing.T) {
	v := New(store.New(10, 10, store.Claims{}), &Changes{}, Options{Top: 5, ScanTimeout: time.Second, Now: time.Now})
	for range maxConcurrent {
		v.slots <- struct{}{} // two reports being built
	}
	w := httptest.NewRecorder()
	v.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/cardinality", nil))
	assert.Equal(t, 503, w.Code)
	assert.Equal(t, "1", w.Header().Get("Retry-After"))

	<-v.slots
	w = httptest.NewRecorder()
	v.ServeHTTP(w, httptest.NewRequest(http.MethodHead, "/cardinality?format=json", nil))
	assert.Equal(t, 200, w.Code)
	assert.Zero(t, w.Body.Len(), "HEAD: headers only")
	assert.NotEmpty(t, w.Header().Get("Content-Length"))
}
