package agentprometheusexporter

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/aggregate"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/metadatatest"
	"github.com/statsgate/statsgate/internal/testnet"
)

// aggregating sums requests by job and method.
func aggregating(c *Config) {
	c.Aggregate = []aggregate.RuleConfig{{Metrics: []string{"requests"}, By: []string{"service.name", "method"}}}
}

// agentRequests is one export of agent instance: its requests counter,
// whose run began at start (after the exporters' fake clock starts).
func agentRequests(instance string, start, at time.Duration, v int64) pmetric.Metrics {
	md, ms := batch(map[string]any{"service.name": "api", "service.instance.id": instance, "k8s.pod.name": "pod-" + instance})
	dp := sum(ms, "requests", "", true, pmetric.AggregationTemporalityCumulative).AppendEmpty()
	dp.SetStartTimestamp(ts(start))
	dp.SetTimestamp(ts(at))
	dp.SetIntValue(v)
	dp.Attributes().PutStr("method", "get")
	dp.Attributes().PutStr("user", "u-"+instance)
	return md
}

// requests is the value of the aggregate a serves, and whether it does.
func requests(te *testExporter) (float64, bool) {
	fams := te.scrape()
	mf, ok := fams["requests_total"]
	if !ok || len(mf.GetMetric()) != 1 {
		return 0, false
	}
	return mf.GetMetric()[0].GetCounter().GetValue(), true
}

func gaugeValue(t *testing.T, tel *componenttest.Telemetry, name string) int64 {
	t.Helper()
	m, err := tel.GetMetric(name)
	require.NoError(t, err)
	return m.Data.(metricdata.Gauge[int64]).DataPoints[0].Value
}

func TestAggregateServesOneSeriesPerGroup(t *testing.T) {
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	a := startExporterWith(t, metadatatest.NewSettings(tel), aggregating)
	a.consume(agentRequests("i-1", 10*time.Minute, 11*time.Minute, 3))
	a.consume(agentRequests("i-2", 10*time.Minute, 11*time.Minute, 4))
	a.takeZeros()
	assert.Equal(t, []string{"requests_total{job=api,method=get} 7"}, samples(a.scrape()), "one series, without instance, pod or user")

	m, err := tel.GetMetric("otelcol_exporter_agentprometheus_points_aggregated")
	require.NoError(t, err)
	assert.Equal(t, int64(2), m.Data.(metricdata.Sum[int64]).DataPoints[0].Value)
	assert.Equal(t, int64(2), gaugeValue(t, tel, "otelcol_exporter_agentprometheus_aggregate_sources"))
	assert.Equal(t, int64(1), gaugeValue(t, tel, "otelcol_exporter_agentprometheus_aggregate_groups"))
}

func TestANewGroupIsShownFromZero(t *testing.T) {
	a := startExporter(t, aggregating)
	a.consume(agentRequests("i-1", 10*time.Minute, 11*time.Minute, 3))
	assert.NotContains(t, a.scrape(), "requests_total", "left out of the first scrape after it began")
	v, ok := requests(a)
	require.True(t, ok)
	assert.Equal(t, 0.0, v, "its zero: increase() counts the 3 that follow")
	v, _ = requests(a)
	assert.Equal(t, 3.0, v)
}

// inFleetHanding is inFleet with a handover timeout.
func inFleetHanding(keyFile, bind string, join ...string) func(*Config) {
	return func(c *Config) {
		inFleet(keyFile, bind, join...)(c)
		c.Fleet.HandoverTimeout = 2 * time.Second
		aggregating(c)
	}
}

// settleAfter moves te's clock past the handover timeout and lets its
// aggregator settle the agents it waited for.
func settleAfter(te *testExporter) {
	te.clock.advance(3 * time.Second)
	te.exp.agg.Tick(te.clock.now().UnixNano())
}

func TestAggregatedCountsMoveWithTheAgentThroughTheFleet(t *testing.T) {
	keyFile, _ := fleetKey(t)
	gossipA := testnet.FreeEndpoint(t)
	a := startExporter(t, inFleetHanding(keyFile, gossipA))
	b := startExporter(t, inFleetHanding(keyFile, testnet.FreeEndpoint(t), gossipA))
	waitFleet(t, 2, a, b)

	for i := range 3 {
		a.consume(agentRequests("i-1", 10*time.Minute, time.Duration(11+i)*time.Minute, int64(10*(i+1))))
		if i == 0 {
			settleAfter(a) // nobody held i-1 before: a counts its run from zero
		}
	}
	a.takeZeros()
	got, _ := requests(a)
	require.Equal(t, 30.0, got)

	// i-1 reconnects to b: b claims it, a hears the claim and hands b what
	// it counted, and b counts on from there.
	b.consume(agentRequests("i-1", 10*time.Minute, 14*time.Minute, 45))
	require.Eventually(t, func() bool {
		b.consume(agentRequests("i-1", 10*time.Minute, 14*time.Minute+time.Duration(time.Now().UnixNano()%1e9), 45))
		v, _ := requests(b)
		return v == 15
	}, 10*time.Second, 50*time.Millisecond, "b counts the agent on from a's 30")
	got, _ = requests(a)
	assert.Equal(t, 30.0, got, "a keeps what it counted, and counts no more of i-1")
	a.consume(agentRequests("i-1", 10*time.Minute, 15*time.Minute, 50)) // a late export to a: not a's to count
	got, _ = requests(a)
	assert.Equal(t, 30.0, got)
	assert.Equal(t, int64(1), b.exp.agg.Handovers()[aggregate.HandoverApplied])
	assert.Equal(t, int64(1), a.exp.agg.Handovers()[aggregate.HandoverSent])
}

func TestAStoppingReplicaHandsItsAgentsToASuccessor(t *testing.T) {
	keyFile, _ := fleetKey(t)
	gossipA := testnet.FreeEndpoint(t)
	a := startExporter(t, inFleetHanding(keyFile, gossipA))
	b := startExporter(t, inFleetHanding(keyFile, testnet.FreeEndpoint(t), gossipA))
	waitFleet(t, 2, a, b)
	a.consume(agentRequests("i-1", 10*time.Minute, 11*time.Minute, 10))
	settleAfter(a)
	a.consume(agentRequests("i-1", 10*time.Minute, 12*time.Minute, 20))

	require.NoError(t, a.exp.shutdown(context.Background()))
	require.Eventually(t, func() bool { return b.exp.agg.Handovers()[aggregate.HandoverOffered] == 1 }, 5*time.Second, 10*time.Millisecond,
		"b, the only member left, keeps a's counts of i-1")
	b.consume(agentRequests("i-1", 10*time.Minute, 13*time.Minute, 26))
	b.takeZeros()
	got, _ := requests(b)
	assert.Equal(t, 6.0, got, "b counts on from the 20 a counted: nothing lost, nothing twice")
}

// TestAnAgentBalancedPerRequestIsCountedOnce: three replicas of a real
// memberlist fleet, an agent whose every export reaches the next replica,
// faster than a claim's gossip on some: however the claims interleave, the
// replicas' aggregates add up to what the agent counted once its last
// export is claimed (after the damping) and handed over.
func TestAnAgentBalancedPerRequestIsCountedOnce(t *testing.T) {
	keyFile, _ := fleetKey(t)
	gossipA := testnet.FreeEndpoint(t)
	damped := func(bind string, join ...string) func(*Config) {
		return func(c *Config) {
			inFleetHanding(keyFile, bind, join...)(c)
			c.Fleet.ClaimInterval = time.Second
		}
	}
	replicas := []*testExporter{startExporter(t, damped(gossipA))}
	for range 2 {
		replicas = append(replicas, startExporter(t, damped(testnet.FreeEndpoint(t), gossipA)))
	}
	waitFleet(t, 3, replicas...)
	tick := func(d time.Duration) {
		for _, r := range replicas {
			r.clock.advance(d)
			r.exp.agg.Tick(r.clock.now().UnixNano())
		}
	}
	var counted int64
	for i := range 30 {
		counted += 10
		replicas[i%3].consume(agentRequests("i-1", 10*time.Minute, 11*time.Minute+time.Duration(i)*time.Second, counted))
		// The replicas' clocks go as the real one, which gossip keeps.
		tick(300 * time.Millisecond)
		time.Sleep(300 * time.Millisecond)
	}
	// The replicas that took the last exports claim them back once their
	// damping passed (checked every second), and are handed the counts.
	var total float64
	require.Eventually(t, func() bool {
		tick(500 * time.Millisecond)
		total = 0
		for _, r := range replicas {
			r.takeZeros()
			v, _ := requests(r)
			total += v
		}
		if total != float64(counted) {
			var hs []string
			for _, r := range replicas {
				v, _ := requests(r)
				hs = append(hs, fmt.Sprint(v, r.exp.agg.Handovers()))
			}
			t.Logf("total %v: %v", total, hs)
		}
		return total == float64(counted)
	}, 20*time.Second, 500*time.Millisecond, "the replicas' aggregates add up to the agent's %d", counted)
	t.Logf("total %v", total)
	var applied int64
	for _, r := range replicas {
		applied += r.exp.agg.Handovers()[aggregate.HandoverApplied]
	}
	assert.Positive(t, applied, "the agent changed holders with its counts")
}
