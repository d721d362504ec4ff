package agentprometheusexporter // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter"

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/common/expfmt"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/aggregate"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/cardinality"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/convert"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/descriptors"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/exposition"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/metadata"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/scrape"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
)

// metricsPath is where the exposition is served, as Prometheus expects by default.
const metricsPath = "/metrics"

// shutdownGrace is how long shutdown waits for scrapes in flight.
const shutdownGrace = 5 * time.Second

// logInterval bounds how often type conflicts and refused series are logged.
const logInterval = 10 * time.Second

// clock is the time source of expiry; tests replace it to expire series
// without waiting.
type clock struct {
	now       func() time.Time
	newTicker func(time.Duration) (<-chan time.Time, func())
}

var wallClock = clock{
	now: time.Now,
	newTicker: func(d time.Duration) (<-chan time.Time, func()) {
		t := time.NewTicker(d)
		return t.C, t.Stop
	},
}

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
	encoder  scrape.Encoder
	deltas   scrape.Deltas
	inflight atomic.Int64 // scrapes being served, for scrape::max_concurrent
	// noDeadlines warns once when the server's middleware hides the
	// connection's write deadline, without which no scrape can be cut off.
	noDeadlines sync.Once
	// serveCtx ends when shutdown begins, cutting off scrapes still running.
	serveCtx    context.Context
	cancelServe context.CancelFunc

	conflictLog logLimiter
	refusalLog  logLimiter

	// cardinality serves the cardinality view of changes and the store;
	// both are nil when it is not enabled.
	cardinality *cardinality.View
	changes     *cardinality.Changes

	// fleet is set while the exporter is a member of a fleet (fleet::enabled).
	fleet atomic.Pointer[fleetMember]

	// mu guards the server and the sweeper across Start and Shutdown.
	mu        sync.Mutex
	server    *http.Server
	serveDone chan struct{}
	stopSweep chan struct{}
	sweepDone chan struct{}
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
	st := store.New(cfg.MaxSeries, cfg.MaxSeriesPerResource, store.Claims{
		OpenMetrics: cfg.EnableOpenMetrics, CreatedSamples: cfg.EnableOpenMetricsCreatedSamples,
	})
	// e is allocated first: the converter's fleet hook is one of its methods.
	e := &agentPrometheusExporter{}
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
		opts.Received = e.received
	}
	if len(cfg.Aggregate) > 0 {
		if opts.Aggregator, err = e.newAggregator(cfg, st, clk); err != nil {
			return nil, err
		}
	}
	conv := convert.New(opts, st, descs, func() int64 { return clk.now().UnixNano() })
	*e = agentPrometheusExporter{
		cfg:       cfg,
		set:       set,
		telemetry: tb,
		clock:     clk,
		store:     st,
		descs:     descs,
		conv:      conv,
		agg:       opts.Aggregator,
		scrapes:   scrape.New(stallTimeout(cfg.Scrape.Timeout), func() int64 { return clk.now().UnixNano() }),
		scrapers:  scrape.NewScrapers(),
	}
	e.encoder = scrape.Encoder{
		Store:     st,
		Options:   exposition.Options{SendTimestamps: cfg.SendTimestamps, TargetInfoName: conv.TargetInfoName, CreatedSamples: cfg.EnableOpenMetricsCreatedSamples},
		Scrapers:  e.scrapers,
		GzipLevel: cfg.Scrape.GzipLevel,
	}
	e.deltas = scrape.Deltas{Store: st, Scrapers: e.scrapers, Coalescer: e.scrapes, Now: func() int64 { return clk.now().UnixNano() }, Logger: set.Logger}
	e.cardinality, e.changes = e.newCardinalityView()
	for o := range e.attrs.outcome {
		e.attrs.outcome[o] = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(attribute.String("outcome", outcomeNames[o])))}
	}
	for r := range e.attrs.reason {
		e.attrs.reason[r] = metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", convert.Reason(r).String())))
	}
	e.attrs.expired = metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", "expired")))
	e.attrs.ended = metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", "no_recorded_value")))
	e.attrs.departed = metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", "departed")))
	for f := range e.attrs.format {
		e.attrs.format[f] = []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(attribute.String("format", formatNames[f])))}
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
	outcome  [numOutcomes][]metric.AddOption
	format   [numFormats][]metric.RecordOption
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
		e.registerAggregateTelemetry(),
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
	e.recordChanges(&stats)
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

// sweepInterval is how often expired series are removed: often enough that
// a series outlives metric_expiration by at most a quarter of it (down to
// an expiration of 400 ms), and at most a minute. A longer floor let the
// series of agents that left pile up over more than one expiration when
// the expiration is short (BenchmarkChurn's heap growth).
func sweepInterval(expiration time.Duration) time.Duration {
	return min(max(expiration/4, 100*time.Millisecond), time.Minute)
}

// sweep removes expired series in the background, whether or not anyone scrapes.
func (e *agentPrometheusExporter) sweep(tick <-chan time.Time, stop func(), quit, done chan struct{}) {
	defer close(done)
	defer stop()
	for {
		select {
		case <-quit:
			return
		case <-tick:
			cutoff := e.clock.now().Add(-e.cfg.MetricExpiration).UnixNano()
			if n := e.store.Sweep(cutoff); n > 0 {
				e.telemetry.ExporterAgentprometheusSeriesRemoved.Add(context.Background(), int64(n), e.attrs.expired)
				e.recordExpired(n)
			}
		}
	}
}

func (e *agentPrometheusExporter) start(ctx context.Context, host component.Host) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.registerGauges(); err != nil {
		return err
	}
	if err := e.startFleet(); err != nil {
		return err
	}
	ln, err := e.cfg.Server.ToListener(ctx)
	if err != nil {
		return errors.Join(err, e.stopFleet())
	}
	e.serveCtx, e.cancelServe = context.WithCancel(context.Background())
	mux := http.NewServeMux()
	mux.HandleFunc(metricsPath, e.serveMetrics)
	e.routeCardinality(mux)
	srv, err := e.cfg.Server.ToServer(ctx, host.GetExtensions(), e.set.TelemetrySettings, mux)
	if err != nil {
		return errors.Join(err, ln.Close(), e.stopFleet())
	}
	e.server, e.serveDone = srv, make(chan struct{})
	go func(done chan struct{}) {
		defer close(done)
		if serr := srv.Serve(ln); serr != nil && !errors.Is(serr, http.ErrServerClosed) {
			componentstatus.ReportStatus(host, componentstatus.NewFatalErrorEvent(serr))
		}
	}(e.serveDone)

	tick, stop := e.clock.newTicker(sweepInterval(e.cfg.MetricExpiration))
	e.stopSweep, e.sweepDone = make(chan struct{}), make(chan struct{})
	go e.sweep(tick, stop, e.stopSweep, e.sweepDone)
	if e.agg != nil {
		tick, stop := e.clock.newTicker(e.aggregateTick())
		e.aggDone = make(chan struct{})
		go e.aggregateTicks(tick, stop, e.stopSweep, e.aggDone)
		e.warnAggregateAlone()
	}

	e.set.Logger.Info("Serving metrics", zap.String("endpoint", ln.Addr().String()), zap.String("path", metricsPath))
	if e.cardinality != nil {
		e.set.Logger.Info("Serving the cardinality view", zap.String("endpoint", ln.Addr().String()), zap.String("path", e.cfg.Cardinality.Path))
	}
	return nil
}

// shutdown stops the sweeper and the server and waits until the listener is
// closed, so the port can be bound again by the next Start, and unregisters
// the gauges' callbacks.
func (e *agentPrometheusExporter) shutdown(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	defer e.telemetry.Shutdown()
	if e.stopSweep != nil {
		close(e.stopSweep)
		<-e.sweepDone
		if e.aggDone != nil {
			<-e.aggDone
		}
		e.stopSweep, e.sweepDone, e.aggDone = nil, nil, nil
	}
	if e.server == nil {
		return e.stopFleet()
	}
	e.deltas.Drain(ctx, e.cfg.Scrape.DrainTimeout)
	fleetErr := e.stopFleet()
	// Scrapes in flight get a grace period to finish, then are cut off: a
	// stalled scraper must not hold the collector's shutdown.
	grace, cancel := context.WithTimeout(ctx, shutdownGrace)
	err := e.server.Shutdown(grace)
	cancel()
	e.cancelServe()
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

// scrapeFormat labels a negotiated format in self-telemetry.
type scrapeFormat int

const (
	formatText scrapeFormat = iota
	formatOpenMetrics
	formatProtobuf
	numFormats
)

var formatNames = [numFormats]string{"text", "openmetrics", "protobuf"}

func formatOf(contentType string) scrapeFormat {
	switch {
	case strings.HasPrefix(contentType, "application/openmetrics-text"):
		return formatOpenMetrics
	case strings.HasPrefix(contentType, "application/vnd.google.protobuf"):
		return formatProtobuf
	default:
		return formatText
	}
}

// recordScrapeDuration records how long a scrape in format took, with the
// attribute set prepared for its format.
func (e *agentPrometheusExporter) recordScrapeDuration(ctx context.Context, format expfmt.Format, took time.Duration) {
	e.telemetry.ExporterAgentprometheusScrapeDuration.Record(ctx, took.Seconds(), e.attrs.format[formatOf(string(format))]...)
}
