// Command otlpagent is a test agent for statsgate fleets: it records a
// counter and a histogram through the OpenTelemetry Go SDK and exports them
// over OTLP (gRPC or HTTP, cumulative or delta temporality) to a gateway, and
// when it exits it writes a manifest of what it counted and what the gateway
// acknowledged, so that a test can compare what Prometheus stored with it.
//
//	otlpagent --endpoint localhost:4317 --protocol grpc --temporality delta --agents 3 --manifest out.json
//
// Values are exact in binary floating point (multiples of 1/256), so sums
// compare exactly whatever order they are added in.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/statsgate/statsgate/internal/agentmanifest"
)

// The instruments every agent records, and the histogram's bounds.
const (
	counterName   = "fleet.operations"
	histogramName = "fleet.duration"
	// floodName is the counter of --flood, with an attribute that should
	// never have been one.
	floodName = "fleet.requests"
	floodKey  = "request.id"
)

var (
	bounds = []float64{0.05, 0.1, 0.25, 0.5, 0.75, 1}
	kinds  = []string{"read", "write", "delete"}
)

type config struct {
	endpoint       string
	protocol       string
	temporality    string
	agents         int
	service        string
	instancePrefix string
	exportInterval time.Duration
	recordInterval time.Duration
	duration       time.Duration
	replicaHeader  string
	manifest       string
	seed           uint64
	flood          int
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("otlpagent: ")
	cfg, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		log.Fatal(err)
	}
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Printf("otel: %v", err) }))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if cfg.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.duration)
		defer cancel()
	}
	m, err := run(ctx, cfg)
	if werr := agentmanifest.Write(cfg.manifest, m); werr != nil {
		err = errors.Join(err, werr)
	}
	if err != nil {
		log.Fatal(err)
	}
}

func parseFlags(args []string) (config, error) {
	fs := flag.NewFlagSet("otlpagent", flag.ContinueOnError)
	host, _ := os.Hostname()
	var cfg config
	fs.StringVar(&cfg.endpoint, "endpoint", "localhost:4317", "OTLP endpoint of the gateway, host:port (plain text)")
	fs.StringVar(&cfg.protocol, "protocol", "grpc", "OTLP transport: grpc or http")
	fs.StringVar(&cfg.temporality, "temporality", "cumulative", "aggregation temporality: cumulative or delta")
	fs.IntVar(&cfg.agents, "agents", 1, "simulated agents, each with its own service.instance.id and exporter")
	fs.StringVar(&cfg.service, "service", "otlpagent", "service.name of every simulated agent")
	fs.StringVar(&cfg.instancePrefix, "instance-prefix", fmt.Sprintf("%s-%d", host, os.Getpid()),
		"service.instance.id prefix; agent i (from 1) is <prefix>-<i>")
	fs.DurationVar(&cfg.exportInterval, "export-interval", time.Second, "SDK metric export interval")
	fs.DurationVar(&cfg.recordInterval, "record-interval", 50*time.Millisecond, "pause between two rounds of measurements")
	fs.DurationVar(&cfg.duration, "duration", 0, "how long to record; 0 records until interrupted")
	fs.StringVar(&cfg.replicaHeader, "replica-header", "", "with --protocol http, a response header naming the replica that answered, kept per export in the manifest")
	fs.StringVar(&cfg.manifest, "manifest", "-", `file the JSON manifest is written to on exit ("-": stdout)`)
	fs.Uint64Var(&cfg.seed, "seed", 1, "seed of the measurements")
	fs.IntVar(&cfg.flood, "flood", 0, "also count "+floodName+" with a "+floodKey+" attribute of this many distinct values, "+
		"each agent a series per value (a flooding agent; the SDK's cardinality limit is raised to match); not in the manifest")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	switch {
	case fs.NArg() > 0:
		return cfg, fmt.Errorf("unexpected arguments: %q", fs.Args())
	case cfg.protocol != "grpc" && cfg.protocol != "http":
		return cfg, fmt.Errorf("--protocol: %q is neither grpc nor http", cfg.protocol)
	case cfg.temporality != "cumulative" && cfg.temporality != "delta":
		return cfg, fmt.Errorf("--temporality: %q is neither cumulative nor delta", cfg.temporality)
	case cfg.agents < 1:
		return cfg, errors.New("--agents must be at least 1")
	case cfg.exportInterval <= 0 || cfg.recordInterval <= 0:
		return cfg, errors.New("--export-interval and --record-interval must be positive")
	case cfg.flood < 0:
		return cfg, errors.New("--flood must not be negative")
	}
	return cfg, nil
}

// run starts the agents and waits for all of them to stop recording and to
// flush their last export.
func run(ctx context.Context, cfg config) (agentmanifest.OTLP, error) {
	m := agentmanifest.OTLP{Service: cfg.service, Protocol: cfg.protocol, Temporality: cfg.temporality,
		Bounds: bounds, Agents: make([]agentmanifest.OTLPAgent, cfg.agents)}
	errs := make([]error, cfg.agents)
	var wg sync.WaitGroup
	for i := range cfg.agents {
		wg.Go(func() {
			id := fmt.Sprintf("%s-%d", cfg.instancePrefix, i+1)
			m.Agents[i], errs[i] = runAgent(ctx, cfg, id, cfg.seed+uint64(i))
			if errs[i] != nil {
				errs[i] = fmt.Errorf("agent %s: %w", id, errs[i])
			}
		})
	}
	wg.Wait()
	return m, errors.Join(errs...)
}

func runAgent(ctx context.Context, cfg config, instanceID string, seed uint64) (agentmanifest.OTLPAgent, error) {
	res, err := resource.New(ctx, resource.WithTelemetrySDK(), resource.WithAttributes(
		attribute.String("service.name", cfg.service),
		attribute.String("service.instance.id", instanceID),
	))
	if err != nil {
		return agentmanifest.OTLPAgent{InstanceID: instanceID}, err
	}
	exp, err := newExporter(ctx, cfg)
	if err != nil {
		return agentmanifest.OTLPAgent{InstanceID: instanceID}, err
	}
	rec := newRecorder(exp, cfg.temporality == "delta")
	opts := []sdkmetric.Option{sdkmetric.WithResource(res),
		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(rec, sdkmetric.WithInterval(cfg.exportInterval))),
		sdkmetric.WithView(sdkmetric.NewView(sdkmetric.Instrument{Name: histogramName},
			sdkmetric.Stream{Aggregation: sdkmetric.AggregationExplicitBucketHistogram{Boundaries: bounds}}))}
	if cfg.flood > 0 {
		// Past the SDK's limit (2000 per instrument) it would fold the
		// rest into one overflow series before the gateway sees them.
		opts = append(opts, sdkmetric.WithCardinalityLimit(cfg.flood+len(kinds)+1))
	}
	mp := sdkmetric.NewMeterProvider(opts...)
	meter := mp.Meter("statsgate/otlpagent")
	counter, err := meter.Int64Counter(counterName, metric.WithUnit("{operation}"), metric.WithDescription("Operations done."))
	if err != nil {
		return agentmanifest.OTLPAgent{InstanceID: instanceID}, err
	}
	histogram, err := meter.Float64Histogram(histogramName, metric.WithUnit("s"), metric.WithDescription("Time an operation took."))
	if err != nil {
		return agentmanifest.OTLPAgent{InstanceID: instanceID}, err
	}
	log.Printf("agent %s: exporting %s over %s to %s every %s", instanceID, cfg.temporality, cfg.protocol, cfg.endpoint, cfg.exportInterval)

	flood, err := newFlood(meter, cfg.flood)
	if err != nil {
		return agentmanifest.OTLPAgent{InstanceID: instanceID}, err
	}
	counted := newCounts()
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	ticker := time.NewTicker(cfg.recordInterval)
	defer ticker.Stop()
record:
	for {
		select {
		case <-ctx.Done():
			break record
		case <-ticker.C:
		}
		for _, k := range kinds {
			attrs := metric.WithAttributes(attribute.String("kind", k))
			n := int64(1 + rng.IntN(5))
			counter.Add(context.Background(), n, attrs)
			counted.add(k, n)
			// k/256 seconds: exact in binary, so every sum is exact.
			v := float64(1+rng.IntN(320)) / 256
			histogram.Record(context.Background(), v, attrs)
			counted.observe(k, v)
		}
		flood.round()
	}

	// Shutdown exports what was recorded since the last export.
	flushCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	flushErr := mp.Shutdown(flushCtx)
	am := rec.manifest(instanceID, counted)
	if flushErr != nil {
		return am, fmt.Errorf("last export to %s: %w", cfg.endpoint, flushErr)
	}
	log.Printf("agent %s: %d exports acknowledged, %d failed", instanceID, len(am.Exports), len(am.Failed))
	return am, nil
}

// floodRounds is over how many rounds of measurements --flood brings in
// all its values: a flooding agent's series arrive within a second or so.
const floodRounds = 20

// flood counts requests by an identifier, the mistake that floods a
// gateway: each value of the attribute is a series of its own.
type flood struct {
	counter metric.Int64Counter
	values  int
	next    int
}

func newFlood(meter metric.Meter, values int) (*flood, error) {
	if values == 0 {
		return &flood{}, nil
	}
	c, err := meter.Int64Counter(floodName, metric.WithUnit("{request}"), metric.WithDescription("Requests, by their identifier."))
	return &flood{counter: c, values: values}, err
}

// round counts the next values/floodRounds identifiers, round robin.
func (f *flood) round() {
	for range max(1, f.values/floodRounds) {
		if f.values == 0 {
			return
		}
		f.counter.Add(context.Background(), 1, metric.WithAttributes(attribute.String(floodKey, fmt.Sprint("req-", f.next))))
		f.next = (f.next + 1) % f.values
	}
}
