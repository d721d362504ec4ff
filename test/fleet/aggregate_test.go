package fleet

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statsgate/statsgate/internal/agentmanifest"
	"github.com/statsgate/statsgate/test/internal/gatewaytest"
	"github.com/statsgate/statsgate/test/internal/proctest"
	"github.com/statsgate/statsgate/test/internal/promtest"
)

// The fleet aggregating agents' series at the gateway (the exporter's
// aggregate rules): three replicas with the fleet on behind haproxy,
// scraped by Prometheus 3, agents balanced per request and sticky agents
// that move, an agent that restarts, agents that stop, a rolling restart of
// a replica; what Prometheus stores of the aggregates, summed over the
// replicas, must be what the agents counted, and no aggregate goes down.

// aggregateSets are the aggregate rules of the run: the test agents'
// counter and histogram by job and kind, and the gRPC services' server
// call durations by job, method and status (grpcstats' output).
var aggregateSets = []string{
	`exporters::agentprometheus::aggregate=[{metrics: [fleet.operations, fleet.duration], by: [service.name, kind]}, {metrics: [rpc.server.call.duration], by: [service.name, rpc.method, rpc.status_code]}]`,
}

// Jobs of the aggregation run's agents.
const (
	aggSticky  = "agg-sticky"  // OTLP/gRPC, cumulative: moves with each reconnect
	aggSprayed = "agg-sprayed" // OTLP/HTTP, cumulative, every export balanced on its own
	aggDelta   = "agg-delta"   // OTLP/gRPC, delta
	aggRestart = "agg-restart" // OTLP/gRPC, cumulative, restarted mid-run: a new run from zero
	aggStop    = "agg-stop"    // OTLP/HTTP, cumulative, stops mid-run
	// The control gateway's agents, whose own series it serves (no rules):
	// coder's aggregator sums such current values at each collect.
	coderStays = "coder-stays"
	coderStops = "coder-stops"
)

// aggRun is one run of the aggregating fleet and what it recorded.
type aggRun struct {
	replicas  []*replica
	control   *replica
	lb        loadBalancer
	prom      *promtest.Server
	manifests map[string][]agentmanifest.OTLP
	grpc      agentmanifest.GRPC
	restarts  []restart
	stopped   time.Time // when agg-stop's agents stopped
	checkedAt time.Time
	window    time.Duration
}

// runAggregate runs the scenario; full adds a rolling restart of a replica
// and the control gateway.
func runAggregate(t *testing.T, tl tools, full bool, sets ...string) *aggRun {
	dir := t.TempDir()
	sets = fleetSets(append(slices.Clone(aggregateSets), sets...)...)
	t.Logf("replicas run %s with --set %s", defaultConfig, strings.Join(sets, " --set "))
	run := &aggRun{manifests: map[string][]agentmanifest.OTLP{}}
	for i := range replicaCount {
		run.replicas = append(run.replicas, newReplica(t, fmt.Sprintf("replica-%d", i+1), tl.gateway, dir, sets...))
	}
	formFleet(t, dir, run.replicas)
	all := run.replicas
	if full {
		run.control = newReplica(t, "control", tl.gateway, dir, fleetSets()...)
		all = append(slices.Clone(all), run.control)
	}
	var wg sync.WaitGroup
	for _, r := range all {
		wg.Go(func() { r.start(t) })
	}
	wg.Wait()
	run.lb = startHAProxy(t, tl.haproxy, dir, run.replicas)
	targets := make([]string, len(run.replicas))
	for i, r := range run.replicas {
		targets[i] = strconv.Quote(r.metrics)
	}
	control := ""
	if full {
		control = fmt.Sprintf("  - job_name: control\n    honor_labels: true\n    static_configs:\n      - targets: [%q]\n", run.control.metrics)
	}
	run.prom = promtest.Start(t, dir, "prometheus", tl.prometheus, fmt.Sprintf(`global:
  scrape_interval: %v
  scrape_timeout: %v
scrape_configs:
  - job_name: statsgate
    honor_labels: true
    static_configs:
      - targets: [%s]
%s`, scrapeInterval, scrapeInterval, strings.Join(targets, ", "), control), "--query.lookback-delta="+lookback.String())
	stopReplicasBeforePrometheus(t, all)
	run.prom.WaitUp(t, "statsgate", replicaCount, 30*time.Second)

	otlpBin := proctest.GoBuild(t, "../..", "./cmd/otlpagent", dir)
	grpcBin := proctest.GoBuild(t, "../..", "./cmd/grpcagent", dir)
	groups := map[string]*otlpGroup{
		aggSticky:  {name: aggSticky, protocol: "grpc", temporality: "cumulative", endpoint: run.lb.grpc},
		aggSprayed: {name: aggSprayed, protocol: "http", temporality: "cumulative", endpoint: run.lb.http},
		aggDelta:   {name: aggDelta, protocol: "grpc", temporality: "delta", endpoint: run.lb.grpc},
		aggRestart: {name: aggRestart, protocol: "grpc", temporality: "cumulative", endpoint: run.lb.grpc},
		aggStop:    {name: aggStop, protocol: "http", temporality: "cumulative", endpoint: run.lb.http},
	}
	if full {
		groups[coderStays] = &otlpGroup{name: coderStays, protocol: "http", temporality: "cumulative", endpoint: run.control.otlpHTTP}
		groups[coderStops] = &otlpGroup{name: coderStops, protocol: "http", temporality: "cumulative", endpoint: run.control.otlpHTTP}
	}
	agents := map[string]int{aggSticky: 3, aggSprayed: 3, aggDelta: 2, aggRestart: 1, aggStop: 2, coderStays: 2, coderStops: 1}
	for name, g := range groups {
		g.start(t, otlpBin, dir, agents[name])
	}
	grpcAgents := startGRPCAgents(t, grpcBin, dir, run.lb.grpc, 3)
	collect := func(g *otlpGroup) { run.manifests[g.name] = append(run.manifests[g.name], g.stop(t)) }

	// Sticky agents move every connectionAge from the start.
	time.Sleep(2 * connectionAge)
	// The restarted agent: a new process, its counters from zero again.
	collect(groups[aggRestart])
	second := filepath.Join(dir, "second")
	require.NoError(t, os.MkdirAll(second, 0o755))
	groups[aggRestart].start(t, otlpBin, second, 1)
	if full {
		// A rolling restart of one replica: its agents move, its counts go
		// to the replicas that take them.
		r := run.replicas[1]
		run.lb.takeOut(t, r.name)
		time.Sleep(exportInterval)
		down := time.Now()
		r.stop(t)
		require.NoError(t, r.proc.Wait(10*time.Second), "%s exits 0 on SIGTERM", r.name)
		r.start(t)
		run.lb.putBack(t, r.name)
		run.restarts = append(run.restarts, restart{replica: r.name, down: down, up: time.Now()})
	}
	time.Sleep(connectionAge)
	collect(groups[aggStop])
	if full {
		collect(groups[coderStops])
	}
	run.stopped = time.Now()
	time.Sleep(2 * connectionAge)

	for _, name := range []string{aggSticky, aggSprayed, aggDelta, aggRestart, coderStays} {
		if g := groups[name]; g != nil {
			collect(g)
		}
	}
	run.grpc = grpcAgents.stop(t)
	// The last counts reach their holders: a handover timeout, and a claim
	// interval for the last exports of an agent balanced per request that
	// reached a replica that did not hold it (it claims them back).
	time.Sleep(handoverTimeout + claimInterval + time.Second)
	run.prom.WaitScrapedAfter(t, "statsgate", time.Now().Add(2*scrapeInterval), 15*time.Second)
	run.checkedAt = time.Now()
	run.window = 5 * time.Minute
	return run
}

// handoverTimeout is fleet::handover_timeout's default, which the run keeps.
const handoverTimeout = 5 * time.Second

// aggregated is what Prometheus stored of one aggregate, summed over the
// replicas as sum without (instance) (increase()) reads it, per sample name
// ("name le=bound" for a bucket).
func (run *aggRun) aggregated(t *testing.T, c assert.TestingT, selector string) map[string]float64 {
	series, err := run.prom.Raw(selector, run.window, run.checkedAt)
	require.NoError(t, err)
	replicas := map[string]*replica{}
	for _, r := range run.replicas {
		replicas[r.metrics] = r
	}
	got := map[string]float64{}
	for _, s := range series {
		name := s.Metric["__name__"]
		if le, ok := s.Metric["le"]; ok {
			bound, err := strconv.ParseFloat(le, 64)
			require.NoError(t, err)
			name += " le=" + strconv.FormatFloat(bound, 'g', -1, 64)
		}
		r, ok := replicas[s.Metric["instance"]]
		assert.True(c, ok, "%s: instance is not a replica's target: an agent's label reached Prometheus", s.LabelString())
		for label := range s.Metric {
			assert.Contains(c, []string{"__name__", "job", "instance", "kind", "le", "rpc_method", "rpc_status_code", "otel_scope_name", "otel_scope_version"}, label,
				"%s: a label the rule sums away", s.LabelString())
		}
		got[name] += summarize(s.Points).total
		if r != nil {
			run.checkNeverDown(c, s, r)
		}
	}
	return got
}

// checkNeverDown: an aggregate never goes down while its replica runs; it
// begins again from zero when its replica restarts.
func (run *aggRun) checkNeverDown(c assert.TestingT, s promtest.Series, r *replica) {
	for i := 1; i < len(s.Points); i++ {
		prev, p := s.Points[i-1], s.Points[i]
		if p.V >= prev.V {
			continue
		}
		restarted := slices.ContainsFunc(run.restarts, func(rs restart) bool {
			return rs.replica == r.name && !p.T.Before(rs.down) && !prev.T.After(rs.up)
		})
		assert.True(c, restarted, "%s went down from %v at %s to %v at %s while %s ran", s.LabelString(), prev.V, prev.T.Format("15:04:05.000"), p.V, p.T.Format("15:04:05.000"), r.name)
	}
}

// wantOf is what a job's agents counted, per kind and sample name.
func wantOf(ms []agentmanifest.OTLP) map[string]map[string]float64 {
	want := map[string]map[string]float64{}
	for _, m := range ms {
		for _, a := range m.Agents {
			for _, v := range a.Acked {
				w := want[v.Kind]
				if w == nil {
					w = map[string]float64{}
					want[v.Kind] = w
				}
				w["fleet_operations_total"] += float64(v.Operations)
				w["fleet_duration_seconds_count"] += float64(v.Count)
				w["fleet_duration_seconds_sum"] += v.Sum
				for le, n := range cumulativeBuckets(m.Bounds, v.Buckets) {
					w["fleet_duration_seconds_bucket le="+le] += n
				}
			}
		}
	}
	return want
}

// checkExact compares every aggregate Prometheus stored with what the
// agents counted, telling c what does not match.
func (run *aggRun) checkExact(t *testing.T, c assert.TestingT) {
	for _, job := range []string{aggSticky, aggSprayed, aggDelta, aggRestart, aggStop} {
		for kind, want := range wantOf(run.manifests[job]) {
			sel := fmt.Sprintf(`{job=%q, kind=%q, __name__=~"fleet_operations_total|fleet_duration_seconds_(count|sum|bucket)"}`, job, kind)
			got := run.aggregated(t, c, sel)
			for _, name := range slices.Sorted(maps.Keys(want)) {
				assert.Equal(c, want[name], got[name], "%s %s %s: total over the replicas", job, kind, name)
			}
		}
	}
	want := map[string]float64{}
	for _, a := range run.grpc.Agents {
		for _, calls := range a.Calls {
			if calls.Server > 0 {
				want[seriesKey(calls.Method, calls.Status)] += float64(calls.Server)
			}
		}
	}
	series, err := run.prom.Raw(fmt.Sprintf(`rpc_server_call_duration_seconds_count{job=%q}`, grpcService), run.window, run.checkedAt)
	require.NoError(t, err)
	got := map[string]float64{}
	for _, s := range series {
		assert.NotContains(c, s.Metric, "k8s_pod_name")
		got[seriesKey(s.Metric["rpc_method"], s.Metric["rpc_status_code"])] += summarize(s.Points).total
	}
	assert.Equal(c, want, got, "gRPC server calls per method and status, over the replicas: Prometheus vs the agents")
}

// telemetrySum sums one of the replicas' own metrics, by one attribute.
func (run *aggRun) telemetrySum(t *testing.T, name, attr string) map[string]float64 {
	out := map[string]float64{}
	for _, r := range run.replicas {
		fams, _, _, err := gatewaytest.Scrape("http://" + r.telemetry + "/metrics")
		require.NoError(t, err)
		for _, m := range fams[name].GetMetric() {
			v := m.GetCounter().GetValue() + m.GetGauge().GetValue()
			key := ""
			for _, l := range m.GetLabel() {
				if l.GetName() == attr {
					key = l.GetValue()
				}
			}
			out[key] += v
		}
	}
	return out
}

func TestAggregate(t *testing.T) {
	tl := requireTools(t, true)
	run := runAggregate(t, tl, true)

	t.Run("what Prometheus stores is what the agents counted, over the replicas", func(t *testing.T) {
		run.checkExact(t, t)
	})
	t.Run("the agents moved and their counts with them", func(t *testing.T) {
		handovers := run.telemetrySum(t, "otelcol_exporter_agentprometheus_aggregate_handovers", "outcome")
		t.Logf("handovers over the replicas (since their last start): %v", handovers)
		assert.Positive(t, handovers["applied"], "counts handed over and counted on from")
		sources := run.telemetrySum(t, "otelcol_exporter_agentprometheus_aggregate_sources", "")
		t.Logf("sources held: %v", sources[""])
	})
	t.Run("summing current values, as coder's aggregator does, goes down when an agent stops", func(t *testing.T) {
		// The control gateway serves each agent's own series; their sum
		// drops once the stopped agent's series go stale.
		sums, err := run.prom.Range(`sum by (kind) (fleet_operations_total{job=~"coder-.*"})`, run.stopped.Add(-10*time.Second), run.checkedAt, scrapeInterval)
		require.NoError(t, err)
		require.NotEmpty(t, sums)
		drops := 0
		for _, s := range sums {
			for i := 1; i < len(s.Points); i++ {
				if s.Points[i].V < s.Points[i-1].V {
					drops++
					t.Logf("coder-style sum %s: %v -> %v at %s", s.LabelString(), s.Points[i-1].V, s.Points[i].V, s.Points[i].T.Format("15:04:05"))
					break
				}
			}
		}
		assert.Equal(t, len(sums), drops, "every kind's sum of current values went down")
	})
}

// TestAggregateControlHandoverOff is the negative control: the same fleet,
// shorter, with fleet::handover_timeout 0: a replica that takes an agent
// over counts it from its first point there, and the exactness checks fail.
func TestAggregateControlHandoverOff(t *testing.T) {
	tl := requireTools(t, true)
	run := runAggregate(t, tl, false, "exporters::agentprometheus::fleet::handover_timeout=0s")
	var f findings
	run.checkExact(t, &f)
	totals := 0
	for _, m := range f.msgs {
		if strings.Contains(m, "total over the replicas") || strings.Contains(m, "Prometheus vs the agents") {
			totals++
		}
	}
	t.Logf("%d findings, %d of them totals, e.g.:\n%s", len(f.msgs), totals, strings.Join(f.msgs[:min(3, len(f.msgs))], "\n"))
	assert.Positive(t, totals, "the totals are not exact without handovers")
}

// TestAggregateCrash measures what a replica killed (SIGKILL: no drain, no
// handover) loses of the aggregates: what it counted since Prometheus last
// scraped it, and the increments of its agents between their last export
// to it and the first their new replicas count, which begin from their
// first point after the handover timeout, never guessing what the dead one
// counted. The fleet never counts more than the agents did.
func TestAggregateCrash(t *testing.T) {
	tl := requireTools(t, true)
	dir := t.TempDir()
	sets := fleetSets(aggregateSets...)
	var replicas []*replica
	for i := range replicaCount {
		replicas = append(replicas, newReplica(t, fmt.Sprintf("replica-%d", i+1), tl.gateway, dir, sets...))
	}
	formFleet(t, dir, replicas)
	var wg sync.WaitGroup
	for _, r := range replicas {
		wg.Go(func() { r.start(t) })
	}
	wg.Wait()
	lb := startHAProxy(t, tl.haproxy, dir, replicas)
	targets := make([]string, len(replicas))
	for i, r := range replicas {
		targets[i] = strconv.Quote(r.metrics)
	}
	prom := promtest.Start(t, dir, "prometheus", tl.prometheus, fmt.Sprintf(`global:
  scrape_interval: %v
  scrape_timeout: %v
scrape_configs:
  - job_name: statsgate
    honor_labels: true
    static_configs:
      - targets: [%s]
`, scrapeInterval, scrapeInterval, strings.Join(targets, ", ")))
	stopReplicasBeforePrometheus(t, replicas)
	prom.WaitUp(t, "statsgate", replicaCount, 30*time.Second)

	otlpBin := proctest.GoBuild(t, "../..", "./cmd/otlpagent", dir)
	g := &otlpGroup{name: aggSticky, protocol: "grpc", temporality: "cumulative", endpoint: lb.grpc}
	g.start(t, otlpBin, dir, 6)
	began := time.Now()
	time.Sleep(3 * connectionAge)

	// Just before the kill: what the victim holds, and what Prometheus
	// last scraped of it.
	victim := replicas[1]
	fams, _, _, err := gatewaytest.Scrape("http://" + victim.metrics + "/metrics")
	require.NoError(t, err)
	held := 0.0
	for _, m := range fams["fleet_operations_total"].GetMetric() {
		held += m.GetCounter().GetValue()
	}
	scraped, err := prom.Floats(fmt.Sprintf(`sum(fleet_operations_total{instance=%q})`, victim.metrics))
	require.NoError(t, err)
	killedAt := time.Now()
	victim.kill()
	time.Sleep(3 * time.Second)
	victim.start(t)
	time.Sleep(2 * connectionAge)
	m := g.stop(t)
	stopped := time.Now()
	time.Sleep(handoverTimeout + claimInterval + time.Second)
	prom.WaitScrapedAfter(t, "statsgate", time.Now().Add(2*scrapeInterval), 15*time.Second)

	want := 0.0
	for _, kinds := range wantOf([]agentmanifest.OTLP{m}) {
		want += kinds["fleet_operations_total"]
	}
	series, err := prom.Raw(fmt.Sprintf(`fleet_operations_total{job=%q}`, aggSticky), 5*time.Minute, time.Now())
	require.NoError(t, err)
	got := 0.0
	for _, s := range series {
		got += summarize(s.Points).total
	}
	unscraped := held - scraped[""]
	rate := want / stopped.Sub(began).Seconds()
	lost := want - got
	t.Logf("agents counted %v, Prometheus stored %v over the replicas: lost %v (%.2f%%); the killed replica held %v unscraped; the agents count %.0f a second",
		want, got, lost, 100*lost/want, unscraped, rate)
	assert.GreaterOrEqual(t, lost, 0.0, "never more than the agents counted")
	// The agents reach new replicas within a reconnect and an export, and
	// are counted from their first export after the handover timeout.
	gap := reconnectGap + handoverTimeout + 2*exportInterval
	bound := unscraped + rate*gap.Seconds()
	assert.LessOrEqual(t, lost, bound, "what was unscraped, and the agents' increments over %v after the kill at %s", gap, killedAt.Format("15:04:05"))
}
