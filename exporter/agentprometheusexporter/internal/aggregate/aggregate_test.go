package aggregate_test

import (
	"math"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/aggregate"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/convert"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/storetest"
)

const group = `job="api",method="get"`

var get = map[string]any{"method": "get", "user": "u1"}

func TestAGroupAddsIncrementsAndNeverGoesDown(t *testing.T) {
	st := gateway(t, aggregate.Config{}, byMethod("calls"))
	var last float64
	step := func(instance string, p pt, v, want float64) {
		t.Helper()
		st.Consume(agentBatch(instance).counter("calls", p, v).md)
		st.Advance(time.Second)
		got, ok := value(st, "calls_total", group)
		require.True(t, ok)
		assert.Equal(t, want, got)
		assert.GreaterOrEqual(t, got, last, "never down")
		last = got
	}
	step("a", pt{get, 1, 10}, 3, 3)       // a run that began since the gateway: all of it
	step("b", pt{get, 2, 10}, 4, 7)       // another agent, same group
	step("a", pt{get, 1, 20}, 5, 9)       // +2
	step("a", pt{get, 25, 30}, 1, 10)     // a restarted: a new run, from zero
	step("a", pt{get, 25, 40}, 0.5, 10.5) // went down without a new start: a reset, counted from zero
	step("b", pt{get, 2, 40}, 4, 10.5)    // b did not move
}

func TestTheAgentsOwnSeriesAreNotServed(t *testing.T) {
	st := gateway(t, aggregate.Config{}, byMethod("calls"))
	stats := st.Consume(agentBatch("a").counter("calls", pt{get, 1, 10}, 3).counter("other", pt{get, 1, 10}, 3).md)
	assert.Equal(t, int64(1), stats.Aggregated)
	assert.Equal(t, []string{`job="api",method="get"`}, keys(st.Series("calls_total")), "one group, no instance, no pod, no user")
	assert.Equal(t, []string{`instance="a",job="api",method="get",user="u1"`}, keys(st.Series("other_total")), "a metric no rule matches is the agent's")
}

func TestGroupLabels(t *testing.T) {
	for _, tc := range []struct {
		name string
		rule aggregate.RuleConfig
		want string
	}{
		{"by keeps the listed point attributes and job", aggregate.RuleConfig{By: []string{"service.name", "method"}}, group},
		{"by a resource attribute", aggregate.RuleConfig{By: []string{"k8s.pod.name"}}, `k8s_pod_name="pod-a"`},
		{"by without service.name drops job", aggregate.RuleConfig{By: []string{"method"}}, `method="get"`},
		{"without drops the listed ones, and instance always", aggregate.RuleConfig{Without: []string{"user"}}, group},
		{"without nothing but the instance", aggregate.RuleConfig{Without: []string{}}, `job="api",method="get",user="u1"`},
		{"without service.name drops job", aggregate.RuleConfig{Without: []string{"service.name", "user"}}, `method="get"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.rule.Metrics = []string{"calls"}
			st := gateway(t, aggregate.Config{}, tc.rule)
			st.Consume(agentBatch("a").counter("calls", pt{get, 1, 10}, 3).md)
			assert.Equal(t, []string{tc.want}, keys(st.Series("calls_total")))
		})
	}
	t.Run("job keeps the namespace when it is kept", func(t *testing.T) {
		st := gateway(t, aggregate.Config{}, aggregate.RuleConfig{Metrics: []string{"calls"}, By: []string{"service.name", "service.namespace"}})
		b := agentBatch("a").counter("calls", pt{get, 1, 10}, 3)
		b.md.ResourceMetrics().At(0).Resource().Attributes().PutStr("service.namespace", "shop")
		st.Consume(b.md)
		assert.Equal(t, []string{`job="shop/api"`}, keys(st.Series("calls_total")))
	})
	t.Run("wildcards match OTLP names", func(t *testing.T) {
		st := gateway(t, aggregate.Config{}, aggregate.RuleConfig{Metrics: []string{"http.server.*"}, By: []string{"method"}})
		st.Consume(agentBatch("a").counter("http.server.requests", pt{get, 1, 10}, 3).counter("http.client.requests", pt{get, 1, 10}, 3).md)
		assert.Equal(t, []string{`method="get"`}, keys(st.Series("http_server_requests_total")))
		assert.Len(t, st.Series("http_client_requests_total"), 1)
		assert.Contains(t, keys(st.Series("http_client_requests_total"))[0], `instance="a"`)
	})
}

func TestAGroupIsANewRunShownFromZero(t *testing.T) {
	st := gateway(t, aggregate.Config{}, byMethod("calls"))
	now := st.Now()
	st.Consume(agentBatch("a").counter("calls", pt{get, 1, 10}, 3).md)
	s := st.Series("calls_total")[group]
	assert.True(t, s.Delta, "its value exists nowhere else")
	assert.Equal(t, now, s.RunStarted)
	assert.Less(t, s.Start, now, "its zero fits before its first value")
	assert.Equal(t, now, s.Timestamp, "stamped with the gateway's clock")
}

func TestDeltasCountEachPointOnce(t *testing.T) {
	st := gateway(t, aggregate.Config{}, byMethod("calls"))
	st.Consume(agentBatch("a").delta("calls", pt{get, 1, 10}, 3).md)
	st.Consume(agentBatch("b").delta("calls", pt{get, 1, 10}, 2).md)
	stats := st.Consume(agentBatch("a").delta("calls", pt{get, 1, 10}, 3).md)
	assert.Equal(t, int64(1), stats.Dropped[convert.OutOfOrder], "a retried delta")
	st.Consume(agentBatch("a").delta("calls", pt{get, 10, 20}, 4).md)
	got, _ := value(st, "calls_total", group)
	assert.Equal(t, 9.0, got)
}

func TestTwoAgentsClaimingOneIdentity(t *testing.T) {
	st := gateway(t, aggregate.Config{}, byMethod("calls"))
	st.Consume(agentBatch("a").counter("calls", pt{get, 1, 10}, 10).md)
	st.Consume(agentBatch("a").counter("calls", pt{get, 5, 11}, 3).md) // the newer run wins
	stats := st.Consume(agentBatch("a").counter("calls", pt{get, 1, 12}, 12).md)
	assert.Equal(t, int64(1), stats.Dropped[convert.OutOfOrder], "the older run's points are refused")
	st.Consume(agentBatch("a").counter("calls", pt{get, 5, 13}, 4).md)
	got, _ := value(st, "calls_total", group)
	assert.Equal(t, 14.0, got, "10, then the newer run's 3 and 1")
}

func TestGauges(t *testing.T) {
	for fn, want := range map[string][3]float64{"": {7, 5, 4}, "max": {5, 5, 4}, "min": {2, 0, 4}} {
		t.Run("gauge "+fn, func(t *testing.T) {
			st := gateway(t, aggregate.Config{}, aggregate.RuleConfig{Metrics: []string{"depth"}, By: []string{"method"}, Gauge: fn})
			st.Consume(agentBatch("a").gauge("depth", pt{get, 0, 10}, 5).md)
			st.Consume(agentBatch("b").gauge("depth", pt{get, 0, 10}, 2).md)
			got, _ := value(st, "depth", `method="get"`)
			assert.Equal(t, want[0], got)
			st.Consume(agentBatch("b").gauge("depth", pt{get, 0, 11}, 0).md)
			got, _ = value(st, "depth", `method="get"`)
			assert.Equal(t, want[1], got)
			st.Consume(agentBatch("a").ended("depth", pt{get, 0, 12}).md)
			st.Consume(agentBatch("b").gauge("depth", pt{get, 0, 12}, 4).md)
			got, _ = value(st, "depth", `method="get"`)
			assert.Equal(t, want[2], got, "a gauge that ended left its group")
			st.Consume(agentBatch("b").ended("depth", pt{get, 0, 13}).md)
			_, served := value(st, "depth", `method="get"`)
			assert.False(t, served, "a group without members says nothing: a 0 would be wrong for max and min")
		})
	}
}

func TestHistogramsAddBucketByBucket(t *testing.T) {
	st := gateway(t, aggregate.Config{}, byMethod("latency"))
	bounds := []float64{0.1, 1}
	st.Consume(agentBatch("a").histogram("latency", pmetric.AggregationTemporalityCumulative, pt{get, 1, 10}, bounds, []uint64{1, 2, 0}, 1.5).md)
	st.Consume(agentBatch("b").histogram("latency", pmetric.AggregationTemporalityCumulative, pt{get, 1, 10}, bounds, []uint64{0, 1, 1}, 3).md)
	st.Consume(agentBatch("a").histogram("latency", pmetric.AggregationTemporalityCumulative, pt{get, 1, 20}, bounds, []uint64{2, 2, 0}, 1.6).md)
	s := st.Series("latency")[group]
	assert.Equal(t, uint64(6), s.Count)
	assert.InDelta(t, 4.6, s.Value, 1e-9)
	assert.Equal(t, []uint64{2, 5}, s.Cumulative)

	stats := st.Consume(agentBatch("c").histogram("latency", pmetric.AggregationTemporalityCumulative, pt{get, 1, 10}, []float64{0.5}, []uint64{1, 1}, 1).md)
	assert.Equal(t, int64(1), stats.Dropped[convert.BoundsMismatch], "other bounds in one group are refused")
	assert.Equal(t, uint64(6), st.Series("latency")[group].Count, "and change nothing")
	assert.Equal(t, int64(2), st.Agg.Sources(), "nor hold a source")
}

func TestExponentialHistogramsMergeAsPrometheusDoes(t *testing.T) {
	st := gateway(t, aggregate.Config{}, byMethod("latency"))
	a := exp{scale: 2, offset: 3, buckets: []uint64{1, 2, 3, 4}, zeroCount: 1, sum: 10}
	b := exp{scale: 1, offset: -2, buckets: []uint64{5, 0, 1}, sum: 2}
	st.Consume(agentBatch("a").exponential("latency", pt{get, 1, 10}, a).md)
	st.Consume(agentBatch("b").exponential("latency", pt{get, 1, 10}, b).md)
	s := st.Series("latency")[group]
	require.NotNil(t, s.Native)
	want, _, _, err := float(a).Add(float(b))
	require.NoError(t, err)
	got := aggregate.Float(s.Native, s.Count, s.Value)
	assert.Equal(t, int32(1), got.Schema, "the lower schema")
	assert.True(t, want.Compact(0).Equals(got.Compact(0)), "want %v, got %v", want, got)
}

// float is an exponential point as Prometheus' FloatHistogram, for the
// expected results.
func float(e exp) *histogram.FloatHistogram {
	h := &histogram.FloatHistogram{Schema: e.scale, ZeroThreshold: 1e-128, ZeroCount: float64(e.zeroCount), Sum: e.sum, Count: float64(e.zeroCount)}
	h.PositiveSpans = []histogram.Span{{Offset: e.offset + 1, Length: uint32(len(e.buckets))}}
	for _, c := range e.buckets {
		h.PositiveBuckets = append(h.PositiveBuckets, float64(c))
		h.Count += float64(c)
	}
	return h
}

func TestHostileInputIsRefusedAndTheGroupStaysExact(t *testing.T) {
	st := gateway(t, aggregate.Config{}, byMethod("calls", "latency", "summary", "updown"))
	st.Consume(agentBatch("good").counter("calls", pt{get, 1, 10}, 3).md)
	for _, tc := range []struct {
		name   string
		batch  *batch
		reason convert.Reason
	}{
		{"NaN", agentBatch("bad").counter("calls", pt{get, 1, 10}, math.NaN()), convert.Invalid},
		{"+Inf", agentBatch("bad").counter("calls", pt{get, 1, 10}, math.Inf(1)), convert.Invalid},
		{"a negative counter", agentBatch("bad").counter("calls", pt{get, 1, 10}, -1), convert.Invalid},
		{"a start after the point", agentBatch("bad").counter("calls", pt{get, 20, 10}, 1), convert.Invalid},
		{"a histogram whose buckets are not its count", func() *batch {
			b := agentBatch("bad").histogram("latency", pmetric.AggregationTemporalityCumulative, pt{get, 1, 10}, []float64{1}, []uint64{1, 1}, 1)
			b.metric("latency").Histogram().DataPoints().At(0).SetCount(5)
			return b
		}(), convert.Invalid},
		{"a histogram count beyond 2^53", agentBatch("bad").histogram("latency", pmetric.AggregationTemporalityCumulative, pt{get, 1, 10}, []float64{1}, []uint64{1 << 60, 0}, 1), convert.Overflow},
		{"a summary", func() *batch {
			b := agentBatch("bad")
			m := b.metric("summary")
			dp := m.SetEmptySummary().DataPoints().AppendEmpty()
			dp.SetTimestamp(at(10))
			return b
		}(), convert.NotAggregatable},
		{"a non-monotonic sum", agentBatch("bad").sum("updown", pmetric.AggregationTemporalityCumulative, false, pt{get, 1, 10}, 5), convert.NotAggregatable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stats := st.Consume(tc.batch.md)
			assert.Equal(t, int64(1), stats.Dropped[tc.reason], "%v", stats.Dropped)
			assert.Zero(t, stats.Aggregated)
		})
	}
	st.Consume(agentBatch("good").counter("calls", pt{get, 1, 20}, 5).md)
	got, _ := value(st, "calls_total", group)
	assert.Equal(t, 5.0, got, "the good agent's counts, exactly")
	assert.NotContains(t, st.FamilyNames(), "summary", "nothing served of a refused metric")
}

func TestSourcesAreBounded(t *testing.T) {
	st := gateway(t, aggregate.Config{MaxSources: 2}, byMethod("calls"))
	st.Consume(agentBatch("a").counter("calls", pt{get, 1, 10}, 1).md)
	st.Consume(agentBatch("b").counter("calls", pt{get, 1, 10}, 1).md)
	stats := st.Consume(agentBatch("c").counter("calls", pt{get, 1, 10}, 1).md)
	assert.Equal(t, int64(1), stats.Dropped[convert.MaxSources])
	st.Consume(agentBatch("a").counter("calls", pt{get, 1, 20}, 3).md)
	got, _ := value(st, "calls_total", group)
	assert.Equal(t, 4.0, got, "the sources held keep counting")
}

func TestSourcesExpireAndTheirCountsStay(t *testing.T) {
	st := gateway(t, aggregate.Config{Expiration: time.Minute}, byMethod("calls"))
	st.Consume(agentBatch("a").counter("calls", pt{get, 1, 10}, 3).md)
	st.Consume(agentBatch("b").counter("calls", pt{get, 1, 10}, 4).md)
	require.Equal(t, int64(2), st.Agg.Sources())
	st.Advance(30 * time.Second)
	st.Consume(agentBatch("b").counter("calls", pt{get, 1, 40}, 5).md)
	st.Advance(45 * time.Second)
	st.Agg.Tick(st.Now())
	assert.Equal(t, int64(1), st.Agg.Sources(), "a, idle for a minute, expired")
	got, _ := value(st, "calls_total", group)
	assert.Equal(t, 8.0, got, "what a counted stays counted")
	// a comes back with the same run: what it counted before expiring was
	// counted, so it counts from its first point again.
	st.Consume(agentBatch("a").counter("calls", pt{get, 1, 80}, 6).md)
	got, _ = value(st, "calls_total", group)
	assert.Equal(t, 8.0, got, "a run that began before a's last point here counts from its first point")
	st.Consume(agentBatch("a").counter("calls", pt{get, 1, 90}, 7).md)
	got, _ = value(st, "calls_total", group)
	assert.Equal(t, 9.0, got)
	// A new run of a, since: all of it.
	st.Consume(agentBatch("a").counter("calls", pt{get, 95, 100}, 2).md)
	got, _ = value(st, "calls_total", group)
	assert.Equal(t, 11.0, got)
}

func TestRunsThatBeganBeforeTheGatewayCountFromTheirFirstPoint(t *testing.T) {
	started := at(100).AsTime().UnixNano()
	st := gateway(t, aggregate.Config{Started: started}, byMethod("calls"))
	st.Consume(agentBatch("old").counter("calls", pt{get, 1, 110}, 1000).md)
	st.Consume(agentBatch("new").counter("calls", pt{get, 105, 110}, 3).md)
	got, _ := value(st, "calls_total", group)
	assert.Equal(t, 3.0, got, "the old run's 1000 were counted before this gateway, by whoever held it")
	st.Consume(agentBatch("old").counter("calls", pt{get, 1, 120}, 1010).md)
	got, _ = value(st, "calls_total", group)
	assert.Equal(t, 13.0, got)
	// A series the old agent begins later is new since: all of it counts.
	st.Consume(agentBatch("old").counter("calls", pt{map[string]any{"method": "get", "user": "u2"}, 1, 130}, 2).md)
	got, _ = value(st, "calls_total", group)
	assert.Equal(t, 15.0, got)
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

var _ = storetest.New
