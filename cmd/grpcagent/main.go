// Command grpcagent is a demo agent for statsgate: a real grpc-go server and
// client in one process, instrumented with BOTH otelgrpc and grpc-go's own
// OpenTelemetry plugin (so every call is reported twice, as in a service
// midway through a migration), exporting through the OpenTelemetry Go SDK's
// OTLP/gRPC exporter to a gateway.
//
//	grpcagent --gateway localhost:4317 --calls ok=20,not_found=5,unimplemented=3,slow=2 --agents 2
//
// Each simulated agent has its own resource (service.instance.id), server,
// client and exporter. When it exits, the agent writes a JSON manifest of the
// calls it made (by method and status, as its server and its client saw them).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/stats/opentelemetry"
	"google.golang.org/grpc/status"

	"github.com/statsgate/statsgate/internal/agentmanifest"
)

type config struct {
	gateway        string
	mix            []step
	agents         int
	rounds         int
	interval       time.Duration
	slow           time.Duration
	exportInterval time.Duration
	callTimeout    time.Duration
	flushTimeout   time.Duration
	service        string
	instancePrefix string
	manifest       string
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("grpcagent: ")
	cfg, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		log.Fatal(err)
	}
	// Export errors are reported here as well as by Shutdown at the end.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Printf("otel: %v", err) }))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	m, err := run(ctx, cfg)
	if werr := agentmanifest.Write(cfg.manifest, m); werr != nil {
		err = errors.Join(err, werr)
	}
	if err != nil {
		log.Fatal(err)
	}
}

func parseFlags(args []string) (config, error) {
	fs := flag.NewFlagSet("grpcagent", flag.ContinueOnError)
	host, _ := os.Hostname()
	var cfg config
	calls := fs.String("calls", "ok=20,not_found=5,unimplemented=3,slow=2",
		"calls per round, as kind=count pairs; kinds: "+describeKinds())
	fs.StringVar(&cfg.gateway, "gateway", "localhost:4317", "OTLP/gRPC endpoint of the gateway (plain text)")
	fs.IntVar(&cfg.agents, "agents", 1, "simulated agents, each with its own service.instance.id, server, client and exporter")
	fs.IntVar(&cfg.rounds, "rounds", 1, "rounds of --calls per agent; 0 runs until interrupted")
	fs.DurationVar(&cfg.interval, "interval", time.Second, "pause between rounds")
	fs.DurationVar(&cfg.slow, "slow", 200*time.Millisecond, "how long the slow method takes")
	fs.DurationVar(&cfg.exportInterval, "export-interval", 2*time.Second, "SDK metric export interval")
	fs.DurationVar(&cfg.callTimeout, "call-timeout", 10*time.Second, "deadline of each call")
	fs.DurationVar(&cfg.flushTimeout, "flush-timeout", 10*time.Second, "how long the last export on exit may take")
	fs.StringVar(&cfg.service, "service", "grpcagent", "service.name of every simulated agent")
	fs.StringVar(&cfg.instancePrefix, "instance-prefix", fmt.Sprintf("%s-%d", host, os.Getpid()),
		"service.instance.id prefix; agent i (from 1) is <prefix>-<i>")
	fs.StringVar(&cfg.manifest, "manifest", "-", `file the JSON manifest of the calls made is written to on exit ("-": stdout)`)
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	var err error
	if cfg.mix, err = parseMix(*calls); err != nil {
		return cfg, fmt.Errorf("--calls: %w", err)
	}
	switch {
	case cfg.agents < 1:
		return cfg, errors.New("--agents must be at least 1")
	case cfg.rounds < 0:
		return cfg, errors.New("--rounds must not be negative")
	case cfg.exportInterval <= 0:
		return cfg, errors.New("--export-interval must be positive")
	case cfg.slow >= cfg.callTimeout:
		return cfg, errors.New("--slow must be shorter than --call-timeout")
	}
	return cfg, nil
}

// run starts the agents and waits for all of them to finish their rounds (or
// for ctx to end) and to flush their metrics.
func run(ctx context.Context, cfg config) (agentmanifest.GRPC, error) {
	m := agentmanifest.GRPC{Service: cfg.service, Gateway: cfg.gateway, SlowMethod: slowMethod(), SlowSeconds: cfg.slow.Seconds(), Agents: make([]agentmanifest.GRPCAgent, cfg.agents)}
	errs := make([]error, cfg.agents)
	var wg sync.WaitGroup
	for i := range cfg.agents {
		wg.Go(func() {
			id := fmt.Sprintf("%s-%d", cfg.instancePrefix, i+1)
			m.Agents[i], errs[i] = runAgent(ctx, cfg, id)
			if errs[i] != nil {
				errs[i] = fmt.Errorf("agent %s: %w", id, errs[i])
			}
		})
	}
	wg.Wait()
	return m, errors.Join(errs...)
}

func runAgent(ctx context.Context, cfg config, instanceID string) (agentmanifest.GRPCAgent, error) {
	am := agentmanifest.GRPCAgent{InstanceID: instanceID}
	res, err := resource.New(ctx, resource.WithTelemetrySDK(), resource.WithAttributes(
		attribute.String("service.name", cfg.service),
		attribute.String("service.instance.id", instanceID),
	))
	if err != nil {
		return am, err
	}
	exp, err := otlpmetricgrpc.New(ctx, otlpmetricgrpc.WithEndpoint(cfg.gateway), otlpmetricgrpc.WithInsecure())
	if err != nil {
		return am, err
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithResource(res),
		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(cfg.exportInterval))))

	// Both handlers on both sides, on one MeterProvider: each call is
	// reported as rpc.*.call.duration and as grpc.*.call.duration.
	plugin := opentelemetry.Options{MetricsOptions: opentelemetry.MetricsOptions{MeterProvider: mp, Metrics: opentelemetry.DefaultMetrics()}}
	calls := newTally()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return am, err
	}
	srv := grpc.NewServer(
		grpc.StatsHandler(otelgrpc.NewServerHandler(otelgrpc.WithMeterProvider(mp))),
		opentelemetry.ServerOption(plugin),
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			resp, err := handler(ctx, req)
			calls.server(strings.TrimPrefix(info.FullMethod, "/"), status.Code(err))
			return resp, err
		}),
		// GracefulStop then also waits for the handlers' stats to be
		// recorded, which happens after the client already has its answer.
		grpc.WaitForHandlers(true),
	)
	testgrpc.RegisterTestServiceServer(srv, service{slow: cfg.slow})
	go func() { _ = srv.Serve(ln) }()
	conn, err := grpc.NewClient(ln.Addr().String(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithStatsHandler(otelgrpc.NewClientHandler(otelgrpc.WithMeterProvider(mp))),
		opentelemetry.DialOption(plugin))
	if err != nil {
		srv.Stop()
		return am, err
	}
	client := testgrpc.NewTestServiceClient(conn)
	log.Printf("agent %s: serving on %s, exporting to %s every %s", instanceID, ln.Addr(), cfg.gateway, cfg.exportInterval)

	var unexpected int
rounds:
	for round := 0; cfg.rounds == 0 || round < cfg.rounds; round++ {
		if round > 0 {
			select {
			case <-ctx.Done():
				break rounds
			case <-time.After(cfg.interval):
			}
		}
		for _, s := range cfg.mix {
			for range s.count {
				if ctx.Err() != nil {
					break rounds
				}
				// Not derived from ctx: an interrupt stops the agent between
				// calls rather than cancelling one.
				callCtx, cancel := context.WithTimeout(context.Background(), cfg.callTimeout)
				start := time.Now()
				err := call(callCtx, client, s.kind)
				took := time.Since(start)
				cancel()
				code := status.Code(err)
				calls.client(s.kind.method, code, took)
				if code != s.kind.status {
					unexpected++
					if unexpected <= 10 {
						log.Printf("agent %s: %s answered %s, want %s: %v", instanceID, s.kind.method, statusName(code), statusName(s.kind.status), err)
					}
				}
			}
		}
		am.Rounds++
	}

	_ = conn.Close()
	srv.GracefulStop()
	am.Calls = calls.sorted()
	// Shutdown flushes the last cumulative state and reports whether the
	// gateway accepted it.
	flushCtx, cancel := context.WithTimeout(context.Background(), cfg.flushTimeout)
	defer cancel()
	if err := mp.Shutdown(flushCtx); err != nil {
		return am, fmt.Errorf("flushing metrics to %s: %w", cfg.gateway, err)
	}
	log.Printf("agent %s: %d rounds, metrics flushed", instanceID, am.Rounds)
	if unexpected > 0 {
		return am, fmt.Errorf("%d calls answered with another status than planned", unexpected)
	}
	return am, nil
}
