// Command grpc_prometheus captures the metrics of go-grpc-middleware's
// Prometheus provider (server and client metrics, handling-time histograms
// on) the way a gateway receives them from an agent collector: the
// exposition is served on loopback and scraped by the real contrib
// prometheus receiver, whose pdata output is the fixture.
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/open-telemetry/opentelemetry-collector-contrib/receiver/prometheusreceiver"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/statsgate/statsgate/processor/grpcstatsprocessor/testdata/fixturegen/common"
)

const (
	name           = "grpc_prometheus"
	receiverModule = "github.com/open-telemetry/opentelemetry-collector-contrib/receiver/prometheusreceiver"
	scrapeInterval = 250 * time.Millisecond
	// scrapeIndex is the scrape kept as the fixture: the second one, so the
	// receiver has already seen every series once, as in steady state.
	scrapeIndex = 1
)

func main() {
	common.Main(common.Variant{
		Name: name,
		Description: "go-grpc-middleware providers/prometheus server and client metrics with handling-time histograms, " +
			"InitializeMetrics on the server, served with promhttp on loopback and scraped by the contrib prometheus receiver",
		Libraries: []string{
			"github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus",
			"github.com/prometheus/client_golang",
			receiverModule,
			"github.com/prometheus/prometheus",
		},
		SupportLibraries: []string{
			"google.golang.org/grpc",
			"go.opentelemetry.io/collector/pdata",
		},
		ExpectMetrics: []string{
			"grpc_server_started_total", "grpc_server_handled_total",
			"grpc_server_msg_received_total", "grpc_server_msg_sent_total",
			"grpc_server_handling_seconds",
			"grpc_client_started_total", "grpc_client_handled_total",
			"grpc_client_msg_received_total", "grpc_client_msg_sent_total",
			"grpc_client_handling_seconds",
			"up",
		},
		Setup: setup,
	})
}

func setup(_ context.Context, _ string) (*common.Instrumentation, error) {
	srvMetrics := grpcprom.NewServerMetrics(grpcprom.WithServerHandlingTimeHistogram())
	clMetrics := grpcprom.NewClientMetrics(grpcprom.WithClientHandlingTimeHistogram())
	reg := prometheus.NewRegistry()
	if err := reg.Register(srvMetrics); err != nil {
		return nil, err
	}
	if err := reg.Register(clMetrics); err != nil {
		return nil, err
	}

	return &common.Instrumentation{
		ServerOptions: []grpc.ServerOption{
			grpc.ChainUnaryInterceptor(srvMetrics.UnaryServerInterceptor()),
			grpc.ChainStreamInterceptor(srvMetrics.StreamServerInterceptor()),
		},
		DialOptions: []grpc.DialOption{
			grpc.WithChainUnaryInterceptor(clMetrics.UnaryClientInterceptor()),
			grpc.WithChainStreamInterceptor(clMetrics.StreamClientInterceptor()),
		},
		Registered: func(s *grpc.Server) { srvMetrics.InitializeMetrics(s) },
		Flush: func(ctx context.Context) (*pmetric.Metrics, error) {
			return scrape(ctx, reg)
		},
	}, nil
}

// scrape serves reg on loopback, runs the prometheus receiver against it
// until scrapeIndex+1 scrapes arrived, and returns scrape scrapeIndex.
func scrape(ctx context.Context, reg *prometheus.Registry) (*pmetric.Metrics, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = hs.Serve(lis) }()
	defer func() { _ = hs.Close() }()

	factory := prometheusreceiver.NewFactory()
	cfg := factory.CreateDefaultConfig().(*prometheusreceiver.Config)
	conf := confmap.NewFromStringMap(map[string]any{
		"config": map[string]any{
			"scrape_configs": []any{map[string]any{
				"job_name":        "grpc-service",
				"scrape_interval": scrapeInterval.String(),
				"scrape_timeout":  scrapeInterval.String(),
				"static_configs":  []any{map[string]any{"targets": []any{lis.Addr().String()}}},
			}},
		},
	})
	if err := conf.Unmarshal(cfg); err != nil {
		return nil, fmt.Errorf("receiver config: %w", err)
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("receiver config: %w", err)
	}
	if err := cfg.PrometheusConfig.Validate(); err != nil {
		return nil, fmt.Errorf("receiver config: %w", err)
	}

	version, err := common.ModuleVersion(receiverModule)
	if err != nil {
		return nil, err
	}
	set := receivertest.NewNopSettings(factory.Type())
	set.ID = component.NewID(factory.Type())
	set.BuildInfo = component.BuildInfo{Command: "otelcol-contrib", Description: "agent collector", Version: strings.TrimPrefix(version, "v")}
	logger, err := zap.NewProduction(zap.IncreaseLevel(zap.WarnLevel))
	if err != nil {
		return nil, err
	}
	set.Logger = logger

	sink := new(consumertest.MetricsSink)
	rcv, err := factory.CreateMetrics(ctx, set, cfg, sink)
	if err != nil {
		return nil, fmt.Errorf("create receiver: %w", err)
	}
	if err := rcv.Start(ctx, componenttest.NewNopHost()); err != nil {
		return nil, fmt.Errorf("start receiver: %w", err)
	}
	waitErr := waitForScrapes(ctx, sink, scrapeIndex+1)
	if err := shutdown(rcv); err != nil {
		return nil, err
	}
	if waitErr != nil {
		return nil, waitErr
	}
	out := pmetric.NewMetrics()
	sink.AllMetrics()[scrapeIndex].CopyTo(out)
	return &out, nil
}

func waitForScrapes(ctx context.Context, sink *consumertest.MetricsSink, n int) error {
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for len(sink.AllMetrics()) < n {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return errors.New("timed out waiting for scrapes")
		case <-tick.C:
		}
	}
	return nil
}

func shutdown(rcv receiver.Metrics) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rcv.Shutdown(ctx); err != nil {
		return fmt.Errorf("shutdown receiver: %w", err)
	}
	return nil
}
