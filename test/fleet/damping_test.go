package fleet

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statsgate/statsgate/test/internal/proctest"
)

// dampingRun is what a fleet did with agents whose every export the load
// balancer sends to another replica.
type dampingRun struct {
	claimsPerAgentMinute float64
	createdPerSecond     float64
	copies               copiesFigure
}

const (
	sprayedAgents = 3
	sprayFor      = 45 * time.Second
)

// runSprayed runs 3 replicas as a fleet behind haproxy's per-request
// OTLP/HTTP balancing, with sprayedAgents cumulative agents exporting every
// second, and reads what the replicas counted.
func runSprayed(t *testing.T, tl tools, sets ...string) dampingRun {
	dir := t.TempDir()
	replicas := make([]*replica, replicaCount)
	for i := range replicas {
		replicas[i] = newReplica(t, fmt.Sprintf("replica-%d", i+1), tl.gateway, dir, sets...)
	}
	formFleet(t, dir, replicas)
	var wg sync.WaitGroup
	for _, r := range replicas {
		wg.Go(func() { r.start(t) })
	}
	wg.Wait()
	lb := startHAProxy(t, tl.haproxy, dir, replicas)
	bin := proctest.GoBuild(t, "../..", "./cmd/otlpagent", dir)
	g := &otlpGroup{name: "fleet-sprayed", protocol: "http", temporality: "cumulative", endpoint: lb.http}
	began := time.Now()
	g.start(t, bin, dir, sprayedAgents)
	s := startSampler(t, replicas, 500*time.Millisecond)
	time.Sleep(sprayFor)
	ended := time.Now()
	s.halt()
	m := g.stop(t)

	var claims, created float64
	for _, r := range replicas {
		c, ok := telemetryValue(t, r, "otelcol_exporter_agentprometheus_fleet_claims_sent")
		require.True(t, ok, r.name)
		n, ok := telemetryValue(t, r, "otelcol_exporter_agentprometheus_series_created")
		require.True(t, ok, r.name)
		claims, created = claims+c, created+n
	}
	for _, a := range m.Agents {
		replicasSeen := map[string]bool{}
		for _, e := range a.Exports {
			replicasSeen[e.Replica] = true
		}
		require.Len(t, replicasSeen, replicaCount, "%s: every replica took exports of the agent", a.InstanceID)
	}
	span := ended.Sub(began)
	return dampingRun{
		claimsPerAgentMinute: claims / sprayedAgents / span.Minutes(),
		createdPerSecond:     created / span.Seconds(),
		copies:               s.copies(g.name, []window{{began.Add(5 * time.Second), ended}}),
	}
}

// Under per-request balancing every replica receives every agent. The
// damping (fleet::claim_interval) keeps an agent from changing hands on
// every export: at most one claim per interval, so the series created and
// removed by departures stay few. Exactness under spraying is TestFleet's
// (its fleet-http-cumulative agents).
func TestSprayedAgentsAreClaimedAFewTimesAMinute(t *testing.T) {
	t.Parallel()
	tl := requireTools(t, true)
	// The defaults of the exporter's fleet settings: claim_interval 15s.
	damped := runSprayed(t, tl)
	undamped := runSprayed(t, tl, "exporters::agentprometheus::fleet::claim_interval=0s")
	t.Logf("damped (claim_interval %v): %.1f claims per agent a minute, %.1f series created/s, copies %v",
		defaultClaimInterval, damped.claimsPerAgentMinute, damped.createdPerSecond, damped.copies)
	t.Logf("not damped (claim_interval 0): %.1f claims per agent a minute, %.1f series created/s, copies %v",
		undamped.claimsPerAgentMinute, undamped.createdPerSecond, undamped.copies)

	// Each replica's first claim (it had given nothing up yet), then one per
	// interval, and one more for two replicas claiming within a gossip round.
	bound := float64(replicaCount+int(sprayFor/defaultClaimInterval)+1) / sprayFor.Minutes()
	assert.LessOrEqual(t, damped.claimsPerAgentMinute, bound, "claims per agent a minute with the damping")
	assert.Greater(t, undamped.claimsPerAgentMinute, 3*damped.claimsPerAgentMinute, "without the damping an agent changes hands on most exports")
	assert.Greater(t, undamped.createdPerSecond, 2*damped.createdPerSecond, "and its series are created again each time")
}
