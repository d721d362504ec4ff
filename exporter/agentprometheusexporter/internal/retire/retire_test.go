package retire_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/retire"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/storetest"
)

// scrapes is what the scrapers have been shown, set by the test.
type scrapes struct {
	zero, value atomic.Int64
	regular     atomic.Int64
	stamp       atomic.Int64
}

func (s *scrapes) Release(int64) store.Release {
	return store.Release{Zero: s.zero.Load(), Value: s.value.Load()}
}
func (s *scrapes) RegularCount(int64) int { return int(s.regular.Load()) }
func (s *scrapes) LastStamp() int64       { return s.stamp.Load() }

// removals counts what the Retirement reports removed, by reason.
type removals struct {
	mu sync.Mutex
	n  map[retire.Reason]int
}

func (r *removals) add(reason retire.Reason, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n[reason] += n
}

func (r *removals) of(reason retire.Reason) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n[reason]
}

type fixture struct {
	st      *storetest.Store
	scrapes *scrapes
	removed *removals
	tick    chan time.Time
	r       *retire.Retirement
}

const expiration = time.Minute

func newFixture(t *testing.T) *fixture {
	f := &fixture{
		st:      storetest.New(t, storetest.Options{}),
		scrapes: &scrapes{},
		removed: &removals{n: map[retire.Reason]int{}},
		tick:    make(chan time.Time),
	}
	f.r = retire.New(retire.Settings{
		Store:      f.st.Store,
		Scrapes:    f.scrapes,
		Expiration: expiration,
		Now:        f.st.Now,
		NewTicker:  func(time.Duration) (<-chan time.Time, func()) { return f.tick, func() {} },
		Logger:     zap.NewNop(),
		Removed:    f.removed.add,
	})
	return f
}

// sweep runs one sweep and waits for it: the second send returns once the
// first tick has been handled.
func (f *fixture) sweep() {
	f.tick <- time.Time{}
	f.tick <- time.Time{}
}

// agentBatch is agent's batch: a cumulative counter and, when delta, a
// delta counter, each of one series, at the store's clock.
func (f *fixture) agentBatch(agent string, delta bool) pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("service.name", "shop")
	rm.Resource().Attributes().PutStr("service.instance.id", agent)
	sm := rm.ScopeMetrics().AppendEmpty()
	now := pcommon.Timestamp(f.st.Now())
	sum := func(name string, temporality pmetric.AggregationTemporality) {
		m := sm.Metrics().AppendEmpty()
		m.SetName(name)
		s := m.SetEmptySum()
		s.SetIsMonotonic(true)
		s.SetAggregationTemporality(temporality)
		dp := s.DataPoints().AppendEmpty()
		dp.SetStartTimestamp(now - pcommon.Timestamp(time.Second))
		dp.SetTimestamp(now)
		dp.SetDoubleValue(3)
	}
	sum("calls", pmetric.AggregationTemporalityCumulative)
	if delta {
		sum("bytes", pmetric.AggregationTemporalityDelta)
	}
	return md
}

func (f *fixture) agent(instance string) *store.Resource {
	return f.st.LookupResource("shop", instance)
}

func TestTheSweepRemovesWhatExpired(t *testing.T) {
	f := newFixture(t)
	f.r.Start()
	t.Cleanup(f.r.Stop)
	f.st.Consume(f.agentBatch("old", false))
	f.st.Advance(expiration / 2)
	f.st.Consume(f.agentBatch("new", false))
	f.st.Advance(expiration/2 + time.Second)
	f.sweep()
	assert.Equal(t, 1, f.removed.of(retire.Expired), "the old agent's counter")
	assert.Nil(t, f.agent("old"))
	require.NotNil(t, f.agent("new"))
	assert.Equal(t, int64(1), f.agent("new").SeriesCount())
}

func TestADepartureRemovesCumulativeSeriesAtOnceAndDeltasOnceScraped(t *testing.T) {
	f := newFixture(t)
	f.r.Start()
	t.Cleanup(f.r.Stop)
	f.st.Consume(f.agentBatch("pod-1", true))
	agent := f.agent("pod-1")
	require.NotNil(t, agent)
	require.Equal(t, int64(2), agent.SeriesCount())

	require.True(t, f.r.Depart(agent.ID(), f.st.Now()))
	require.Eventually(t, func() bool { return f.removed.of(retire.Departed) == 1 }, 5*time.Second, time.Millisecond,
		"the cumulative counter goes at once")
	assert.Equal(t, int64(1), agent.SeriesCount(), "the delta waits for the scrapers")

	// The scrapers were shown the delta's value, then began encodings
	// after its last update: it has reached them all.
	f.scrapes.value.Store(f.st.Now())
	time.Sleep(300 * time.Millisecond) // polls that see the value, not yet the zero
	assert.Equal(t, int64(1), agent.SeriesCount(), "not yet shown to every scraper after its update")
	f.scrapes.zero.Store(f.st.Now() + 2)
	require.Eventually(t, func() bool { return f.removed.of(retire.Departed) == 2 }, 5*time.Second, time.Millisecond)
	assert.Zero(t, agent.SeriesCount())
}

func TestADepartureKeepsWhatIsNewerThanTheClaim(t *testing.T) {
	f := newFixture(t)
	f.r.Start()
	t.Cleanup(f.r.Stop)
	f.st.Consume(f.agentBatch("pod-1", false))
	f.st.Consume(f.agentBatch("pod-2", false))
	// Another gateway holds pod-1's points up to before the one here, and
	// pod-2's up to it. Departures are applied in order: once pod-2's
	// series went, pod-1's departure has been applied too.
	require.True(t, f.r.Depart(f.agent("pod-1").ID(), f.st.Now()-1))
	require.True(t, f.r.Depart(f.agent("pod-2").ID(), f.st.Now()))
	require.Eventually(t, func() bool { return f.removed.of(retire.Departed) == 1 }, 5*time.Second, time.Millisecond)
	assert.Zero(t, f.agent("pod-2").SeriesCount())
	assert.Equal(t, int64(1), f.agent("pod-1").SeriesCount(), "a point newer than the claim stays")
}

func TestDrainWaitsForEveryScraperAtMostTheTimeout(t *testing.T) {
	t.Run("no deltas: no wait", func(t *testing.T) {
		f := newFixture(t)
		f.st.Consume(f.agentBatch("pod-1", false))
		f.scrapes.regular.Store(1)
		began := time.Now()
		f.r.Drain(context.Background(), time.Minute)
		assert.Less(t, time.Since(began), time.Second)
	})
	t.Run("no scraper: no wait", func(t *testing.T) {
		f := newFixture(t)
		f.st.Consume(f.agentBatch("pod-1", true))
		began := time.Now()
		f.r.Drain(context.Background(), time.Minute)
		assert.Less(t, time.Since(began), time.Second)
	})
	t.Run("the scrapers take the deltas", func(t *testing.T) {
		f := newFixture(t)
		f.st.Consume(f.agentBatch("pod-1", true))
		f.scrapes.regular.Store(1)
		done := make(chan struct{})
		go func() {
			defer close(done)
			f.r.Drain(context.Background(), time.Minute)
		}()
		f.scrapes.value.Store(f.st.Store.RunAt())
		select {
		case <-done:
			t.Fatal("the drain ended before a scrape after the last delta")
		case <-time.After(200 * time.Millisecond):
		}
		f.scrapes.zero.Store(f.st.Now() + 1)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("the drain did not end once every scraper took the deltas")
		}
	})
	t.Run("a scraper that does not come", func(t *testing.T) {
		f := newFixture(t)
		f.st.Consume(f.agentBatch("pod-1", true))
		f.scrapes.regular.Store(1)
		began := time.Now()
		f.r.Drain(context.Background(), 300*time.Millisecond)
		took := time.Since(began)
		assert.GreaterOrEqual(t, took, 300*time.Millisecond)
		assert.Less(t, took, 3*time.Second)
	})
}
