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

	"github.com/statsgate/statsgate/test/internal/proctest"
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
	// alternate sends each of the first run's exports to the other replica
	// than the one before, as an OTLP/HTTP balancer does that balances each
	// request: 5 moves before the last 6 exports go to the second.
	alternate bool
	// storage is added to the Prometheus config's top level.
	storage string
	// fleet forms the two replicas into a fleet: the replica the agent
	// left drops its copy.
	fleet bool
	// moveOnceStored holds the first export to the second replica back
	// until Prometheus has stored the last value of the first run.
	moveOnceStored bool
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
	// refusedAtEnd says whether a scrape of both replicas after the watch
	// had samples refused.
	refusedAtEnd bool
	// moves is how many times an export went to the other replica than the
	// one before it.
	moves int
	// stay is how long the agent stayed on the first replica: from its
	// first export there to its first export to the second.
	stay time.Duration
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
	sel := fmt.Sprintf(`fleet_moves_total{job="move-agent", instance=%q}`, instance)
	var out moveResult
	var last *otlpmetricgrpc.Exporter
	var first, lastPoint time.Time
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
		if c.moveOnceStored && i == firstRun+1 {
			// Cumulative or delta, the first replica's value is the
			// first run's total.
			want := float64(moveStep * firstRun)
			proctest.Poll(t, 15*time.Second, "Prometheus stores the first run's last value before the move", func() error {
				series, err := prom.Raw(sel, time.Minute, time.Now())
				if err != nil {
					return err
				}
				for _, s := range series {
					for _, p := range s.Points {
						if p.V == want && !p.T.Before(lastPoint.Truncate(time.Millisecond)) {
							return nil
						}
					}
				}
				return fmt.Errorf("%v at %s not stored: %v", want, lastPoint.Format(time.StampMilli), series)
			})
		}
		now := time.Now()
		dp := metricdata.DataPoint[int64]{StartTime: start, Time: now, Value: int64(moveStep * i)}
		temporality := metricdata.CumulativeTemporality
		if c.delta {
			dp.StartTime, dp.Value, temporality = prev, moveStep, metricdata.DeltaTemporality
		}
		prev, lastPoint = now, now
		if i == 1 {
			first = now
		}
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
		if i > 1 && exp != last {
			out.moves++
		}
		last = exp
		switch {
		case i == 1:
			out.claimable = time.Now().Add(defaultClaimInterval)
		case exp == to[1] && out.moved.IsZero():
			out.moved = time.Now()
			out.stay = now.Sub(first)
		}
		if i < moveExports {
			time.Sleep(moveInterval)
		}
	}
	time.Sleep(moveWatch)
	close(stopWatch)
	out.refused = <-refusals
	end := time.Now()

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
	// Read from the scrapes themselves rather than from when the watch saw
	// the count rise, which a stalled scrape or query delays on a loaded
	// machine.
	prom.WaitScrapedAfter(t, "statsgate", time.Now(), 30*time.Second)
	atEnd, err := prom.SelfMetric("prometheus_target_scrapes_sample_out_of_order_total")
	require.NoError(t, err)
	out.refusedAtEnd = atEnd > out.outOfOrder
	var vals []string
	for _, p := range series[0].Points {
		vals = append(vals, fmt.Sprint(p.V))
	}
	lastRefusal := "none during the watch"
	if !out.refused.IsZero() {
		lastRefusal = fmt.Sprintf("%v after the move", out.refused.Sub(out.moved).Round(100*time.Millisecond))
	}
	t.Logf("%s: %d moves, the first after %v; stored %s; total %v, resets %d, increase() %.1f, out-of-order refused %v (the last %s; in a scrape after the watch: %v), longest gap %v",
		c.name, out.moves, out.stay.Round(time.Millisecond), strings.Join(vals, ","), out.total, out.resets, out.increase, out.outOfOrder, lastRefusal, out.refusedAtEnd, out.maxGap)
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
	t.Run("cumulative", func(t *testing.T) {
		t.Parallel()
		r := runMove(t, tl, moveCase{name: "cumulative, default config"})
		checkExact(t, r, false)
		// Alone, the replica the agent left serves its copy until
		// metric_expiration: Prometheus refuses it on every scrape.
		checkRefusedToTheEnd(t, r)
	})
	t.Run("cumulative, fleet", func(t *testing.T) {
		t.Parallel()
		r := runMove(t, tl, moveCase{name: "cumulative, fleet", fleet: true})
		checkExact(t, r, false)
		checkRefusalsStop(t, r)
	})
	t.Run("delta, fleet", func(t *testing.T) {
		t.Parallel()
		r := runMove(t, tl, moveCase{name: "delta, fleet", delta: true, fleet: true})
		checkExact(t, r, true)
		checkRefusalsStop(t, r)
	})
	t.Run("delta", func(t *testing.T) {
		t.Parallel()
		r := runMove(t, tl, moveCase{name: "delta, default config", delta: true})
		checkExact(t, r, true)
		checkRefusedToTheEnd(t, r)
	})
	t.Run("delta, one export before the move", func(t *testing.T) {
		t.Parallel()
		// The new run's first value equals the whole previous run: only the
		// run's zero makes the move a reset Prometheus sees. The move waits
		// until Prometheus has stored the first run's value, as the design
		// needs (checkShortRun): then nothing can overtake it, however late
		// the scrapes, and the count is exact in every run.
		r := runMove(t, tl, moveCase{name: "delta, one export before the move, default config", delta: true, firstRun: 1, moveOnceStored: true})
		checkExact(t, r, true)
		checkRefusedToTheEnd(t, r)
	})
	t.Run("without sample timestamps the stale copy corrupts the counter", func(t *testing.T) {
		t.Parallel()
		r := runMove(t, tl, moveCase{name: "cumulative, send_timestamps off", sets: []string{"exporters::agentprometheus::send_timestamps=false"}})
		checkInflated(t, r, false)
	})
}

// checkExact asserts that what Prometheus stored is what the agent counted:
// a cumulative counter without a reset, and increase() its total; a delta
// one with one reset per move, each run on a replica starting from zero, and
// increase() raised by its extrapolation to the end of the window (half the
// mean interval between samples: less than a twentieth of 12 samples' span).
func checkExact(t *testing.T, r moveResult, delta bool) {
	t.Helper()
	want := float64(moveExports * moveStep)
	assert.Equal(t, want, r.total, "total the stored samples count")
	if delta {
		assert.Equal(t, r.moves, r.resets, "one reset per move")
		assert.GreaterOrEqual(t, r.increase, want, "increase() over the run")
		assert.LessOrEqual(t, r.increase, 1.1*want, "increase() over the run")
		return
	}
	assert.Zero(t, r.resets, "counter resets")
	assert.InEpsilon(t, want, r.increase, 0.01, "increase() over the run")
}

// checkShortRun asserts what the design guarantees a run of deltas adding up
// to lost that stayed on its replica for two scrape intervals (moveInterval):
// Prometheus stores it whole or loses it whole, and never counts it twice.
// A replica shows a new run in steps (store.Series.Shown): left out of one
// scrape, its zero in the next, its value in the third, so within three
// scrape intervals of the run's start. The replica the agent moved to shows
// the zero of its own run, timestamped just after the short run's value, in
// its second scrape after the move: two scrape intervals after the short run
// began plus one at the earliest. Between the two lies no more than the
// difference of the two replicas' scrape offsets, nothing at worst (the first
// replica scraped just before the short run began, the second just after the
// move); a scrape of the first replica late by that much lets the zero in
// first, and Prometheus refuses the short run's value as out of order. The
// samples then count the total less the short run, with one reset fewer. A
// run that stays longer, or a move held back until Prometheus stored the
// run's value (moveOnceStored), is exact.
func checkShortRun(t *testing.T, r moveResult, lost float64) {
	t.Helper()
	want := float64(moveExports * moveStep)
	assert.Contains(t, []float64{want, want - lost}, r.total, "total the stored samples count: everything, or everything but the short run")
	lostRuns := 0
	if r.total != want {
		lostRuns = 1
	}
	assert.Equal(t, r.moves-lostRuns, r.resets, "one reset per move whose run was stored")
	assert.GreaterOrEqual(t, r.increase, r.total, "increase() over the run")
	assert.LessOrEqual(t, r.increase, 1.1*want, "increase() over the run")
}

// checkRefusedToTheEnd asserts that Prometheus refused the copy of the
// replica the agent left until the end of the watch: alone, that replica
// serves it until metric_expiration, and every scrape of it is refused.
func checkRefusedToTheEnd(t *testing.T, r moveResult) {
	t.Helper()
	assert.Positive(t, r.outOfOrder, "samples refused as out of order")
	assert.True(t, r.refusedAtEnd, "refusals go on to the end of the watch: a scrape after it had samples refused")
}

// checkRefusedUntilExpired asserts that Prometheus refused the copy of the
// replica the agent left until that replica expired it: metric_expiration
// after its last export there (before the move), and a sweep interval (a
// quarter of it, at least 1 s), then a scrape.
func checkRefusedUntilExpired(t *testing.T, r moveResult, expiration time.Duration) {
	t.Helper()
	assert.Positive(t, r.outOfOrder, "samples refused as out of order")
	deadline := r.moved.Add(expiration + max(expiration/4, time.Second) + scrapeInterval + time.Second)
	assert.False(t, r.refused.After(deadline), "the last refusal %v after the move; the copy left behind expires within %v of it",
		r.refused.Sub(r.moved).Round(100*time.Millisecond), deadline.Sub(r.moved))
}

// checkNotRefused asserts that Prometheus refused no sample: with
// out_of_order_time_window the older copy's samples are ones it already
// holds.
func checkNotRefused(t *testing.T, r moveResult) {
	t.Helper()
	assert.Zero(t, r.outOfOrder, "samples refused as out of order")
}

// checkInflated asserts what the interleaved copies do to a counter without
// sample timestamps: Prometheus stamps each copy with its scrape time, the
// older copy read after the newer one is a reset, and every reset counts its
// value again. A delta counter has its move's reset besides. Refusals are not
// asserted: a sample without a timestamp takes its scrape's start, and one
// is refused when a scrape of the other replica that began later was
// appended first, which happens when the two replicas' scrapes overlap (their
// offsets fall within a loaded scrape's duration of each other); that is a
// matter of where the offsets fall, not of the stale copy.
func checkInflated(t *testing.T, r moveResult, delta bool) {
	t.Helper()
	if delta {
		assert.Greater(t, r.resets, r.moves, "resets besides the one of each move's run from zero")
	} else {
		assert.Positive(t, r.resets, "counter resets")
	}
	assert.Greater(t, r.total, float64(moveExports*moveStep), "total the stored samples count")
}

// TestMoveSafetyAlternatives runs the scenario in other ways, the ones
// docs/scaling.md compares: what each does to the counter Prometheus stores
// and to its refusals (STATSGATE_MOVE_ALTERNATIVES=1, make move-alternatives;
// about 5 minutes on 2 cores, so not in make test).
func TestMoveSafetyAlternatives(t *testing.T) {
	if os.Getenv("STATSGATE_MOVE_ALTERNATIVES") == "" {
		t.Skip("set STATSGATE_MOVE_ALTERNATIVES=1 to run the alternatives, or run `make move-alternatives`")
	}
	tl := requireTools(t, false)
	const (
		timestampsOff   = "exporters::agentprometheus::send_timestamps=false"
		timestampsOn    = "exporters::agentprometheus::send_timestamps=true"
		trackStaleness  = "    track_timestamps_staleness: true\n"
		outOfOrder      = "storage:\n  tsdb:\n    out_of_order_time_window: 10m\n"
		shortExpiration = 3 * time.Second
		trackExpiration = 5 * time.Second
	)
	expiration := func(d time.Duration) string {
		return fmt.Sprintf("exporters::agentprometheus::metric_expiration=%v", d)
	}
	for _, a := range []struct {
		moveCase
		check func(t *testing.T, r moveResult)
	}{
		{moveCase{name: "timestamps off (contrib's default)", sets: []string{timestampsOff}}, func(t *testing.T, r moveResult) {
			checkInflated(t, r, false)
		}},
		{moveCase{name: "timestamps off, metric_expiration 3s", sets: []string{timestampsOff, expiration(shortExpiration)}}, func(t *testing.T, r moveResult) {
			// The copy left behind is served for at most the expiration and
			// a sweep interval after the last export there, 2 s before the
			// move: whether a scrape reads it after the newer copy, once or
			// twice, depends on where the scrapes fall. Never exact by
			// design, exact by chance. Refusals: see checkInflated.
			assert.LessOrEqual(t, r.resets, 3, "resets while both copies are served")
			assert.GreaterOrEqual(t, r.total, float64(moveExports*moveStep), "total the stored samples count")
		}},
		{moveCase{name: "timestamps on", sets: []string{timestampsOn}}, func(t *testing.T, r moveResult) {
			checkExact(t, r, false)
			checkRefusedToTheEnd(t, r)
		}},
		{moveCase{name: "timestamps on, track_timestamps_staleness", sets: []string{timestampsOn}, scrape: trackStaleness}, func(t *testing.T, r moveResult) {
			checkExact(t, r, false)
			checkRefusedToTheEnd(t, r)
		}},
		{moveCase{name: "timestamps on, track_timestamps_staleness, metric_expiration 5s", sets: []string{timestampsOn, expiration(trackExpiration)}, scrape: trackStaleness}, func(t *testing.T, r moveResult) {
			checkExact(t, r, false)
			checkRefusedUntilExpired(t, r, trackExpiration)
		}},
		{moveCase{name: "delta, timestamps on", delta: true, sets: []string{timestampsOn}}, func(t *testing.T, r moveResult) {
			checkExact(t, r, true)
			checkRefusedToTheEnd(t, r)
		}},
		{moveCase{name: "delta, timestamps on, one export, moved two scrape intervals later", delta: true, firstRun: 1, sets: []string{timestampsOn}}, func(t *testing.T, r moveResult) {
			checkShortRun(t, r, moveStep)
			checkRefusedToTheEnd(t, r)
		}},
		{moveCase{name: "delta, timestamps on, one export, moved once Prometheus stored it", delta: true, firstRun: 1, sets: []string{timestampsOn}, moveOnceStored: true}, func(t *testing.T, r moveResult) {
			checkExact(t, r, true)
			checkRefusedToTheEnd(t, r)
		}},
		{moveCase{name: "delta, timestamps off", delta: true, sets: []string{timestampsOff}}, func(t *testing.T, r moveResult) {
			checkInflated(t, r, true)
		}},
		{moveCase{name: "cumulative, the first 6 exports each to the other replica", alternate: true}, func(t *testing.T, r moveResult) {
			assert.Equal(t, 5, r.moves, "moves")
			checkExact(t, r, false)
			checkRefusedToTheEnd(t, r)
		}},
		{moveCase{name: "delta, the first 6 exports each to the other replica", delta: true, alternate: true}, func(t *testing.T, r moveResult) {
			assert.Equal(t, 5, r.moves, "moves")
			checkExact(t, r, true)
			checkRefusedToTheEnd(t, r)
		}},
		{moveCase{name: "cumulative, out_of_order_time_window 10m", storage: outOfOrder}, func(t *testing.T, r moveResult) {
			checkExact(t, r, false)
			checkNotRefused(t, r)
		}},
		{moveCase{name: "delta, out_of_order_time_window 10m", delta: true, storage: outOfOrder}, func(t *testing.T, r moveResult) {
			checkExact(t, r, true)
			checkNotRefused(t, r)
		}},
	} {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			a.check(t, runMove(t, tl, a.moveCase))
		})
	}
}
