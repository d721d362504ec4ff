package agentprometheusexporter // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter"

import (
	"net/http"
	"time"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/aggregate"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/cardinality"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/convert"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/descriptors"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
)

// cardinalityView is the cardinality view and the changes it shows. A nil
// view is one that is not enabled: nothing is counted for it.
type cardinalityView struct {
	view    *cardinality.View
	changes *cardinality.Changes
	path    string
	now     func() time.Time
}

// newCardinalityView returns the view of st, or nil when it is not enabled.
func newCardinalityView(cfg *Config, st *store.Store, descs *descriptors.Cache, agg *aggregate.Aggregator, now func() time.Time) *cardinalityView {
	c := cfg.Cardinality
	if !c.Enabled {
		return nil
	}
	changes := &cardinality.Changes{}
	opts := cardinality.Options{
		Top:            c.Top,
		ScanTimeout:    c.ScanTimeout,
		MaxDescriptors: cfg.MaxDescriptors,
		Descriptors:    descs.Len,
		Now:            now,
		Origin:         descs.Origin,
	}
	if agg != nil {
		opts.Aggregates = func() []cardinality.AggregateStat { return aggregateStats(agg, st) }
		opts.MaxAggregateSources = cfg.MaxAggregateSources
		opts.AggregateSources = agg.Sources
	}
	return &cardinalityView{view: cardinality.New(st, changes, opts), changes: changes, path: c.Path, now: now}
}

// aggregateStats reports each rule's sources and the series its groups
// serve (those of its resource in the store).
func aggregateStats(agg *aggregate.Aggregator, st *store.Store) []cardinality.AggregateStat {
	rules := agg.Rules().All()
	out := make([]cardinality.AggregateStat, len(rules))
	for i, r := range rules {
		out[i] = cardinality.AggregateStat{Rule: r.Index, Metrics: r.Config.Metrics, By: r.Config.By, Without: r.Config.Without, Sources: r.Sources()}
		if res := st.LookupKey(aggregate.ResourceKey(r)); res != nil {
			out[i].Series = res.SeriesCount()
		}
	}
	return out
}

// route serves the view on the /metrics server's mux, behind the same TLS
// and authenticator.
func (c *cardinalityView) route(mux *http.ServeMux) {
	if c != nil {
		mux.Handle(c.path, c.view)
	}
}

// recordChanges counts what a batch created, ended and refused for the
// view; a batch that only updated series records nothing.
func (c *cardinalityView) recordChanges(stats *convert.Stats) {
	if c == nil {
		return
	}
	ch := cardinality.Change{
		Created: stats.Created,
		Ended:   stats.Removed,
		Refused: cardinality.Refused{
			MaxSeries:            stats.Dropped[convert.RefusedMaxSeries],
			MaxSeriesPerResource: stats.Dropped[convert.RefusedMaxSeriesPerResource],
		},
	}
	if ch != (cardinality.Change{}) {
		c.changes.Record(c.now(), ch)
	}
}

// recordExpired counts what a sweep expired for the view.
func (c *cardinalityView) recordExpired(n int) {
	if c != nil && n > 0 {
		c.changes.Record(c.now(), cardinality.Change{Expired: int64(n)})
	}
}
