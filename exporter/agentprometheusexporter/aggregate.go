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
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/metadata"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/retire"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
)

// newAggregator compiles the aggregate rules into the aggregator that
// takes their metrics; in a fleet it asks the fleet who holds an agent and
// hands counts over through it.
func newAggregator(cfg *Config, st *store.Store, clk clock, fl *gatewayFleet) (*aggregate.Aggregator, error) {
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
		Owns:               fl.owns,
	}
	if cfg.Fleet.Enabled && cfg.Fleet.HandoverTimeout > 0 {
		acfg.Send = fl.hand
	}
	return aggregate.New(acfg, st), nil
}

// aggregateTick is how often the aggregator settles the agents whose
// handover timed out and expires sources: a tenth of the handover timeout
// in a fleet (at least 100 ms), as the sweep otherwise.
func aggregateTick(cfg *Config) time.Duration {
	d := retire.SweepInterval(cfg.MetricExpiration)
	if cfg.Fleet.Enabled && cfg.Fleet.HandoverTimeout > 0 {
		d = min(d, max(cfg.Fleet.HandoverTimeout/10, 100*time.Millisecond))
	}
	return d
}

// aggregateTicks ticks agg on tick until quit closes, then closes done.
func aggregateTicks(agg *aggregate.Aggregator, clk clock, tick <-chan time.Time, stop func(), quit, done chan struct{}) {
	defer close(done)
	defer stop()
	for {
		select {
		case <-quit:
			return
		case <-tick:
			agg.Tick(clk.now().UnixNano())
		}
	}
}

// warnAggregateAlone says why aggregates of cumulative sources are not
// exact behind a load balancer without the fleet.
func warnAggregateAlone(cfg *Config, logger *zap.Logger) {
	if cfg.Fleet.Enabled {
		return
	}
	logger.Warn("aggregate rules with fleet::enabled false: each aggregate counts what this gateway receives of an agent's cumulative series. "+
		"If this gateway is one of several replicas and agents move between them, an agent's increments between its last export to one replica and its first to another are counted by neither, "+
		"and an agent balanced per request is counted by every replica it reaches from their own points. Enable the fleet to hand counts over.",
		zap.Int("rules", len(cfg.Aggregate)))
}

// registerAggregateTelemetry reports the aggregator's sources, groups and
// handovers (and the fleet's part of them), when there are rules.
func registerAggregateTelemetry(tb *metadata.TelemetryBuilder, agg *aggregate.Aggregator, fl *gatewayFleet) error {
	if agg == nil {
		return nil
	}
	outcomes := make([]metric.ObserveOption, aggregate.NumHandovers+fleet.NumHandoverOutcomes)
	for i := range aggregate.NumHandovers {
		outcomes[i] = metric.WithAttributeSet(attribute.NewSet(attribute.String("outcome", aggregate.Handover(i).String())))
	}
	for i := range fleet.NumHandoverOutcomes {
		outcomes[aggregate.NumHandovers+i] = metric.WithAttributeSet(attribute.NewSet(attribute.String("outcome", fleet.HandoverOutcome(i).String())))
	}
	err := tb.RegisterExporterAgentprometheusAggregateSourcesCallback(func(_ context.Context, o metric.Int64Observer) error {
		o.Observe(agg.Sources())
		return nil
	})
	if err != nil {
		return err
	}
	if err := tb.RegisterExporterAgentprometheusAggregateGroupsCallback(func(_ context.Context, o metric.Int64Observer) error {
		o.Observe(int64(agg.Groups()))
		return nil
	}); err != nil {
		return err
	}
	return tb.RegisterExporterAgentprometheusAggregateHandoversCallback(func(_ context.Context, o metric.Int64Observer) error {
		for i, n := range agg.Handovers() {
			o.Observe(n, outcomes[i])
		}
		hs := fl.handovers()
		for i := range hs {
			o.Observe(hs[i].Load(), outcomes[aggregate.NumHandovers+i])
		}
		return nil
	})
}
