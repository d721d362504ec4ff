package agentprometheusexporter // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter"

import (
	"net/http"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/aggregate"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/cardinality"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/convert"
)

// newCardinalityView returns the cardinality view and the changes it
// shows, or nils when it is not enabled: then nothing is counted for it.
func (e *agentPrometheusExporter) newCardinalityView() (*cardinality.View, *cardinality.Changes) {
	c := e.cfg.Cardinality
	if !c.Enabled {
		return nil, nil
	}
	changes := &cardinality.Changes{}
	opts := cardinality.Options{
		Top:            c.Top,
		ScanTimeout:    c.ScanTimeout,
		MaxDescriptors: e.cfg.MaxDescriptors,
		Descriptors:    e.descs.Len,
		Now:            e.clock.now,
		Origin:         e.descs.Origin,
	}
	if e.agg != nil {
		opts.Aggregates = e.aggregateStats
		opts.MaxAggregateSources = e.cfg.MaxAggregateSources
		opts.AggregateSources = e.agg.Sources
	}
	return cardinality.New(e.store, changes, opts), changes
}

// aggregateStats reports each rule's sources and the series its groups
// serve (those of its resource in the store).
func (e *agentPrometheusExporter) aggregateStats() []cardinality.AggregateStat {
	rules := e.agg.Rules().All()
	out := make([]cardinality.AggregateStat, len(rules))
	for i, r := range rules {
		out[i] = cardinality.AggregateStat{Rule: r.Index, Metrics: r.Config.Metrics, By: r.Config.By, Without: r.Config.Without, Sources: r.Sources()}
		if res := e.store.LookupKey(aggregate.ResourceKey(r)); res != nil {
			out[i].Series = res.SeriesCount()
		}
	}
	return out
}

// routeCardinality serves the view on the /metrics server's mux, behind the
// same TLS and authenticator.
func (e *agentPrometheusExporter) routeCardinality(mux *http.ServeMux) {
	if e.cardinality != nil {
		mux.Handle(e.cfg.Cardinality.Path, e.cardinality)
	}
}

// recordChanges counts what a batch created, ended and refused for the
// view; a batch that only updated series records nothing.
func (e *agentPrometheusExporter) recordChanges(stats *convert.Stats) {
	if e.changes == nil {
		return
	}
	c := cardinality.Change{
		Created: stats.Created,
		Ended:   stats.Removed,
		Refused: cardinality.Refused{
			MaxSeries:            stats.Dropped[convert.RefusedMaxSeries],
			MaxSeriesPerResource: stats.Dropped[convert.RefusedMaxSeriesPerResource],
		},
	}
	if c != (cardinality.Change{}) {
		e.changes.Record(e.clock.now(), c)
	}
}

// recordExpired counts what a sweep expired for the view.
func (e *agentPrometheusExporter) recordExpired(n int) {
	if e.changes != nil && n > 0 {
		e.changes.Record(e.clock.now(), cardinality.Change{Expired: int64(n)})
	}
}
