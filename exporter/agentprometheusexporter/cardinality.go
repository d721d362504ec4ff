package agentprometheusexporter // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter"

import (
	"net/http"

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
	return cardinality.New(e.store, changes, cardinality.Options{
		Top:            c.Top,
		ScanTimeout:    c.ScanTimeout,
		MaxDescriptors: e.cfg.MaxDescriptors,
		Descriptors:    e.descs.Len,
		Now:            e.clock.now,
	}), changes
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
