// Package fleet runs statsgate as it is deployed: several replicas of the
// built distro on the default config behind a real load balancer (haproxy),
// scraped by a real Prometheus 3, with agents that move between replicas —
// reconnects forced by max_connection_age, a rolling restart, a replica
// killed — and checks through Prometheus's query API that what it stored is
// exactly what the agents counted.
//
// `make fleet` builds the distro, installs Prometheus 3 and haproxy, and sets
// STATSGATE_BINARY, STATSGATE_PROMETHEUS3 and STATSGATE_HAPROXY.
package fleet

import (
	"fmt"
	"os"
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

// The fleet's settings: the default config with its timings shortened so
// that everything happens within the test.
const (
	replicaCount = 3
	// connectionAge forces every gRPC agent to reconnect, through the load
	// balancer, every few exports.
	connectionAge = 5 * time.Second
	// expiration is metric_expiration: how long a replica keeps a series
	// nobody updates. Longer than lookback, to show that a replica serving a
	// copy does not keep the series alive in Prometheus.
	expiration = 20 * time.Second
	// sweep is how often the exporter removes expired series (a quarter of
	// the expiration, at least 1 s).
	sweep    = expiration / 4
	lookback = 10 * time.Second
	// scrapeInterval is Prometheus's.
	scrapeInterval = time.Second
	// exportTimeout is the agents' OTLP exporters' (cmd/otlpagent).
	exportTimeout = 5 * time.Second
	// A series' samples are at most an export interval apart, plus
	// reconnectGap when the agent's replica went away (grpc-go's reconnect
	// back-off starts at 1 s with jitter), plus for deltas two
	// scrape intervals when a new run is left out of a scrape and then shown
	// as zero (the gRPC demo agent retries with the SDK's default back-off
	// of 5 s: maxGapGRPC).
	reconnectGap = 3 * time.Second
	maxGapGRPC   = 8 * time.Second
)

// fleetSets are the --set overrides of the default config in the fleet.
// STATSGATE_FLEET_SETS adds more (comma-separated), e.g.
// exporters::agentprometheus::send_timestamps=false to see the test fail
// without the move-safety it relies on.
func fleetSets() []string {
	sets := []string{
		"receivers::otlp::protocols::grpc::keepalive::server_parameters::max_connection_age=" + connectionAge.String(),
		"receivers::otlp::protocols::grpc::keepalive::server_parameters::max_connection_age_grace=2s",
		"exporters::agentprometheus::metric_expiration=" + expiration.String(),
	}
	if extra := os.Getenv("STATSGATE_FLEET_SETS"); extra != "" {
		sets = append(sets, strings.Split(extra, ",")...)
	}
	return sets
}

// restart is when a replica went away and came back: its series are gone.
type restart struct {
	replica  string
	down, up time.Time
	killed   bool
	// unshownSince: deltas the killed replica took after this may be lost.
	unshownSince time.Time
}

func TestFleet(t *testing.T) {
	t.Parallel() // with the move scenarios: ~80 s instead of ~130
	tl := requireTools(t, true)
	dir := t.TempDir()
	sets := fleetSets()
	t.Logf("replicas run %s with --set %s", defaultConfig, strings.Join(sets, " --set "))

	replicas := make([]*replica, replicaCount)
	for i := range replicas {
		replicas[i] = newReplica(t, fmt.Sprintf("replica-%d", i+1), tl.gateway, dir, sets...)
	}
	var wg sync.WaitGroup
	for _, r := range replicas {
		wg.Go(func() { r.start(t) })
	}
	wg.Wait()
	lb := startHAProxy(t, tl.haproxy, dir, replicas)
	targets := make([]string, len(replicas))
	for i, r := range replicas {
		targets[i] = fmt.Sprintf("%q", r.metrics)
	}
	// Every replica scraped on its own, as a pod or target list would have
	// it; honor_labels keeps the agents' job and instance.
	prom := promtest.Start(t, dir, "prometheus", tl.prometheus, fmt.Sprintf(`global:
  scrape_interval: %v
  scrape_timeout: %v
scrape_configs:
  - job_name: statsgate
    honor_labels: true
    static_configs:
      - targets: [%s]
`, scrapeInterval, scrapeInterval, strings.Join(targets, ", ")), "--query.lookback-delta="+lookback.String())
	stopReplicasBeforePrometheus(t, replicas)
	prom.WaitUp(t, "statsgate", replicaCount, 30*time.Second)

	// The agents.
	otlpBin := proctest.GoBuild(t, "../..", "./cmd/otlpagent", dir)
	grpcBin := proctest.GoBuild(t, "../..", "./cmd/grpcagent", dir)
	groups := []*otlpGroup{
		{name: "fleet-grpc-cumulative", protocol: "grpc", temporality: "cumulative", endpoint: lb.grpc},
		{name: "fleet-grpc-delta", protocol: "grpc", temporality: "delta", endpoint: lb.grpc},
		// Every request of these may land on another replica: cumulative
		// data does not mind. A run of deltas must stay on its replica for
		// more than two scrape intervals (store.Series.Shown): delta agents
		// are kept on theirs by the balancer, and when it moves one, its
		// next export comes more than two scrape intervals later.
		{name: "fleet-http-cumulative", protocol: "http", temporality: "cumulative", endpoint: lb.http},
		{name: "fleet-http-delta", protocol: "http", temporality: "delta", endpoint: lb.httpSticky, every: 3 * scrapeInterval},
	}
	began := time.Now()
	for _, g := range groups {
		g.start(t, otlpBin, dir, 3)
	}
	grpcAgents := startGRPCAgents(t, grpcBin, dir, lb.grpc, 3)

	// The run: steady, a rolling restart, a replica killed, steady again.
	var restarts []restart
	time.Sleep(8 * time.Second)
	for _, r := range replicas {
		// As a rolling update: out of the balancer first, then SIGTERM once
		// the requests in flight are done; back in once healthy.
		lb.takeOut(t, r.name)
		time.Sleep(exportInterval)
		down := time.Now()
		r.stop(t)
		r.start(t)
		lb.putBack(t, r.name)
		restarts = append(restarts, restart{replica: r.name, down: down, up: time.Now()})
		time.Sleep(6 * time.Second)
	}
	victim := replicas[1]
	killedAt := time.Now()
	victim.kill()
	time.Sleep(3 * time.Second)
	victim.start(t)
	restarts = append(restarts, restart{replica: victim.name, down: killedAt, up: time.Now(), killed: true})
	time.Sleep(8 * time.Second)

	// Stop the agents: each flushes its last export and writes what it counted.
	stopped := time.Now()
	otlpManifests := map[string]agentmanifest.OTLP{}
	for _, g := range groups {
		otlpManifests[g.name] = g.stop(t)
	}
	grpcManifest := grpcAgents.stop(t)
	flushed := time.Now()
	t.Logf("agents ran %v; stopped in %v", stopped.Sub(began).Round(time.Second), flushed.Sub(stopped).Round(time.Millisecond))
	// A run of deltas the last exports began shows its value in the third
	// scrape after it began (store.Series.Shown).
	prom.WaitScrapedAfter(t, "statsgate", flushed.Add(2*scrapeInterval), 15*time.Second)
	checkedAt := time.Now()

	// The deltas the killed replica had not shown with their value yet are
	// lost with it: those it took after its last scrape, and the runs it
	// began after the scrape two before that (a run is left out of one
	// scrape and shown as its zero in the next, store.Series.Shown).
	scrapes := scrapesBefore(t, prom, victim.metrics, killedAt)
	restarts[len(restarts)-1].unshownSince = scrapes[len(scrapes)-3]
	t.Logf("killed %s %v after its last scrape", victim.name, killedAt.Sub(scrapes[len(scrapes)-1]).Round(time.Millisecond))

	window := checkedAt.Sub(began) + time.Minute
	t.Run("OTLP agents: Prometheus holds what each agent counted", func(t *testing.T) {
		for _, g := range groups {
			checkOTLPGroup(t, prom, g, otlpManifests[g.name], restarts, window, checkedAt)
		}
	})
	t.Run("gRPC agents: every call counted once, per agent, method and status", func(t *testing.T) {
		checkGRPCAgents(t, prom, grpcManifest, window, checkedAt)
	})
	t.Run("no series twice", func(t *testing.T) {
		checkNoDuplicates(t, prom, replicas, window, checkedAt)
	})

	// After the agents stopped: how long replicas serve them, and how soon
	// Prometheus stops showing them.
	t.Run("stopped agents go stale in Prometheus after the lookback, while replicas still serve them", func(t *testing.T) {
		staleAt := flushed.Add(lookback + 2*time.Second)
		time.Sleep(time.Until(staleAt))
		served := 0
		for _, r := range replicas {
			served += agentSeriesServed(t, r)
		}
		require.Positive(t, served, "replicas still serve the agents' series %v after they stopped (metric_expiration %v)", time.Since(flushed).Round(time.Second), expiration)
		shown, err := prom.Floats(`count({job=~"fleet-.*"})`)
		require.NoError(t, err)
		assert.Empty(t, shown, "Prometheus still shows stopped agents' series %v after their last export (lookback %v)", time.Since(flushed).Round(time.Second), lookback)
	})
	t.Run("replicas stop serving an agent metric_expiration after its last export", func(t *testing.T) {
		bound := expiration + sweep + time.Second
		proctest.Poll(t, time.Until(flushed.Add(bound)), "no replica serving the stopped agents", func() error {
			for _, r := range replicas {
				if n := agentSeriesServed(t, r); n > 0 {
					return fmt.Errorf("%s serves %d series of the agents", r.name, n)
				}
			}
			return nil
		})
		t.Logf("the last replica stopped serving the agents %v after their last export (bound %v)", time.Since(flushed).Round(100*time.Millisecond), bound)
	})
}

// stopReplicasBeforePrometheus registers the replicas' stop to run before
// the stop of what was started before it, Prometheus among them: a replica
// holding deltas waits, on SIGTERM, for its scrapers to take them. Call it
// after starting Prometheus.
func stopReplicasBeforePrometheus(t *testing.T, replicas []*replica) {
	t.Cleanup(func() {
		var wg sync.WaitGroup
		for _, r := range replicas {
			if r.proc != nil {
				wg.Go(func() { r.stop(t) })
			}
		}
		wg.Wait()
	})
}

// agentSeriesServed counts the series of the fleet's agents a replica serves.
func agentSeriesServed(t *testing.T, r *replica) int {
	fams, _, _, err := gatewaytest.Scrape("http://" + r.metrics + "/metrics")
	require.NoError(t, err, r.name)
	n := 0
	for _, mf := range fams {
		for _, m := range mf.GetMetric() {
			if strings.HasPrefix(gatewaytest.LabelValue(m, "job"), "fleet-") && mf.GetName() != "target_info" {
				n++
			}
		}
	}
	return n
}

// scrapesBefore returns the starts of Prometheus's successful scrapes of
// target before at, oldest first.
func scrapesBefore(t *testing.T, prom *promtest.Server, target string, at time.Time) []time.Time {
	series, err := prom.Raw(fmt.Sprintf(`up{instance=%q}`, target), time.Minute, at)
	require.NoError(t, err)
	require.Len(t, series, 1)
	var out []time.Time
	for _, p := range series[0].Points {
		if p.V == 1 && p.T.Before(at) {
			out = append(out, p.T)
		}
	}
	require.GreaterOrEqual(t, len(out), 3, "scrapes of %s before %v", target, at)
	return out
}

// checkOTLPGroup compares, per agent and kind, the counter and every
// histogram series Prometheus stored with what the agent counted.
func checkOTLPGroup(t *testing.T, prom *promtest.Server, g *otlpGroup, m agentmanifest.OTLP, restarts []restart, window time.Duration, at time.Time) {
	delta := g.temporality == "delta"
	for _, a := range m.Agents {
		// An export fails for good only when the replica it went to was
		// killed while answering; with delta temporality what it carried
		// is lost on the way, and the gateway is held to what it acknowledged.
		for _, f := range a.Failed {
			killed := slices.ContainsFunc(restarts, func(r restart) bool {
				return r.killed && f.After(r.down.Add(-exportTimeout)) && f.Before(r.up)
			})
			assert.True(t, killed, "%s: an export failed at %v, when no replica was killed", a.InstanceID, f.Format(time.StampMilli))
		}
		if !delta || len(a.Failed) == 0 {
			assert.Equal(t, a.Counted, a.Acked, "%s: what the agent counted and what the gateway acknowledged", a.InstanceID)
		}
		lost := lostAtKill(a, m.Bounds, g.protocol, restarts)
		moves := movesOf(a, restarts)
		for _, v := range a.Acked {
			sel := fmt.Sprintf(`{job=%q, instance=%q, kind=%q}`, g.name, a.InstanceID, v.Kind)
			want := map[string]float64{
				"fleet_operations_total":       float64(v.Operations),
				"fleet_duration_seconds_count": float64(v.Count),
				"fleet_duration_seconds_sum":   v.Sum,
			}
			for le, c := range cumulativeBuckets(m.Bounds, v.Buckets) {
				want["fleet_duration_seconds_bucket le="+le] = c
			}
			series, err := prom.Raw(sel, window, at)
			require.NoError(t, err)
			got := map[string]counterRun{}
			for _, s := range series {
				name := s.Metric["__name__"]
				if le, ok := s.Metric["le"]; ok {
					// Prometheus 3 stores le as a float ("1.0" for "1").
					bound, err := strconv.ParseFloat(le, 64)
					require.NoError(t, err)
					name += " le=" + strconv.FormatFloat(bound, 'g', -1, 64)
				}
				if _, ok := want[name]; !ok {
					continue
				}
				_, dup := got[name]
				require.False(t, dup, "%s %s: two series", name, sel)
				got[name] = summarize(s.Points)
			}
			for name, w := range want {
				r, ok := got[name]
				if !assert.True(t, ok, "%s%s: not stored", name, sel) {
					continue
				}
				what := fmt.Sprintf("%s %s%s", g.name, name, sel)
				if delta {
					l := lost[v.Kind][name]
					if l == 0 {
						assert.Equal(t, w, r.total, "%s: total", what)
					} else {
						assert.True(t, r.total <= w && r.total >= w-l, "%s: total %v, want %v less at most %v the killed replica may have lost", what, r.total, w, l)
						if name == "fleet_operations_total" {
							t.Logf("%s: the killed replica lost %v of at most %v", what, w-r.total, l)
						}
					}
					if moves >= 0 {
						assert.LessOrEqual(t, r.resets, moves, "%s: resets, one at most per move (%d moves)", what, moves)
					}
				} else {
					assert.Equal(t, w, r.total, "%s: total", what)
					assert.Zero(t, r.resets, "%s: resets of a cumulative counter", what)
				}
				maxGap := g.every + reconnectGap
				if delta {
					maxGap += 2 * scrapeInterval
				}
				assert.LessOrEqual(t, r.maxGap, maxGap, "%s: longest time between two samples: %v", what, r.maxGap)
			}
			if t.Failed() && delta {
				logTimeline(t, a, v.Kind, series, restarts)
			}
			if name := "fleet_operations_total"; got[name].total != 0 {
				t.Logf("%s %s: total %v, resets %d, moves %d, longest gap %v", g.name, sel, got[name].total, got[name].resets, moves, got[name].maxGap)
			}
		}
	}
}

// logTimeline shows, for a failing delta series, the agent's exports and
// the counter samples Prometheus stored, in time order.
func logTimeline(t *testing.T, a agentmanifest.OTLPAgent, kind string, series []promtest.Series, restarts []restart) {
	var lines []string
	for _, e := range a.Exports {
		for _, d := range e.Deltas {
			if d.Kind == kind {
				lines = append(lines, fmt.Sprintf("%s export  point %s +%d via %s", e.At.Format("15:04:05.000"), e.Point.Format("15:04:05.000"), d.Operations, e.Replica))
			}
		}
	}
	for _, s := range series {
		if s.Metric["__name__"] != "fleet_operations_total" {
			continue
		}
		for _, p := range s.Points {
			lines = append(lines, fmt.Sprintf("%s stored  %v", p.T.Format("15:04:05.000"), p.V))
		}
	}
	for _, r := range restarts {
		lines = append(lines, fmt.Sprintf("%s %s down (killed %v), up at %s", r.down.Format("15:04:05.000"), r.replica, r.killed, r.up.Format("15:04:05.000")))
	}
	slices.Sort(lines)
	t.Logf("%s %s:\n%s", a.InstanceID, kind, strings.Join(lines, "\n"))
}

// lostAtKill is, per kind and series, what an agent's deltas that the killed
// replica may have lost add up to: those it took after it had last been
// scraped, and the runs it began after the scrape two before that, which it
// had not shown with their value yet. An HTTP agent knows which replica took
// each export; for a gRPC agent any export in that window may have gone to
// the killed one.
func lostAtKill(a agentmanifest.OTLPAgent, bounds []float64, protocol string, restarts []restart) map[string]map[string]float64 {
	out := map[string]map[string]float64{}
	for _, r := range restarts {
		if !r.killed {
			continue
		}
		for _, e := range a.Exports {
			if !e.At.After(r.unshownSince) || e.At.After(r.down) || protocol == "http" && e.Replica != r.replica {
				continue
			}
			for _, d := range e.Deltas {
				if out[d.Kind] == nil {
					out[d.Kind] = map[string]float64{}
				}
				out[d.Kind]["fleet_operations_total"] += float64(d.Operations)
				out[d.Kind]["fleet_duration_seconds_count"] += float64(d.Count)
				out[d.Kind]["fleet_duration_seconds_sum"] += d.Sum
				for le, c := range cumulativeBuckets(bounds, d.Buckets) {
					out[d.Kind]["fleet_duration_seconds_bucket le="+le] += c
				}
			}
		}
	}
	return out
}

// movesOf counts the runs of an agent's exports beyond its first: an export
// that another replica took than the one before, or the same one restarted
// meanwhile. -1 when the agent does not know which replica took its exports.
func movesOf(a agentmanifest.OTLPAgent, restarts []restart) int {
	moves := 0
	for i := 1; i < len(a.Exports); i++ {
		prev, cur := a.Exports[i-1], a.Exports[i]
		if cur.Replica == "" {
			return -1
		}
		moved := cur.Replica != prev.Replica
		for _, r := range restarts {
			moved = moved || r.replica == cur.Replica && r.down.After(prev.At) && r.down.Before(cur.At)
		}
		if moved {
			moves++
		}
	}
	return moves
}

// checkGRPCAgents compares the calls each gRPC agent's server and client
// counted with the call counts Prometheus stored, per agent, method and status.
func checkGRPCAgents(t *testing.T, prom *promtest.Server, m agentmanifest.GRPC, window time.Duration, at time.Time) {
	for _, side := range []string{"server", "client"} {
		want := map[string]float64{}
		for _, a := range m.Agents {
			for _, c := range a.Calls {
				n := c.Server
				if side == "client" {
					n = c.Client
				}
				if n > 0 {
					want[seriesKey(a.InstanceID, c.Method, c.Status)] = float64(n)
				}
			}
		}
		series, err := prom.Raw(fmt.Sprintf(`rpc_%s_call_duration_seconds_count{job=%q}`, side, grpcService), window, at)
		require.NoError(t, err)
		got := map[string]float64{}
		for _, s := range series {
			k := seriesKey(s.Metric["instance"], s.Metric["rpc_method"], s.Metric["rpc_response_status_code"])
			r := summarize(s.Points)
			_, dup := got[k]
			assert.False(t, dup, "%s: two series for %s", side, k)
			got[k] = r.total
			assert.Zero(t, r.resets, "%s %s: resets", side, s.LabelString())
			assert.LessOrEqual(t, r.maxGap, maxGapGRPC, "%s %s: longest time between two samples: %v", side, s.LabelString(), r.maxGap)
		}
		assert.Equal(t, want, got, "%s calls per agent, method and status: Prometheus vs the agents' manifest", side)
	}
	scopes, err := prom.Floats(fmt.Sprintf(`count by (otel_scope_name) (rpc_server_call_duration_seconds_count{job=%q})`, grpcService), "otel_scope_name")
	require.NoError(t, err)
	assert.Len(t, scopes, 1, "the calls come from one of the two handlers, the other's dropped as duplicates: %v", scopes)
}

// checkNoDuplicates looks for an agent series stored under two label sets
// over the run: labels Prometheus adds when it does not honour the gateway's
// (exported_*, or the replica's address as instance), or series of one
// OTLP agent's metric that differ in which labels they have.
func checkNoDuplicates(t *testing.T, prom *promtest.Server, replicas []*replica, window time.Duration, at time.Time) {
	all, err := prom.Raw(`{job=~"fleet-.*"}`, window, at)
	require.NoError(t, err)
	require.NotEmpty(t, all)
	addrs := map[string]bool{}
	for _, r := range replicas {
		addrs[r.metrics] = true
	}
	shapes := map[string]map[string]bool{}
	for _, s := range all {
		names := make([]string, 0, len(s.Metric))
		for name := range s.Metric {
			assert.False(t, strings.HasPrefix(name, "exported_"), "%s: Prometheus renamed a label of the gateway's", s.LabelString())
			names = append(names, name)
		}
		assert.False(t, addrs[s.Metric["instance"]], "%s: stored under the replica's instance", s.LabelString())
		if s.Metric["job"] == grpcService {
			// Which labels a call's series has depends on its status
			// (error.type); checkGRPCAgents finds its duplicates.
			continue
		}
		slices.Sort(names)
		key := s.Metric["__name__"] + " " + s.Metric["job"] + " " + s.Metric["instance"]
		if shapes[key] == nil {
			shapes[key] = map[string]bool{}
		}
		shapes[key][fmt.Sprint(names)] = true
	}
	for k, names := range shapes {
		assert.Len(t, names, 1, "%s is stored with different label names: %v", k, names)
	}
	t.Logf("%d series of the agents, each stored once", len(all))
}
