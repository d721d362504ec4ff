package agentprometheusexporter // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter"

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/aggregate"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/convert"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/fleet"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/retire"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
)

// newAggregator compiles the aggregate rules into the aggregator that
// takes their metrics; in a fleet it asks the fleet who holds an agent and
// hands counts over through it.
func (e *agentPrometheusExporter) newAggregator(cfg *Config, st *store.Store, clk clock) (*aggregate.Aggregator, error) {
	rules, err := aggregate.Compile(cfg.Aggregate, convert.Glob)
	if err != nil {
		return nil, err
	}
	acfg := aggregate.Config{
		Rules:              rules,
		MaxSources:         cfg.MaxAggregateSources,
		MaxSourcesPerTable: cfg.MaxSeriesPerResource,
		Expiration:         cfg.MetricExpiration,
		Fleet:              cfg.Fleet.Enabled,
		HandoverTimeout:    cfg.Fleet.HandoverTimeout,
		Started:            clk.now().UnixNano(),
		Owns: func(id store.ID) bool {
			m := e.fleet.Load()
			return m == nil || m.node.Owns(fleet.ID(id))
		},
	}
	if cfg.Fleet.Enabled && cfg.Fleet.HandoverTimeout > 0 {
		acfg.Send = func(to uint64, id store.ID, payload []byte, from aggregate.From) bool {
			m := e.fleet.Load()
			return m != nil && m.node.Hand(to, fleet.ID(id), payload, from.Giver, from.Answers)
		}
	}
	return aggregate.New(acfg, st), nil
}

// aggregateTick is how often the aggregator settles the agents whose
// handover timed out and expires sources: a tenth of the handover timeout
// in a fleet (at least 100 ms), as the sweep otherwise.
func (e *agentPrometheusExporter) aggregateTick() time.Duration {
	d := retire.SweepInterval(e.cfg.MetricExpiration)
	if e.cfg.Fleet.Enabled && e.cfg.Fleet.HandoverTimeout > 0 {
		d = min(d, max(e.cfg.Fleet.HandoverTimeout/10, 100*time.Millisecond))
	}
	return d
}

func (e *agentPrometheusExporter) aggregateTicks(tick <-chan time.Time, stop func(), quit, done chan struct{}) {
	defer close(done)
	defer stop()
	for {
		select {
		case <-quit:
			return
		case <-tick:
			e.agg.Tick(e.clock.now().UnixNano())
		}
	}
}

// warnAggregateAlone says why aggregates of cumulative sources are not
// exact behind a load balancer without the fleet.
func (e *agentPrometheusExporter) warnAggregateAlone() {
	if e.cfg.Fleet.Enabled {
		return
	}
	e.set.Logger.Warn("aggregate rules with fleet::enabled false: each aggregate counts what this gateway receives of an agent's cumulative series. "+
		"If this gateway is one of several replicas and agents move between them, an agent's increments between its last export to one replica and its first to another are counted by neither, "+
		"and an agent balanced per request is counted by every replica it reaches from their own points. Enable the fleet to hand counts over.",
		zap.Int("rules", len(e.cfg.Aggregate)))
}

// registerAggregateTelemetry reports the aggregator's sources, groups and
// handovers (and the fleet's part of them), when there are rules.
func (e *agentPrometheusExporter) registerAggregateTelemetry() error {
	if e.agg == nil {
		return nil
	}
	outcomes := make([]metric.ObserveOption, aggregate.NumHandovers+fleet.NumHandoverOutcomes)
	for i := range aggregate.NumHandovers {
		outcomes[i] = metric.WithAttributeSet(attribute.NewSet(attribute.String("outcome", aggregate.Handover(i).String())))
	}
	for i := range fleet.NumHandoverOutcomes {
		outcomes[aggregate.NumHandovers+i] = metric.WithAttributeSet(attribute.NewSet(attribute.String("outcome", fleet.HandoverOutcome(i).String())))
	}
	err := e.telemetry.RegisterExporterAgentprometheusAggregateSourcesCallback(func(_ context.Context, o metric.Int64Observer) error {
		o.Observe(e.agg.Sources())
		return nil
	})
	if err != nil {
		return err
	}
	if err := e.telemetry.RegisterExporterAgentprometheusAggregateGroupsCallback(func(_ context.Context, o metric.Int64Observer) error {
		o.Observe(int64(e.agg.Groups()))
		return nil
	}); err != nil {
		return err
	}
	return e.telemetry.RegisterExporterAgentprometheusAggregateHandoversCallback(func(_ context.Context, o metric.Int64Observer) error {
		for i, n := range e.agg.Handovers() {
			o.Observe(n, outcomes[i])
		}
		if m := e.fleet.Load(); m != nil {
			stats := m.node.Stats()
			for i := range fleet.NumHandoverOutcomes {
				o.Observe(stats.Handovers[i].Load(), outcomes[aggregate.NumHandovers+i])
			}
		}
		return nil
	})
}
