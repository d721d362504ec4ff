// Package fleet runs statsgate as it is deployed: several replicas of the
// built distro on the default config behind a real load balancer (haproxy),
// scraped by a real Prometheus 3, with agents that move between replicas —
// reconnects forced by max_connection_age, a rolling restart, a replica
// killed — and checks through Prometheus's query API that what it stored is
// exactly what the agents counted, and through the replicas that each
// agent's series are held by one of them (the fleet's departures).
//
// `make fleet` builds the distro, installs Prometheus 3 and haproxy, and sets
// STATSGATE_BINARY, STATSGATE_PROMETHEUS3 and STATSGATE_HAPROXY.
package fleet

import (
	"fmt"
	"maps"
	"os"
	"slices"
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
	// claimInterval is fleet::claim_interval, shortened as max_connection_age
	// is (15 s against 2m in the shipped config): an agent's moves are
	// further apart than it, as they are in production.
	claimInterval = 2 * time.Second
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
	// maxCopies bounds the series held summed over the replicas, per
	// distinct series of the cumulative gRPC agents and services, in the
	// steady phases. It is what the fleet delivers rather than the worst
	// case of the constants below (maxCopiesDelta's reasoning with
	// leftCumulative gives 1.5): a claim is heard within a gossip round or
	// two, so few samples fall within a move's overlap.
	maxCopies = 1.1
	// claimHeard bounds how long a claim takes to reach the other replicas
	// and be applied: memberlist gossips a queued broadcast every 200 ms
	// (its LAN default) to the other members, which hand a departure to the
	// exporter at once; a second allows a few gossip rounds on a loaded
	// machine.
	claimHeard = time.Second
	// departWithin bounds how long after an agent's move Prometheus still
	// refuses the copy on the replica it left: the agent's first export on
	// the new replica claims it (at most claimInterval later when the move
	// came that soon after the last claim), the claim's gossip and the
	// removal, and the scrapes of both replicas.
	departWithin = exportInterval + claimInterval + 2*scrapeInterval + claimHeard

	// How long a replica an agent left goes on holding it in the steady
	// phases (no replica restarts), per move: checkCopies bounds the time
	// each agent is held by more than one replica with these.
	//
	// minMoveSpacing: a gRPC agent changes replica only when its connection
	// ends, at max_connection_age less grpc-go's jitter of up to a tenth; the
	// sticky HTTP agents only when their replica goes away, which none does
	// in a steady phase. So the replica an agent moves to claims it on its
	// first batch there: the damping defers the claim of a replica that gave
	// the agent up less than claimInterval ago, and it gave it up at least a
	// move earlier. The claim carries a point newer than every point of the
	// agent the replica it left holds (its exports are sequential), so that
	// replica lets it go on hearing the claim, within claimHeard:
	// leftCumulative. Its series that accumulate deltas stay until every
	// scraper has been served their last value (internal/retire, depart.go):
	// the run it held shows its value already, since the agent stayed there
	// minMoveSpacing, more than the two scrape intervals of a new run's
	// steps (store.Series.Shown), so they wait for a scrape of Prometheus's
	// that begins after the exporter took the departure up, within
	// departPoll (retire.departPoll), and the next scrape begins within a
	// scrape interval; the exporter notices it within departPoll again:
	// leftDelta.
	minMoveSpacing = connectionAge - connectionAge/10
	departPoll     = 100 * time.Millisecond
	leftCumulative = claimHeard
	leftDelta      = claimHeard + scrapeInterval + 2*departPoll
	// sampleEvery is how often the sampler reads the replicas' holdings.
	// overlapsOf ends a stretch at a gap of more than sampleGap between two
	// samples or a sample read in more than sampleRead: with moves
	// minMoveSpacing apart, more than leftDelta+sampleGap+sampleRead, each
	// stretch comes from one move.
	sampleEvery = 500 * time.Millisecond
	sampleGap   = 2 * sampleEvery
	sampleRead  = sampleEvery
	// steadyFor is how long each steady phase of TestFleet lasts.
	steadyFor = 8 * time.Second
	// maxCopiesDelta bounds the copies per series of the delta agents, gRPC
	// and sticky HTTP: the mean over the samples of the steady phases read
	// within sampleRead. Such a sample shows an agent on two replicas only
	// when it began at most sampleRead before a move and leftDelta after it:
	// at most (leftDelta+sampleRead)/sampleEvery+1 samples per move. Moves
	// are minMoveSpacing apart and steadyFor is less than two of that, so
	// the moves show an agent twice in at most two moves' worth of a steady
	// phase's steadyFor/sampleEvery samples (three can touch it, the first
	// and the last together by less than one).
	maxCopiesDelta = 1 + float64(2*(leftDelta+sampleRead+sampleEvery))/float64(steadyFor)
)

// The moves of one agent are further apart than a stretch of overlapsOf can
// reach: a compile error (a negative constant made unsigned) otherwise.
const _ = uint64(minMoveSpacing - leftDelta - sampleGap - sampleRead)

// fleetSets are the --set overrides of the default config in the fleet.
// STATSGATE_FLEET_SETS adds more (comma-separated), e.g.
// exporters::agentprometheus::send_timestamps=false to see the test fail
// without the move-safety it relies on.
func fleetSets(extra ...string) []string {
	sets := []string{
		"receivers::otlp::protocols::grpc::keepalive::server_parameters::max_connection_age=" + connectionAge.String(),
		"receivers::otlp::protocols::grpc::keepalive::server_parameters::max_connection_age_grace=2s",
		"exporters::agentprometheus::metric_expiration=" + expiration.String(),
		"exporters::agentprometheus::fleet::claim_interval=" + claimInterval.String(),
	}
	sets = append(sets, extra...)
	if env := os.Getenv("STATSGATE_FLEET_SETS"); env != "" {
		sets = append(sets, strings.Split(env, ",")...)
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

// scenario is one way of running the fleet.
type scenario struct {
	// departure forms the replicas into a fleet (testdata/gateway.yaml's
	// fleet settings from the environment); without it each runs alone.
	departure bool
	sets      []string
	// short runs the steady phase only (no rolling update, no kill): the
	// negative controls.
	short bool
}

// telemetryJob is Prometheus's job scraping the replicas' own telemetry.
const telemetryJob = "statsgate-telemetry"

// Job names of the agents (their service.name).
const (
	jobGRPCCumulative = "fleet-grpc-cumulative"
	jobGRPCDelta      = "fleet-grpc-delta"
	jobHTTPCumulative = "fleet-http-cumulative"
	jobHTTPDelta      = "fleet-http-delta"
)

// fleetRun is a run of the fleet and what it recorded.
type fleetRun struct {
	replicas   []*replica
	lb         loadBalancer
	prom       *promtest.Server
	groups     []*otlpGroup
	manifests  map[string]agentmanifest.OTLP
	grpc       agentmanifest.GRPC
	restarts   []restart
	steady     []window
	sampler    *sampler
	refusals   []outOfOrder
	began      time.Time
	flushed    time.Time
	checkedAt  time.Time
	agentsRan  time.Duration
	window     time.Duration
	heldAtKill int64
}

// runFleet runs the replicas, haproxy, Prometheus and the agents through the
// scenario, and stops the agents: what they counted is in their manifests.
func runFleet(t *testing.T, tl tools, sc scenario) *fleetRun {
	dir := t.TempDir()
	sets := fleetSets(sc.sets...)
	t.Logf("replicas run %s with --set %s (fleet: %v)", defaultConfig, strings.Join(sets, " --set "), sc.departure)
	run := &fleetRun{manifests: map[string]agentmanifest.OTLP{}}
	run.replicas = make([]*replica, replicaCount)
	for i := range run.replicas {
		run.replicas[i] = newReplica(t, fmt.Sprintf("replica-%d", i+1), tl.gateway, dir, sets...)
	}
	if sc.departure {
		formFleet(t, dir, run.replicas)
	}
	var wg sync.WaitGroup
	for _, r := range run.replicas {
		wg.Go(func() { r.start(t) })
	}
	wg.Wait()
	lb := startHAProxy(t, tl.haproxy, dir, run.replicas)
	run.lb = lb
	targets := make([]string, len(run.replicas))
	telemetry := make([]string, len(run.replicas))
	for i, r := range run.replicas {
		targets[i] = fmt.Sprintf("%q", r.metrics)
		telemetry[i] = fmt.Sprintf("%q", r.telemetry)
	}
	// Every replica scraped on its own, as a pod or target list would have
	// it; honor_labels keeps the agents' job and instance. Debug logging
	// names each sample refused as out of order. The replicas' own
	// telemetry is a job of its own, for the dashboard's panels.
	run.prom = promtest.Start(t, dir, "prometheus", tl.prometheus, fmt.Sprintf(`global:
  scrape_interval: %v
  scrape_timeout: %v
scrape_configs:
  - job_name: statsgate
    honor_labels: true
    static_configs:
      - targets: [%s]
  - job_name: %s
    static_configs:
      - targets: [%s]
`, scrapeInterval, scrapeInterval, strings.Join(targets, ", "), telemetryJob, strings.Join(telemetry, ", ")), "--query.lookback-delta="+lookback.String(), "--log.level=debug")
	stopReplicasBeforePrometheus(t, run.replicas)
	run.prom.WaitUp(t, "statsgate", replicaCount, 30*time.Second)

	// The agents.
	otlpBin := proctest.GoBuild(t, "../..", "./cmd/otlpagent", dir)
	grpcBin := proctest.GoBuild(t, "../..", "./cmd/grpcagent", dir)
	run.groups = []*otlpGroup{
		{name: jobGRPCCumulative, protocol: "grpc", temporality: "cumulative", endpoint: lb.grpc},
		{name: jobGRPCDelta, protocol: "grpc", temporality: "delta", endpoint: lb.grpc},
		// Every request of these may land on another replica: cumulative
		// data does not mind. A run of deltas must stay on its replica for
		// more than two scrape intervals (store.Series.Shown): delta agents
		// are kept on theirs by the balancer, and when it moves one, its
		// next export comes more than two scrape intervals later.
		{name: jobHTTPCumulative, protocol: "http", temporality: "cumulative", endpoint: lb.http},
		{name: jobHTTPDelta, protocol: "http", temporality: "delta", endpoint: lb.httpSticky, every: 3 * scrapeInterval},
	}
	run.began = time.Now()
	for _, g := range run.groups {
		g.start(t, otlpBin, dir, 3)
	}
	grpcAgents := startGRPCAgents(t, grpcBin, dir, lb.grpc, 3)
	run.sampler = startSampler(t, run.replicas, sampleEvery)

	if sc.short {
		// Long enough for most gRPC agents to have visited every replica.
		time.Sleep(4 * connectionAge)
		steady := time.Now()
		time.Sleep(6 * time.Second)
		run.steady = append(run.steady, window{steady, time.Now()})
	} else {
		run.rollAndKill(t, lb)
	}

	// Stop the agents: each flushes its last export and writes what it counted.
	stopped := time.Now()
	for _, g := range run.groups {
		m := g.stop(t)
		if g.protocol == "grpc" {
			require.NoError(t, setGRPCReplicas(&m, lb.log), "%s: put each export on its replica", g.name)
		}
		run.manifests[g.name] = m
	}
	run.grpc = grpcAgents.stop(t)
	run.flushed = time.Now()
	run.agentsRan = stopped.Sub(run.began)
	t.Logf("agents ran %v; stopped in %v", run.agentsRan.Round(time.Second), run.flushed.Sub(stopped).Round(time.Millisecond))
	// A run of deltas the last exports began shows its value in the third
	// scrape after it began (store.Series.Shown).
	run.prom.WaitScrapedAfter(t, "statsgate", run.flushed.Add(2*scrapeInterval), 15*time.Second)
	run.checkedAt = time.Now()
	run.sampler.halt()
	run.window = run.checkedAt.Sub(run.began) + time.Minute

	for i, r := range run.restarts {
		if !r.killed {
			continue
		}
		// The deltas the killed replica had not shown with their value yet
		// are lost with it: those it took after its last scrape, and the
		// runs it began after the scrape two before that (a run is left out
		// of one scrape and shown as its zero in the next, store.Series.Shown).
		victim := run.replica(r.replica)
		scrapes := scrapesBefore(t, run.prom, victim.metrics, r.down)
		run.restarts[i].unshownSince = scrapes[len(scrapes)-3]
		t.Logf("killed %s %v after its last scrape", victim.name, r.down.Sub(scrapes[len(scrapes)-1]).Round(time.Millisecond))
	}
	var err error
	run.refusals, err = readOutOfOrder(run.prom.Proc.Log)
	require.NoError(t, err)
	return run
}

// rollAndKill is the full run: steady, a rolling restart, a replica
// killed, steady again.
func (run *fleetRun) rollAndKill(t *testing.T, lb loadBalancer) {
	// Agents move every connectionAge from the start: the phase is steady
	// once each has moved and its first copy departed.
	time.Sleep(connectionAge + departWithin)
	steady := time.Now()
	time.Sleep(steadyFor)
	run.steady = append(run.steady, window{steady, time.Now()})
	for _, r := range run.replicas {
		// As a rolling update: out of the balancer first, then SIGTERM once
		// the requests in flight are done; back in once healthy.
		lb.takeOut(t, r.name)
		time.Sleep(exportInterval)
		down := time.Now()
		r.stop(t)
		// Stopped: Wait returns its exit status at once.
		require.NoError(t, r.proc.Wait(10*time.Second), "%s exits 0 on SIGTERM", r.name)
		r.start(t)
		lb.putBack(t, r.name)
		run.restarts = append(run.restarts, restart{replica: r.name, down: down, up: time.Now()})
		time.Sleep(6 * time.Second)
	}
	victim := run.replicas[1]
	// The kill must take something with it.
	run.heldAtKill = readHoldings([]*replica{victim}).agentSeries(victim.name, "")
	killedAt := time.Now()
	victim.kill()
	time.Sleep(3 * time.Second)
	victim.start(t)
	run.restarts = append(run.restarts, restart{replica: victim.name, down: killedAt, up: time.Now(), killed: true})
	time.Sleep(connectionAge)
	steady = time.Now()
	time.Sleep(steadyFor)
	run.steady = append(run.steady, window{steady, time.Now()})
}

func (run *fleetRun) replica(name string) *replica {
	for _, r := range run.replicas {
		if r.name == name {
			return r
		}
	}
	panic(name)
}

// checkExact runs every check of what Prometheus stored against what the
// agents counted, telling c what does not match.
func (run *fleetRun) checkExact(t *testing.T, c assert.TestingT) {
	for _, g := range run.groups {
		checkOTLPGroup(t, c, run.prom, g, run.manifests[g.name], run.restarts, run.window, run.checkedAt)
	}
	checkGRPCAgents(t, c, run.prom, run.grpc, run.window, run.checkedAt)
	checkNoDuplicates(t, c, run.prom, run.replicas, run.window, run.checkedAt)
}

// jobs are the agents' jobs, the gRPC services' among them.
func (run *fleetRun) jobs() []string {
	out := []string{grpcService}
	for _, g := range run.groups {
		out = append(out, g.name)
	}
	return out
}

// report logs, per job, the copies per series in the steady phases and the
// samples Prometheus refused as out of order per minute, and the replicas'
// memory, for the notes on a run.
func (run *fleetRun) report(t *testing.T, label string) {
	for _, job := range run.jobs() {
		t.Logf("%s: %s: copies per series %v; out-of-order refusals %.0f/min", label, job,
			run.sampler.copies(job, run.steady), refusalsPerMinute(run.refusals, job, run.agentsRan))
	}
	var heap []string
	for _, r := range run.replicas {
		if v, ok := telemetryValue(t, r, "otelcol_process_runtime_heap_alloc_bytes"); ok {
			heap = append(heap, fmt.Sprintf("%s %.1f MiB", r.name, v/(1<<20)))
		}
	}
	t.Logf("%s: all jobs: out-of-order refusals %.0f/min; Go heap at the end: %s", label,
		refusalsPerMinute(run.refusals, "", run.agentsRan), strings.Join(heap, ", "))
}

// telemetryValue sums a metric of the replica's own telemetry.
func telemetryValue(t *testing.T, r *replica, name string) (float64, bool) {
	fams, _, _, err := gatewaytest.Scrape("http://" + r.telemetry + "/metrics")
	if err != nil {
		t.Logf("%s: telemetry: %v", r.name, err)
		return 0, false
	}
	var sum float64
	mf, ok := fams[name]
	for _, m := range mf.GetMetric() {
		sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
	}
	return sum, ok
}

// connectionsOf counts the distinct gRPC connections each agent's exports
// went over.
func connectionsOf(m agentmanifest.OTLP) map[string]int {
	out := map[string]int{}
	for _, a := range m.Agents {
		seen := map[string]bool{}
		for _, e := range a.Exports {
			seen[e.Conn] = true
		}
		out[a.InstanceID] = len(seen)
	}
	return out
}

func TestFleet(t *testing.T) {
	t.Parallel() // with the move scenarios
	tl := requireTools(t, true)
	run := runFleet(t, tl, scenario{departure: true})
	run.report(t, "departure on")

	t.Run("every query of the Grafana dashboard returns data", func(t *testing.T) {
		checkDashboard(t, run)
	})

	t.Run("the scenario happened", func(t *testing.T) {
		for _, g := range run.groups {
			for _, a := range run.manifests[g.name].Agents {
				moves := movesOf(a, run.restarts)
				t.Logf("%s %s: %d exports, %d moves", g.name, a.InstanceID, len(a.Exports), moves)
				// The sticky delta agents move when their replica goes away.
				least := 2
				if g.endpoint == run.lb.httpSticky {
					least = 1
				}
				assert.GreaterOrEqual(t, moves, least, "%s %s moved between replicas", g.name, a.InstanceID)
				if g.protocol == "grpc" {
					// Every connectionAge, and at the restarts.
					assert.GreaterOrEqual(t, connectionsOf(run.manifests[g.name])[a.InstanceID], 4, "%s: gRPC connections reopened", a.InstanceID)
				}
			}
		}
		assert.Positive(t, run.heldAtKill, "the killed replica held agent series when it died")
		t.Logf("the killed replica held %d agent series", run.heldAtKill)
		var claims, departed float64
		for _, r := range run.replicas {
			c, _ := telemetryValue(t, r, "otelcol_exporter_agentprometheus_fleet_claims_sent")
			d, _ := telemetryValue(t, r, "otelcol_exporter_agentprometheus_series_removed")
			claims, departed = claims+c, departed+d
		}
		assert.Positive(t, claims, "claims sent since the replicas last started")
		assert.Positive(t, departed, "series removed since the replicas last started")
	})
	t.Run("OTLP agents: Prometheus holds what each agent counted", func(t *testing.T) {
		for _, g := range run.groups {
			checkOTLPGroup(t, t, run.prom, g, run.manifests[g.name], run.restarts, run.window, run.checkedAt)
		}
	})
	t.Run("gRPC agents: every call counted once, per agent, method and status", func(t *testing.T) {
		checkGRPCAgents(t, t, run.prom, run.grpc, run.window, run.checkedAt)
	})
	t.Run("no series twice", func(t *testing.T) {
		checkNoDuplicates(t, t, run.prom, run.replicas, run.window, run.checkedAt)
	})
	t.Run("one copy of each agent's series across the replicas, two for a moment at each move", func(t *testing.T) {
		for _, job := range slices.Sorted(maps.Keys(copiesBounds)) {
			checkCopies(t, t, run.sampler, run.steady, job)
		}
	})
	t.Run("out-of-order refusals stop within a few seconds of each move", func(t *testing.T) {
		// Agents whose moves are known: each export names its replica.
		for _, job := range []string{jobGRPCCumulative, jobGRPCDelta, jobHTTPDelta} {
			for _, a := range run.manifests[job].Agents {
				moves := moveTimes(a, run.restarts)
				for _, r := range run.restarts {
					moves = append(moves, r.down, r.up)
				}
				late := lateRefusals(run.refusals, a.InstanceID, moves, departWithin)
				assert.Empty(t, late, "%s %s: samples refused more than %v after the agent's last move", job, a.InstanceID, departWithin)
			}
		}
	})

	// After the agents stopped: how long replicas serve them, and how soon
	// Prometheus stops showing them.
	t.Run("stopped agents go stale in Prometheus after the lookback, while replicas still serve them", func(t *testing.T) {
		staleAt := run.flushed.Add(lookback + 2*time.Second)
		time.Sleep(time.Until(staleAt))
		served := 0
		for _, r := range run.replicas {
			served += agentSeriesServed(t, r)
		}
		require.Positive(t, served, "replicas still serve the agents' series %v after they stopped (metric_expiration %v)", time.Since(run.flushed).Round(time.Second), expiration)
		shown, err := run.prom.Floats(`count({job=~"fleet-.*"})`)
		require.NoError(t, err)
		assert.Empty(t, shown, "Prometheus still shows stopped agents' series %v after their last export (lookback %v)", time.Since(run.flushed).Round(time.Second), lookback)
	})
	t.Run("replicas stop serving an agent metric_expiration after its last export", func(t *testing.T) {
		bound := expiration + sweep + time.Second
		proctest.Poll(t, time.Until(run.flushed.Add(bound)), "no replica serving the stopped agents", func() error {
			for _, r := range run.replicas {
				if n := agentSeriesServed(t, r); n > 0 {
					return fmt.Errorf("%s serves %d series of the agents", r.name, n)
				}
			}
			return nil
		})
		t.Logf("the last replica stopped serving the agents %v after their last export (bound %v)", time.Since(run.flushed).Round(100*time.Millisecond), bound)
	})
}

// TestFleetControlDepartureOff is a negative control: TestFleet's fleet,
// shorter, with departures off. Every replica an agent visited holds a copy,
// and TestFleet's check of the copies fails. The controls are tests of
// their own, not subtests, so that what fails in one is printed right before
// its own result.
func TestFleetControlDepartureOff(t *testing.T) {
	tl := requireTools(t, true)
	run := runFleet(t, tl, scenario{short: true})
	run.report(t, "departure off")
	require.Empty(t, run.restarts, "the short scenario restarts no replica")
	// Checked agent by agent at every sample, so that how often the
	// agents happened to move within the window does not matter: every
	// replica an OTLP/gRPC agent exported to within the expiry window
	// (less a second for the ingestion before each acknowledgement)
	// holds a copy of its series.
	for _, job := range []string{jobGRPCCumulative, jobGRPCDelta} {
		v := run.sampler.visitsOf(job, run.manifests[job], run.steady, expiration-time.Second)
		t.Logf("departure off: %s: %d replicas exported to within the expiry window, over the samples and agents; %d agent samples with more than one; %d without a copy",
			job, v.checked, v.spread, len(v.unheld))
		require.Positive(t, v.spread, "%s: no agent moved within the expiry window: nothing to check", job)
		assert.Empty(t, v.unheld, "%s: replicas exported to within the expiry window without a copy of the agent's series", job)
	}
	// So the fleet's own check of the copies fails, job by job, for every
	// job whose agents moved in the window: the copies stay. The sticky
	// HTTP agents move only when their replica goes away, which none does
	// here: their findings are logged, not required.
	for _, job := range slices.Sorted(maps.Keys(copiesBounds)) {
		var f findings
		checkCopies(t, &f, run.sampler, run.steady, job)
		mean, long := 0, 0
		for _, m := range f.msgs {
			switch {
			case strings.Contains(m, ": copies per series"):
				mean++
			case strings.Contains(m, ": held by more than one replica for"):
				long++
			}
		}
		t.Logf("departure off: %s: the fleet's copies check found %d failures (%d of the mean, %d stretches too long), e.g.:\n%s",
			job, len(f.msgs), mean, long, strings.Join(f.msgs[:min(3, len(f.msgs))], "\n"))
		if job != jobHTTPDelta {
			assert.NotEmpty(t, f.msgs, "%s: the fleet's copies check passes without departures", job)
		}
	}
	late := 0
	for _, a := range run.manifests[jobGRPCCumulative].Agents {
		late += len(lateRefusals(run.refusals, a.InstanceID, moveTimes(a, nil), departWithin))
	}
	assert.Positive(t, late, "samples refused long after a move: the copies stay")
}

// TestFleetControlSampleTimestampsOff is a negative control: TestFleet's
// fleet, shorter, with sample timestamps off. What Prometheus stores is not
// what the agents counted.
func TestFleetControlSampleTimestampsOff(t *testing.T) {
	tl := requireTools(t, true)
	run := runFleet(t, tl, scenario{short: true, departure: true, sets: []string{"exporters::agentprometheus::send_timestamps=false"}})
	var f findings
	run.checkExact(t, &f)
	// The stale copies read as counter resets: totals above what the
	// agents counted.
	exactness := 0
	for _, m := range f.msgs {
		if strings.Contains(m, ": total") || strings.Contains(m, ": resets") {
			exactness++
		}
	}
	assert.Positive(t, exactness, "the exactness checks fail without sample timestamps")
	t.Logf("%d findings, %d of them totals and resets, e.g.:\n%s", len(f.msgs), exactness, strings.Join(f.msgs[:min(3, len(f.msgs))], "\n"))
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
