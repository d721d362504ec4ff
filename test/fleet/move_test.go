package fleet

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/statsgate/statsgate/test/internal/promtest"
)

// moveCase is one way of running the move scenario: an agent's counter, +10
// every export, is exported 6 times to one replica and then 6 times to
// another (a reconnect, a rolling restart, an OTLP/HTTP request the load
// balancer sends elsewhere), while Prometheus scrapes both replicas.
type moveCase struct {
	name  string
	delta bool
	// sets are --set overrides of the default config; none is the default.
	sets []string
	// scrape is added to the Prometheus scrape config.
	scrape string
	// firstRun is how many exports go to the first replica (6 by default).
	firstRun int
	// alternate sends every export to the other replica, as an OTLP/HTTP
	// balancer does that balances each request.
	alternate bool
	// storage is added to the Prometheus config's top level.
	storage string
	// fleet forms the two replicas into a fleet: the replica the agent
	// left drops its copy.
	fleet bool
}

// moveResult is what Prometheus stored for the agent's counter.
type moveResult struct {
	counterRun
	increase   float64 // increase() over the run, as a dashboard shows it
	outOfOrder float64 // samples Prometheus refused as out of order
	// moved is when the first export reached the second replica; refused
	// when Prometheus last refused a sample as out of order (zero: never).
	moved, refused time.Time
	// claimable is when the second replica may claim the agent at the
	// earliest: fleet::claim_interval after the first replica's claim.
	claimable time.Time
}

const (
	moveExports  = 12
	moveInterval = 2 * time.Second
	moveStep     = 10
	// moveWatch is how long Prometheus goes on scraping both replicas after
	// the last export, while the first still serves its copy.
	moveWatch = 20 * time.Second
)

// runMove runs one case and returns what Prometheus stored.
func runMove(t *testing.T, tl tools, c moveCase) moveResult {
	dir := t.TempDir()
	r1 := newReplica(t, "replica-1", tl.gateway, dir, c.sets...)
	r2 := newReplica(t, "replica-2", tl.gateway, dir, c.sets...)
	if c.fleet {
		formFleet(t, dir, []*replica{r1, r2})
	}
	r1.start(t)
	r2.start(t)
	prom := promtest.Start(t, dir, "prometheus", tl.prometheus, fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: statsgate
    honor_labels: true
%s    static_configs:
      - targets: [%q, %q]
%s`, c.scrape, r1.metrics, r2.metrics, c.storage))
	stopReplicasBeforePrometheus(t, []*replica{r1, r2})
	prom.WaitUp(t, "statsgate", 2, 30*time.Second)

	instance := "move-" + strings.ToLower(rand.Text()[:8])
	res := resource.NewSchemaless(attribute.String("service.name", "move-agent"), attribute.String("service.instance.id", instance))
	ctx := context.Background()
	exporter := func(r *replica) *otlpmetricgrpc.Exporter {
		exp, err := otlpmetricgrpc.New(ctx, otlpmetricgrpc.WithEndpoint(r.otlpGRPC), otlpmetricgrpc.WithInsecure())
		require.NoError(t, err)
		t.Cleanup(func() { _ = exp.Shutdown(context.Background()) })
		return exp
	}
	to := [2]*otlpmetricgrpc.Exporter{exporter(r1), exporter(r2)}
	firstRun := c.firstRun
	if firstRun == 0 {
		firstRun = moveExports / 2
	}
	start := time.Now().Add(-time.Second)
	prev := start
	// increase() is asked over a window that begins well before the first
	// sample, as a dashboard's would, so that its extrapolation stops half an
	// interval before the first sample.
	windowStart := time.Now().Add(-10 * time.Second)
	var out moveResult
	// When Prometheus refuses samples: the copy on the replica the agent
	// left, scraped after the newer one.
	refusals := make(chan time.Time)
	stopWatch := make(chan struct{})
	go func() {
		var refused time.Time
		defer func() { refusals <- refused }()
		last := -1.0
		for {
			select {
			case <-stopWatch:
				return
			case <-time.After(250 * time.Millisecond):
			}
			if v, err := prom.SelfMetric("prometheus_target_scrapes_sample_out_of_order_total"); err == nil {
				if last >= 0 && v > last {
					refused = time.Now()
				}
				last = v
			}
		}
	}()
	for i := 1; i <= moveExports; i++ {
		now := time.Now()
		dp := metricdata.DataPoint[int64]{StartTime: start, Time: now, Value: int64(moveStep * i)}
		temporality := metricdata.CumulativeTemporality
		if c.delta {
			dp.StartTime, dp.Value, temporality = prev, moveStep, metricdata.DeltaTemporality
		}
		prev = now
		rm := &metricdata.ResourceMetrics{Resource: res, ScopeMetrics: []metricdata.ScopeMetrics{{
			Scope: instrumentation.Scope{Name: "move"},
			Metrics: []metricdata.Metrics{{Name: "fleet.moves", Data: metricdata.Sum[int64]{
				Temporality: temporality, IsMonotonic: true, DataPoints: []metricdata.DataPoint[int64]{dp},
			}}},
		}}}
		exp := to[0]
		if i > firstRun || c.alternate && i%2 == 0 {
			exp = to[1]
		}
		require.NoError(t, exp.Export(ctx, rm), "export %d", i)
		switch {
		case i == 1:
			out.claimable = time.Now().Add(defaultClaimInterval)
		case exp == to[1] && out.moved.IsZero():
			out.moved = time.Now()
		}
		if i < moveExports {
			time.Sleep(moveInterval)
		}
	}
	time.Sleep(moveWatch)
	close(stopWatch)
	out.refused = <-refusals
	end := time.Now()

	sel := fmt.Sprintf(`fleet_moves_total{job="move-agent", instance=%q}`, instance)
	series, err := prom.Raw(sel, end.Sub(start)+time.Minute, end)
	require.NoError(t, err)
	require.Len(t, series, 1, "one series for the agent's counter")
	out.counterRun = summarize(series[0].Points)
	window := fmt.Sprintf("%dms", end.Sub(windowStart).Milliseconds())
	inc, err := prom.Floats(fmt.Sprintf(`increase(%s[%s])`, sel, window))
	require.NoError(t, err)
	out.increase = inc[""]
	out.outOfOrder, err = prom.SelfMetric("prometheus_target_scrapes_sample_out_of_order_total")
	require.NoError(t, err)
	var vals []string
	for _, p := range series[0].Points {
		vals = append(vals, fmt.Sprint(p.V))
	}
	lastRefusal := "none during the watch"
	if !out.refused.IsZero() {
		lastRefusal = fmt.Sprintf("%v after the move", out.refused.Sub(out.moved).Round(100*time.Millisecond))
	}
	t.Logf("%s: stored %s; total %v, resets %d, increase() %.1f, out-of-order refused %v (the last %s), longest gap %v",
		c.name, strings.Join(vals, ","), out.total, out.resets, out.increase, out.outOfOrder, lastRefusal, out.maxGap)
	return out
}

// defaultClaimInterval is fleet::claim_interval as the exporter ships it.
const defaultClaimInterval = 15 * time.Second

// checkRefusalsStop asserts that Prometheus stopped refusing the copy of the
// replica the agent left soon after the second replica could claim it: at
// its first export there at or after the damping interval since the first
// replica's claim, then the claim's gossip and a scrape of each.
func checkRefusalsStop(t *testing.T, r moveResult) {
	t.Helper()
	claimed := r.moved
	for claimed.Before(r.claimable) {
		claimed = claimed.Add(moveInterval)
	}
	deadline := claimed.Add(time.Second + 2*scrapeInterval)
	assert.False(t, r.refused.After(deadline), "the last refusal %v after the move; the claim could be made %v after it",
		r.refused.Sub(r.moved).Round(100*time.Millisecond), claimed.Sub(r.moved).Round(100*time.Millisecond))
}

// TestAgentMovesBetweenReplicas is the scenario of an agent whose exports
// move from one replica to another, run against the default config: what
// Prometheus stores must be what the agent counted.
func TestAgentMovesBetweenReplicas(t *testing.T) {
	t.Parallel()
	tl := requireTools(t, false)
	want := float64(moveExports * moveStep)
	t.Run("cumulative", func(t *testing.T) {
		t.Parallel()
		r := runMove(t, tl, moveCase{name: "cumulative, default config"})
		assert.Zero(t, r.resets, "counter resets")
		assert.Equal(t, want, r.total, "total the stored samples count")
		assert.InEpsilon(t, want, r.increase, 0.01, "increase() over the run")
		// Alone, the replica the agent left serves its copy until
		// metric_expiration: Prometheus refuses it on every scrape.
		assert.WithinDuration(t, time.Now(), r.refused, 3*time.Second, "refusals go on to the end of the watch")
	})
	t.Run("cumulative, fleet", func(t *testing.T) {
		t.Parallel()
		r := runMove(t, tl, moveCase{name: "cumulative, fleet", fleet: true})
		assert.Zero(t, r.resets, "counter resets")
		assert.Equal(t, want, r.total, "total the stored samples count")
		assert.InEpsilon(t, want, r.increase, 0.01, "increase() over the run")
		checkRefusalsStop(t, r)
	})
	t.Run("delta, fleet", func(t *testing.T) {
		t.Parallel()
		r := runMove(t, tl, moveCase{name: "delta, fleet", delta: true, fleet: true})
		assert.LessOrEqual(t, r.resets, 1, "at most one reset for the move")
		assert.Equal(t, want, r.total, "total the stored samples count")
		checkRefusalsStop(t, r)
	})
	t.Run("delta", func(t *testing.T) {
		t.Parallel()
		r := runMove(t, tl, moveCase{name: "delta, default config", delta: true})
		assert.LessOrEqual(t, r.resets, 1, "at most one reset for the move")
		assert.Equal(t, want, r.total, "total the stored samples count")
	})
	t.Run("delta, one export before the move", func(t *testing.T) {
		t.Parallel()
		// The new run's first value equals the whole previous run: only the
		// run's zero makes the move a reset Prometheus sees.
		r := runMove(t, tl, moveCase{name: "delta, one export before the move, default config", delta: true, firstRun: 1})
		assert.Equal(t, 1, r.resets, "one reset for the move")
		assert.Equal(t, want, r.total, "total the stored samples count")
	})
	t.Run("without sample timestamps the stale copy corrupts the counter", func(t *testing.T) {
		t.Parallel()
		r := runMove(t, tl, moveCase{name: "cumulative, send_timestamps off", sets: []string{"exporters::agentprometheus::send_timestamps=false"}})
		assert.Positive(t, r.resets, "the interleaved copies read as resets")
		assert.Greater(t, r.total, want, "resets inflate the total")
	})
}

// TestMoveSafetyAlternatives measures other ways of running the scenario,
// for the design notes (STATSGATE_MOVE_ALTERNATIVES=1; not in make test).
func TestMoveSafetyAlternatives(t *testing.T) {
	if os.Getenv("STATSGATE_MOVE_ALTERNATIVES") == "" {
		t.Skip("set STATSGATE_MOVE_ALTERNATIVES=1 to measure the alternatives")
	}
	tl := requireTools(t, false)
	for _, c := range []moveCase{
		{name: "timestamps off (contrib's default)", sets: []string{"exporters::agentprometheus::send_timestamps=false"}},
		{name: "timestamps off, metric_expiration 3s", sets: []string{"exporters::agentprometheus::send_timestamps=false", "exporters::agentprometheus::metric_expiration=3s"}},
		{name: "timestamps on", sets: []string{"exporters::agentprometheus::send_timestamps=true"}},
		{name: "timestamps on, track_timestamps_staleness", sets: []string{"exporters::agentprometheus::send_timestamps=true"}, scrape: "    track_timestamps_staleness: true\n"},
		{name: "timestamps on, track_timestamps_staleness, metric_expiration 5s", sets: []string{"exporters::agentprometheus::send_timestamps=true", "exporters::agentprometheus::metric_expiration=5s"}, scrape: "    track_timestamps_staleness: true\n"},
		{name: "delta, timestamps on", delta: true, sets: []string{"exporters::agentprometheus::send_timestamps=true"}},
		{name: "delta, timestamps on, one export before the move", delta: true, firstRun: 1, sets: []string{"exporters::agentprometheus::send_timestamps=true"}},
		{name: "delta, timestamps off", delta: true, sets: []string{"exporters::agentprometheus::send_timestamps=false"}},
		{name: "cumulative, every export to the other replica", alternate: true},
		{name: "delta, every export to the other replica", delta: true, alternate: true},
		{name: "cumulative, out_of_order_time_window 10m", storage: "storage:\n  tsdb:\n    out_of_order_time_window: 10m\n"},
		{name: "delta, out_of_order_time_window 10m", delta: true, storage: "storage:\n  tsdb:\n    out_of_order_time_window: 10m\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			runMove(t, tl, c)
		})
	}
}
