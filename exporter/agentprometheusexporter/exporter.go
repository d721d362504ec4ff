package agentprometheusexporter // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter"

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/aggregate"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/convert"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/descriptors"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/exposition"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/metadata"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/prommodel"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/retire"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/scrape"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
)

// shutdownGrace is how long shutdown waits for scrapes in flight.
const shutdownGrace = 5 * time.Second

// logInterval bounds how often type conflicts and refused series are logged.
const logInterval = 10 * time.Second

type agentPrometheusExporter struct {
	cfg       *Config
	set       exporter.Settings
	telemetry *metadata.TelemetryBuilder
	clock     clock

	store *store.Store
	descs *descriptors.Cache
	conv  *convert.Converter
	// agg sums the metrics of the aggregate rules; nil without rules.
	agg *aggregate.Aggregator

	attrs attributeSets

	scrapes  *scrape.Coalescer
	scrapers *scrape.Scrapers
	encoder  *scrape.Encoder
	// retire removes expired and departed series, and drains deltas at
	// shutdown.
	retire *retire.Retirement

	conflictLog logLimiter
	refusalLog  logLimiter

	// cardinality serves the cardinality view of changes and the store;
	// nil when it is not enabled.
	cardinality *cardinalityView

	// fleet is the exporter's part in a fleet (fleet::enabled).
	fleet *gatewayFleet

	// mu guards the server and the background work across Start and
	// Shutdown.
	mu        sync.Mutex
	server    *http.Server
	handler   *scrape.Handler
	serveDone chan struct{}
	stopAgg   chan struct{}
	aggDone   chan struct{}
}

func newAgentPrometheusExporter(set exporter.Settings, cfg *Config, clk clock) (*agentPrometheusExporter, error) {
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	descs, err := descriptors.NewCache(cfg.MaxDescriptors)
	if err != nil {
		return nil, err
	}
	st := store.New(cfg.MaxSeries, cfg.MaxSeriesPerResource, prommodel.Claims{
		OpenMetrics: cfg.EnableOpenMetrics, CreatedSamples: cfg.EnableOpenMetricsCreatedSamples,
	})
	fl := &gatewayFleet{cfg: cfg, telemetry: tb, logger: set.Logger, now: func() int64 { return clk.now().UnixNano() }}
	withSuffixes, utf8Allowed := cfg.naming()
	opts := convert.Options{
		Namespace:                         cfg.Namespace,
		ConstLabels:                       cfg.ConstLabels,
		ResourceLabels:                    convert.NewResourceLabels(cfg.resourceLabels()),
		KeepIdentifyingResourceAttributes: keepIdentifyingResourceAttributesGate.IsEnabled(),
		WithoutScopeInfo:                  cfg.WithoutScopeInfo,
		WithSuffixes:                      withSuffixes,
		UTF8Allowed:                       utf8Allowed,
	}
	if cfg.Fleet.Enabled {
		opts.Received = fl.received
	}
	if len(cfg.Aggregate) > 0 {
		if opts.Aggregator, err = newAggregator(cfg, st, clk, fl); err != nil {
			return nil, err
		}
	}
	conv := convert.New(opts, st, descs, func() int64 { return clk.now().UnixNano() })
	e := &agentPrometheusExporter{
		cfg:       cfg,
		set:       set,
		telemetry: tb,
		clock:     clk,
		store:     st,
		descs:     descs,
		conv:      conv,
		agg:       opts.Aggregator,
		scrapes:   scrape.New(scrape.StallTimeout(cfg.Scrape.Timeout), func() int64 { return clk.now().UnixNano() }),
		scrapers:  scrape.NewScrapers(),
		fleet:     fl,
	}
	e.encoder = &scrape.Encoder{
		Store:     st,
		Options:   exposition.Options{SendTimestamps: cfg.SendTimestamps, TargetInfoName: conv.TargetInfoName, CreatedSamples: cfg.EnableOpenMetricsCreatedSamples},
		Scrapers:  e.scrapers,
		GzipLevel: cfg.Scrape.GzipLevel,
	}
	e.retire = retire.New(retire.Settings{
		Store: st,
		Scrapes: struct {
			*scrape.Scrapers
			*scrape.Coalescer
		}{e.scrapers, e.scrapes},
		Expiration: cfg.MetricExpiration,
		Now:        func() int64 { return clk.now().UnixNano() },
		NewTicker:  clk.newTicker,
		Logger:     set.Logger,
		Removed:    e.recordRemoved,
	})
	fl.retire, fl.agg = e.retire, e.agg
	e.cardinality = newCardinalityView(cfg, st, descs, e.agg, clk.now)
	for o := range e.attrs.outcome {
		e.attrs.outcome[o] = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(attribute.String("outcome", scrape.Outcome(o).String())))}
	}
	for r := range e.attrs.reason {
		e.attrs.reason[r] = metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", convert.Reason(r).String())))
	}
	e.attrs.expired = metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", "expired")))
	e.attrs.ended = metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", "no_recorded_value")))
	e.attrs.departed = metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", "departed")))
	for f := range e.attrs.format {
		e.attrs.format[f] = []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(attribute.String("format", formatLabel(exposition.Format(f)))))}
	}
	return e, nil
}

// attributeSets are the attribute options of self-telemetry, prepared once
// so that recording does not allocate; a scrape's are whole option lists,
// since even a variadic list of one allocates when it is built at the call.
type attributeSets struct {
	reason   [convert.NumReasons]metric.AddOption
	expired  metric.AddOption
	ended    metric.AddOption
	departed metric.AddOption
	outcome  [scrape.NumOutcomes][]metric.AddOption
	format   [exposition.NumFormats][]metric.RecordOption
}

// registerGauges registers the callbacks of the observed gauges; shutdown
// unregisters them (telemetry.Shutdown), so that nothing outside the
// exporter refers to it once it has stopped.
func (e *agentPrometheusExporter) registerGauges() error {
	observe := func(f func() int64) metric.Int64Callback {
		return func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(f())
			return nil
		}
	}
	hits := func() int64 { h, _, _ := e.descs.Stats(); return h }
	misses := func() int64 { _, m, _ := e.descs.Stats(); return m }
	evictions := func() int64 { _, _, ev := e.descs.Stats(); return ev }
	return errors.Join(
		registerAggregateTelemetry(e.telemetry, e.agg, e.fleet),
		e.telemetry.RegisterExporterAgentprometheusSeriesActiveCallback(observe(e.store.SeriesCount)),
		e.telemetry.RegisterExporterAgentprometheusDescriptorsCachedCallback(observe(func() int64 { return int64(e.descs.Len()) })),
		e.telemetry.RegisterExporterAgentprometheusDescriptorCacheHitsCallback(observe(hits)),
		e.telemetry.RegisterExporterAgentprometheusDescriptorCacheMissesCallback(observe(misses)),
		e.telemetry.RegisterExporterAgentprometheusDescriptorCacheEvictionsCallback(observe(evictions)),
	)
}

// consumeMetrics stores the batch; it never fails, since what cannot be
// stored is dropped point by point and counted.
func (e *agentPrometheusExporter) consumeMetrics(ctx context.Context, md pmetric.Metrics) error {
	stats := e.conv.ConsumeMetrics(md)
	e.cardinality.recordChanges(&stats)
	if stats.Aggregated > 0 {
		e.telemetry.ExporterAgentprometheusPointsAggregated.Add(ctx, stats.Aggregated)
	}
	if stats.Created > 0 {
		e.telemetry.ExporterAgentprometheusSeriesCreated.Add(ctx, stats.Created)
	}
	if stats.Removed > 0 {
		e.telemetry.ExporterAgentprometheusSeriesRemoved.Add(ctx, stats.Removed, e.attrs.ended)
	}
	for r, n := range stats.Dropped {
		if n == 0 {
			continue
		}
		switch reason := convert.Reason(r); reason {
		case convert.RefusedMaxSeries, convert.RefusedMaxSeriesPerResource:
			e.telemetry.ExporterAgentprometheusSeriesRefused.Add(ctx, n, e.attrs.reason[r])
		default:
			e.telemetry.ExporterAgentprometheusPointsDropped.Add(ctx, n, e.attrs.reason[r])
		}
	}
	if len(stats.Conflicts) > 0 && e.conflictLog.allow(e.clock.now()) {
		e.set.Logger.Warn("Dropped points whose family conflicts with another (a different type, or a name another family writes); more conflicts are not logged for a while",
			zap.Strings("families", stats.Conflicts),
			zap.Int64("points", stats.Dropped[convert.TypeConflict]))
	}
	perResource, global := stats.Dropped[convert.RefusedMaxSeriesPerResource], stats.Dropped[convert.RefusedMaxSeries]
	if perResource+global > 0 && e.refusalLog.allow(e.clock.now()) {
		e.set.Logger.Warn("Refused new series over a limit; existing series keep updating, more refusals are counted but not logged for a while",
			zap.Int64("over_max_series_per_resource", perResource), zap.Int("max_series_per_resource", e.cfg.MaxSeriesPerResource),
			zap.Int64("over_max_series", global), zap.Int("max_series", e.cfg.MaxSeries))
	}
	return nil
}

// logLimiter lets a kind of warning through at most once per logInterval, so
// that a misbehaving agent cannot flood the log.
type logLimiter struct {
	mu   sync.Mutex
	last time.Time
}

func (l *logLimiter) allow(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.last.IsZero() && now.Sub(l.last) < logInterval {
		return false
	}
	l.last = now
	return true
}

func (e *agentPrometheusExporter) start(ctx context.Context, host component.Host) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.registerGauges(); err != nil {
		return err
	}
	e.retire.Start()
	if err := e.fleet.start(); err != nil {
		e.retire.Stop()
		return err
	}
	ln, err := e.cfg.Server.ToListener(ctx)
	if err != nil {
		e.retire.Stop()
		return errors.Join(err, e.fleet.stop())
	}
	e.handler = scrape.NewHandler(scrape.Settings{
		Coalescer:     e.scrapes,
		Encoder:       e.encoder,
		Scrapers:      e.scrapers,
		OpenMetrics:   e.cfg.EnableOpenMetrics,
		MaxConcurrent: e.cfg.Scrape.MaxConcurrent,
		Timeout:       e.cfg.Scrape.Timeout,
		WriteTimeout:  e.cfg.Server.WriteTimeout,
		Now:           func() int64 { return e.clock.now().UnixNano() },
		Logger:        e.set.Logger,
		Observer:      e,
	})
	mux := http.NewServeMux()
	mux.Handle(metricsPath, e.handler)
	e.cardinality.route(mux)
	srv, err := e.cfg.Server.ToServer(ctx, host.GetExtensions(), e.set.TelemetrySettings, mux)
	if err != nil {
		e.retire.Stop()
		return errors.Join(err, ln.Close(), e.fleet.stop())
	}
	e.server, e.serveDone = srv, make(chan struct{})
	go func(done chan struct{}) {
		defer close(done)
		if serr := srv.Serve(ln); serr != nil && !errors.Is(serr, http.ErrServerClosed) {
			componentstatus.ReportStatus(host, componentstatus.NewFatalErrorEvent(serr))
		}
	}(e.serveDone)

	if e.agg != nil {
		tick, stop := e.clock.newTicker(aggregateTick(e.cfg))
		e.stopAgg, e.aggDone = make(chan struct{}), make(chan struct{})
		go aggregateTicks(e.agg, e.clock, tick, stop, e.stopAgg, e.aggDone)
		warnAggregateAlone(e.cfg, e.set.Logger)
	}

	e.set.Logger.Info("Serving metrics", zap.String("endpoint", ln.Addr().String()), zap.String("path", metricsPath))
	if e.cardinality != nil {
		e.set.Logger.Info("Serving the cardinality view", zap.String("endpoint", ln.Addr().String()), zap.String("path", e.cfg.Cardinality.Path))
	}
	return nil
}

// shutdown stops the background work and the server and waits until the
// listener is closed, so the port can be bound again by the next Start, and
// unregisters the gauges' callbacks.
func (e *agentPrometheusExporter) shutdown(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	defer e.telemetry.Shutdown()
	if e.stopAgg != nil {
		close(e.stopAgg)
		<-e.aggDone
		e.stopAgg, e.aggDone = nil, nil
	}
	if e.server == nil {
		err := e.fleet.stop()
		e.retire.Stop()
		return err
	}
	e.retire.Drain(ctx, e.cfg.Scrape.DrainTimeout)
	fleetErr := e.fleet.stop()
	e.retire.Stop()
	// Scrapes in flight get a grace period to finish, then are cut off: a
	// stalled scraper must not hold the collector's shutdown.
	grace, cancel := context.WithTimeout(ctx, shutdownGrace)
	err := e.server.Shutdown(grace)
	cancel()
	e.handler.Close()
	if err != nil {
		err = e.server.Close()
		if ctx.Err() != nil {
			err = errors.Join(ctx.Err(), err)
		}
	}
	<-e.serveDone
	e.server, e.serveDone = nil, nil
	return errors.Join(err, fleetErr)
}

// Scraped counts a scrape by how it ended and records how long it took by
// format (scrape.Observer); a refused scrape took no time to record.
func (e *agentPrometheusExporter) Scraped(f scrape.Format, o scrape.Outcome, took time.Duration) {
	ctx := context.Background()
	e.telemetry.ExporterAgentprometheusScrapes.Add(ctx, 1, e.attrs.outcome[o]...)
	if o != scrape.OutcomeRefused {
		e.telemetry.ExporterAgentprometheusScrapeDuration.Record(ctx, took.Seconds(), e.attrs.format[f.Exposition]...)
	}
}

// formatLabel is a format's value of the format attribute: the protobuf
// text forms count as protobuf.
func formatLabel(f exposition.Format) string {
	switch f {
	case exposition.Text:
		return "text"
	case exposition.OpenMetrics:
		return "openmetrics"
	default:
		return "protobuf"
	}
}

// recordRemoved counts series that expired or departed, and shows the
// expired in the cardinality view.
func (e *agentPrometheusExporter) recordRemoved(reason retire.Reason, n int) {
	if n == 0 {
		return
	}
	switch reason {
	case retire.Expired:
		e.telemetry.ExporterAgentprometheusSeriesRemoved.Add(context.Background(), int64(n), e.attrs.expired)
		e.cardinality.recordExpired(n)
	case retire.Departed:
		e.telemetry.ExporterAgentprometheusSeriesRemoved.Add(context.Background(), int64(n), e.attrs.departed)
	}
}
