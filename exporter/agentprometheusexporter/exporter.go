package agentprometheusexporter // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter"

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/metadata"
)

// metricsPath is where the exposition is served, as Prometheus expects by default.
const metricsPath = "/metrics"

type agentPrometheusExporter struct {
	cfg       *Config
	set       exporter.Settings
	telemetry *metadata.TelemetryBuilder
	gatherer  prometheus.Gatherer

	// mu guards server and serveDone across Start and Shutdown.
	mu        sync.Mutex
	server    *http.Server
	serveDone chan struct{}
}

func newAgentPrometheusExporter(set exporter.Settings, cfg *Config) (*agentPrometheusExporter, error) {
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	return &agentPrometheusExporter{
		cfg:       cfg,
		set:       set,
		telemetry: tb,
		gatherer:  prometheus.NewRegistry(),
	}, nil
}

// handler serves the exposition with promhttp's content negotiation and
// compression, and records how long each scrape took.
func (e *agentPrometheusExporter) handler() http.Handler {
	metrics := promhttp.HandlerFor(e.gatherer, promhttp.HandlerOpts{
		ErrorLog: zap.NewStdLog(e.set.Logger),
	})
	mux := http.NewServeMux()
	mux.HandleFunc(metricsPath, func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		metrics.ServeHTTP(w, r)
		e.telemetry.ExporterAgentprometheusScrapeDuration.Record(r.Context(), time.Since(start).Seconds())
	})
	return mux
}

func (e *agentPrometheusExporter) start(ctx context.Context, host component.Host) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	ln, err := e.cfg.Server.ToListener(ctx)
	if err != nil {
		return err
	}
	srv, err := e.cfg.Server.ToServer(ctx, host.GetExtensions(), e.set.TelemetrySettings, e.handler())
	if err != nil {
		_ = ln.Close()
		return err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if serr := srv.Serve(ln); serr != nil && !errors.Is(serr, http.ErrServerClosed) {
			componentstatus.ReportStatus(host, componentstatus.NewFatalErrorEvent(serr))
		}
	}()
	e.server, e.serveDone = srv, done
	e.set.Logger.Info("Serving metrics", zap.String("endpoint", ln.Addr().String()), zap.String("path", metricsPath))
	return nil
}

// shutdown stops the server and waits until its listener is closed, so the
// port can be bound again by the next Start.
func (e *agentPrometheusExporter) shutdown(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	defer e.telemetry.Shutdown()
	if e.server == nil {
		return nil
	}
	err := e.server.Shutdown(ctx)
	if err != nil {
		// The context ran out with scrapes still in flight: cut them off.
		err = errors.Join(err, e.server.Close())
	}
	<-e.serveDone
	e.server, e.serveDone = nil, nil
	return err
}

func (e *agentPrometheusExporter) consumeMetrics(context.Context, pmetric.Metrics) error {
	return nil
}
