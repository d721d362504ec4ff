package agentprometheusexporter

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/metadatatest"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/storetest"
)

// These tests play millions of series; they run without the race detector
// (make test runs them in its second, plain pass).

const (
	goodAgents      = 1000
	seriesPerAgent  = 10
	attackSeries    = 2_000_000
	attackBatchSize = 10_000
)

// agentLoad is one batch of an agent's gauge "load": series first..first+n-1
// of the agent, all with the given value.
func agentLoad(agent string, first, n int, value float64) pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("service.name", "fleet")
	rm.Resource().Attributes().PutStr("service.instance.id", agent)
	g := rm.ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	g.SetName("load")
	dps := g.SetEmptyGauge().DataPoints()
	dps.EnsureCapacity(n)
	for i := first; i < first+n; i++ {
		dp := dps.AppendEmpty()
		dp.Attributes().PutStr("series", strconv.Itoa(i))
		dp.SetDoubleValue(value)
	}
	return md
}

func goodAgent(i int) string { return fmt.Sprint("good-", i) }

// attackTarget is an exporter with telemetry and an observed log.
func attackTarget(t *testing.T, configure func(*Config)) (*testExporter, *componenttest.Telemetry, *observer.ObservedLogs) {
	t.Helper()
	if storetest.RaceEnabled {
		t.Skip("plays millions of series: run without -race")
	}
	tel := componenttest.NewTelemetry()
	set := metadatatest.NewSettings(tel)
	core, logs := observer.New(zapcore.WarnLevel)
	set.Logger = zap.New(core)
	return startExporterWith(t, set, configure), tel, logs
}

func refusedCounts(t *testing.T, tel *componenttest.Telemetry) map[string]int64 {
	return countsBy(t, tel, "otelcol_exporter_agentprometheus_series_refused", "reason")
}

// goodSeriesAt checks that every well-behaved agent's series is exposed
// with value v.
func goodSeriesAt(t *testing.T, te *testExporter, v float64) {
	t.Helper()
	seen := map[string]int{}
	for _, m := range te.scrape()["load"].GetMetric() {
		var instance string
		for _, l := range m.GetLabel() {
			if l.GetName() == "instance" {
				instance = l.GetValue()
			}
		}
		if instance == "attacker" || m.GetGauge().GetValue() != v {
			continue
		}
		seen[instance]++
	}
	require.Len(t, seen, goodAgents)
	for agent, n := range seen {
		require.Equal(t, seriesPerAgent, n, agent)
	}
}

func TestUnderAttackOneAgentCannotCrowdOutTheOthers(t *testing.T) {
	te, tel, logs := attackTarget(t, nil) // defaults: max_series_per_resource 50k
	limit := te.exp.cfg.MaxSeriesPerResource
	for a := range goodAgents {
		te.consume(agentLoad(goodAgent(a), 0, seriesPerAgent, 1))
	}

	start := time.Now()
	for first := 0; first < attackSeries; first += attackBatchSize {
		te.consume(agentLoad("attacker", first, attackBatchSize, 1))
	}
	t.Logf("%d attacking series ingested in %v", attackSeries, time.Since(start))

	// The well-behaved agents still update, and can still add series.
	for a := range goodAgents {
		te.consume(agentLoad(goodAgent(a), 0, seriesPerAgent, 2))
	}
	goodSeriesAt(t, te, 2)
	assert.Equal(t, int64(goodAgents*seriesPerAgent+limit), te.exp.store.SeriesCount())
	te.consume(agentLoad(goodAgent(0), seriesPerAgent, 1, 2))
	assert.Equal(t, int64(goodAgents*seriesPerAgent+limit+1), te.exp.store.SeriesCount())

	assert.Equal(t, map[string]int64{"max_series_per_resource": int64(attackSeries - limit)}, refusedCounts(t, tel))

	// 200 refused batches, one warning: the log is rate limited.
	warnings := logs.FilterMessageSnippet("Refused new series").All()
	require.Len(t, warnings, 1)
	assert.Equal(t, int64(attackBatchSize), warnings[0].ContextMap()["over_max_series_per_resource"])
	te.clock.advance(logInterval)
	te.consume(agentLoad("attacker", attackSeries, 10, 1))
	assert.Len(t, logs.FilterMessageSnippet("Refused new series").All(), 2, "the next warning comes after the interval")
}

func TestUnderAttackTheGlobalLimitHolds(t *testing.T) {
	const maxSeries = 100_000
	te, tel, _ := attackTarget(t, func(c *Config) { c.MaxSeries = maxSeries })
	perResource := te.exp.cfg.MaxSeriesPerResource
	for a := range goodAgents {
		te.consume(agentLoad(goodAgent(a), 0, seriesPerAgent, 1))
	}
	// 40 agents of 50k new series each: 2M series over 40 resources.
	const attackers = attackSeries / 50_000
	for a := range attackers {
		for first := 0; first < 50_000; first += attackBatchSize {
			te.consume(agentLoad(fmt.Sprint("attacker-", a), first, attackBatchSize, 1))
		}
	}
	assert.Equal(t, int64(maxSeries), te.exp.store.SeriesCount())

	// Existing series keep updating at the limit.
	for a := range goodAgents {
		te.consume(agentLoad(goodAgent(a), 0, seriesPerAgent, 3))
	}
	goodSeriesAt(t, te, 3)

	refused := refusedCounts(t, tel)
	assert.Equal(t, int64(attackSeries-(maxSeries-goodAgents*seriesPerAgent)), refused["max_series"]+refused["max_series_per_resource"])
	assert.Positive(t, refused["max_series"])
	assert.Zero(t, refused["max_series_per_resource"], "no attacker went over its own limit of %d", perResource)
}
