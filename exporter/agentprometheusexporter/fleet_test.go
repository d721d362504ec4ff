package agentprometheusexporter

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/fleet"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/metadatatest"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
	"github.com/statsgate/statsgate/internal/testnet"
)

// fleetKey writes a fleet key file as an operator would, and returns its
// path and the key.
func fleetKey(t *testing.T) (string, []byte) {
	t.Helper()
	key := make([]byte, 32)
	_, err := rand.Read(key)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "key")
	require.NoError(t, os.WriteFile(path, []byte(base64.StdEncoding.EncodeToString(key)+"\n"), 0o600))
	return path, key
}

// inFleet configures an exporter as a replica gossiping on bind with peers.
func inFleet(keyFile, bind string, join ...string) func(*Config) {
	return func(c *Config) {
		c.Fleet = FleetConfig{Enabled: true, Bind: bind, Join: join, SecretKeyFile: keyFile, ClaimInterval: 15 * time.Second, RejoinInterval: 100 * time.Millisecond}
	}
}

func waitFleet(t *testing.T, members int, replicas ...*testExporter) {
	t.Helper()
	require.Eventually(t, func() bool {
		for _, r := range replicas {
			if r.exp.fleet.member.Load().node.Members() != members {
				return false
			}
		}
		return true
	}, 10*time.Second, 10*time.Millisecond, "the replicas form a fleet of %d", members)
}

// agentExport is one export of the agent: a cumulative counter, a gauge, and
// a delta counter, with points at `at`.
func agentExport(at time.Duration, cumulative int64, delta int64, deltaStart time.Duration) pmetric.Metrics {
	md, ms := batch(agent)
	c := sum(ms, "requests", "", true, pmetric.AggregationTemporalityCumulative).AppendEmpty()
	c.SetStartTimestamp(ts(0))
	c.SetTimestamp(ts(at))
	c.SetIntValue(cumulative)
	g := gauge(ms, "queue.length", 7, nil)
	g.SetTimestamp(ts(at))
	d := sum(ms, "jobs.done", "", true, pmetric.AggregationTemporalityDelta).AppendEmpty()
	d.SetStartTimestamp(ts(deltaStart))
	d.SetTimestamp(ts(at))
	d.SetIntValue(delta)
	return md
}

// regularScrapers makes a and b regular scrapers of te (two scrapes each).
func regularScrapers(te *testExporter, a, b string) {
	for range 2 {
		te.clock.advance(10 * time.Second)
		te.scrapeFrom(a)
		te.scrapeFrom(b)
	}
}

func TestAnAgentThatMovesLeavesTheReplicaItLeft(t *testing.T) {
	keyFile, _ := fleetKey(t)
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	gossipA := testnet.FreeEndpoint(t)
	a := startExporterWith(t, metadatatest.NewSettings(tel), inFleet(keyFile, gossipA))
	b := startExporter(t, inFleet(keyFile, testnet.FreeEndpoint(t), gossipA))
	waitFleet(t, 2, a, b)
	pa, pb := "127.0.0.1", "127.0.0.2" // two Prometheus servers scraping a
	regularScrapers(a, pa, pb)

	// Three exports to a: the delta run shows its value after the steps.
	for i := range 3 {
		a.clock.advance(time.Second)
		a.consume(agentExport(time.Duration(i+1)*time.Minute, int64(10*(i+1)), 5, time.Duration(i)*time.Minute))
		for range 3 {
			a.clock.advance(time.Second)
			a.scrapeFrom(pa)
			a.scrapeFrom(pb)
		}
	}
	require.Equal(t, map[string]float64{"requests_total": 30, "queue_length": 7, "jobs_done_total": 15, "target_info": 1}, a.scrapeFrom(pa))

	// The agent reconnects to b, which claims it: a drops the cumulative
	// counter and the gauge at once (b has newer points of them)...
	b.consume(agentExport(4*time.Minute, 40, 5, 3*time.Minute))
	require.Eventually(t, func() bool { _, ok := a.scrapeFrom(pa)["requests_total"]; return !ok }, 5*time.Second, 10*time.Millisecond,
		"a stops serving the agent's cumulative series")
	got := a.scrapeFrom(pa)
	assert.NotContains(t, got, "queue_length")
	// ...and keeps the deltas it accumulated until both scrapers took them.
	assert.Equal(t, 15.0, got["jobs_done_total"], "a still serves its run of deltas")
	a.clock.advance(time.Second)
	assert.Equal(t, 15.0, a.scrapeFrom(pb)["jobs_done_total"], "the other scraper takes the last value too")
	require.Eventually(t, func() bool {
		a.clock.advance(time.Second)
		_, pbHas := a.scrapeFrom(pb)["jobs_done_total"]
		_, paHas := a.scrapeFrom(pa)["jobs_done_total"]
		return !pbHas && !paHas
	}, 5*time.Second, 50*time.Millisecond, "a lets the deltas go once every scraper has taken them")
	assert.NotContains(t, a.scrapeFrom(pa), "target_info", "a resource without series has no target_info")

	assert.Equal(t, map[string]int64{"departed": 3}, countsBy(t, tel, "otelcol_exporter_agentprometheus_series_removed", "reason"))
	assert.Equal(t, int64(1), b.exp.fleet.member.Load().node.Stats().ClaimsSent.Load())
	assert.Equal(t, int64(1), a.exp.fleet.member.Load().node.Stats().ClaimsHeard[fleet.Departed].Load())
	// b serves what it received.
	assert.Equal(t, 40.0, b.scrapeFrom(pa)["requests_total"])
}

// A claim can be forged only with the fleet's key. Even then it costs the
// agent's series until its next export, which restores them; and a claim
// replayed from the past changes nothing.
func TestAForgedClaimCostsAtMostOneExport(t *testing.T) {
	keyFile, key := fleetKey(t)
	gossip := testnet.FreeEndpoint(t)
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	a := startExporterWith(t, metadatatest.NewSettings(tel), inFleet(keyFile, gossip))
	a.consume(agentExport(2*time.Minute, 20, 0, 0))
	require.Eventually(t, func() bool { return gaugeValue(t, tel, "otelcol_exporter_agentprometheus_fleet_claims_queued") > 0 }, 5*time.Second, time.Millisecond,
		"a queues its claim for gossip")
	require.Contains(t, a.scrape(), "requests_total")
	id := fleet.ID(store.IDOf([]byte("shop/api\xffi-1")))

	// forge joins a node that has the key and claims whatever it is told:
	// it does not hold the resource and has no damping. It claims once it
	// knows a's claim and a has sent it for the last time: a forged claim
	// older than a copy of a's that arrives after it is replaced in the
	// forger's queue by a's, which the forger relays, and never sent.
	forge := func(name string, point time.Duration) *fleet.Node {
		forger, err := fleet.Start(fleet.Config{
			Name: name, Bind: "127.0.0.1:0", Join: []string{gossip}, SecretKey: key,
			ClaimInterval: 0, Retain: time.Minute, MaxResources: 10, RejoinInterval: time.Second,
			Now: func() int64 { return time.Now().UnixNano() }, Depart: func(fleet.ID, int64) bool { return true },
		}, zap.NewNop())
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, forger.Stop(time.Second)) })
		require.Eventually(t, func() bool {
			return forger.Stats().ClaimsHeard[fleet.NotHeld].Load() >= 1 &&
				gaugeValue(t, tel, "otelcol_exporter_agentprometheus_fleet_claims_queued") == 0
		}, 10*time.Second, 10*time.Millisecond, "%s learns a's claim, which a sends no more", name)
		forger.Received(id, int64(ts(point)))
		return forger
	}

	// A replay of an old claim: stale, a's own claim is newer.
	replayer := forge("replayer", time.Minute)
	untilHeard(t, func() bool {
		return a.exp.fleet.member.Load().node.Stats().ClaimsHeard[fleet.Stale].Load() >= 1
	}, func(i int) { replayer.Received(id, int64(ts(time.Minute))+int64(i)) }, "a hears the replayed claim")
	assert.Zero(t, a.exp.fleet.member.Load().node.Stats().ClaimsHeard[fleet.Departed].Load())
	require.Contains(t, a.scrape(), "requests_total")

	// A claim of a point far in the future: the series go...
	forger := forge("forger", 24*time.Hour)
	untilHeard(t, func() bool { _, ok := a.scrape()["requests_total"]; return !ok },
		func(i int) { forger.Received(id, int64(ts(24*time.Hour))+int64(i)) }, "a hears the forged claim")
	assert.Equal(t, int64(1), a.exp.fleet.member.Load().node.Stats().ClaimsHeard[fleet.Departed].Load())
	// ...until the agent's next export.
	a.consume(agentExport(3*time.Minute, 30, 0, 0))
	fams := a.scrape()
	require.Contains(t, fams, "requests_total")
	assert.Equal(t, 30.0, fams["requests_total"].GetMetric()[0].GetCounter().GetValue())
}

// untilHeard waits for heard, claiming again with resend(1), resend(2), ...
// each second it does not hold: gossip is best effort, and a forger's claim
// can be dropped from its queue (a relayed copy of a's claim takes its
// place). A claim that never reaches a tests nothing; what a does when it
// hears one is what the caller asserts.
func untilHeard(t *testing.T, heard func() bool, resend func(i int), msg string) {
	t.Helper()
	for i := 1; i <= 10; i++ {
		deadline := time.Now().Add(time.Second)
		for time.Now().Before(deadline) {
			if heard() {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Logf("%s: not yet, claiming again (%d)", msg, i)
		resend(i)
	}
	require.True(t, heard(), msg)
}

func TestAReplicaWithoutPeersRunsAlone(t *testing.T) {
	keyFile, _ := fleetKey(t)
	a := startExporter(t, inFleet(keyFile, testnet.FreeEndpoint(t)))
	a.consume(agentExport(time.Minute, 10, 0, 0))
	assert.Contains(t, a.scrape(), "requests_total")
	assert.Equal(t, 1, a.exp.fleet.member.Load().node.Members())
	assert.Equal(t, int64(1), a.exp.fleet.member.Load().node.Stats().ClaimsSent.Load())
}

func TestFleetKeyFileErrorsAreClear(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	for name, tc := range map[string]struct{ path, want string }{
		"missing":    {filepath.Join(dir, "nope"), "no such file"},
		"not base64": {write("raw", "this is not base64!"), "want the base64 of a 16, 24 or 32-byte key"},
		"wrong size": {write("short", base64.StdEncoding.EncodeToString([]byte("12345"))), "the key is 5 bytes, want 16, 24 or 32"},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := createDefaultConfig().(*Config)
			cfg.Server.NetAddr.Endpoint = testnet.FreeEndpoint(t)
			inFleet(tc.path, testnet.FreeEndpoint(t))(cfg)
			exp, err := newAgentPrometheusExporter(metadatatest.NewSettings(componenttest.NewTelemetry()), cfg, wallClock)
			require.NoError(t, err)
			err = exp.start(t.Context(), componenttest.NewNopHost())
			require.ErrorContains(t, err, "fleet::secret_key_file: ")
			require.ErrorContains(t, err, tc.want)
			require.NoError(t, exp.shutdown(t.Context()))
		})
	}
	t.Run("a bind port in use", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer l.Close()
		cfg := createDefaultConfig().(*Config)
		cfg.Server.NetAddr.Endpoint = testnet.FreeEndpoint(t)
		inFleet("", "127.0.0.1:"+strconv.Itoa(l.Addr().(*net.TCPAddr).Port))(cfg)
		exp, err := newAgentPrometheusExporter(metadatatest.NewSettings(componenttest.NewTelemetry()), cfg, wallClock)
		require.NoError(t, err)
		require.ErrorContains(t, exp.start(t.Context(), componenttest.NewNopHost()), "fleet: ")
		require.NoError(t, exp.shutdown(t.Context()))
	})
}
