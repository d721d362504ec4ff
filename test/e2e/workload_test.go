package e2e

import (
	"context"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/exemplar"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// The metrics of the workload, by their OpenTelemetry names: dotted
// (semantic-convention style) and, for the counter and one attribute, not
// ASCII, so that a UTF-8 translation strategy has something to keep.
const (
	ordersName       = "café.orders"                  // counter, unit {order}
	ordersInstrument = "cafe.orders"                  // the counter's instrument, renamed to ordersName by a view
	requestsName     = "http.server.request.duration" // explicit-bucket histogram, unit s
	queriesName      = "db.client.operation.duration" // base-2 exponential histogram, unit s

	tableKey  = "café.table"
	methodKey = "http.request.method"
)

// requestBounds are the semantic conventions' bounds for HTTP durations.
var requestBounds = []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}

// The measurements. Durations are multiples of 1/256 s, so that every sum
// is exact in binary floating point whatever order it is added in.
var (
	orders = map[string][]int64{"terrasse": {3, 1, 4}, "salle": {1, 5}}
	// per method, in 1/256 s
	requests = map[string][]int{"GET": {1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377}, "POST": {30, 60, 600, 3000}}
	queries  = map[string][]int{"GET": {1, 3, 7, 20, 50, 100, 130, 300, 700, 1500}}
)

// workload is one agent's measurements, recorded with the OpenTelemetry Go
// SDK and exported once over OTLP/gRPC; Sent is that export, as the SDK
// built it.
type workload struct {
	Service, Instance string
	Sent              metricdata.ResourceMetrics
}

// sendWorkload records the measurements as service, collects them once and
// exports them to the gateway's OTLP/gRPC endpoint.
//
// Every duration is recorded in a sampled span of its own and one increment
// per counter series is, so that the SDK's default exemplar filter
// (trace-based) offers them to its reservoirs: one exemplar per bucket of
// the explicit-bucket histogram, one per measurement of the exponential one
// (up to 20), and one per counter series.
func sendWorkload(t *testing.T, otlpEndpoint, service string) workload {
	t.Helper()
	ctx := context.Background()
	w := workload{Service: service, Instance: service + "-" + strings.ToLower(rand.Text()[:8])}
	res, err := resource.New(ctx, resource.WithAttributes(
		attribute.String("service.name", w.Service),
		attribute.String("service.instance.id", w.Instance),
	))
	require.NoError(t, err)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithResource(res), sdkmetric.WithReader(reader),
		sdkmetric.WithExemplarFilter(exemplar.TraceBasedFilter),
		sdkmetric.WithView(sdkmetric.NewView(sdkmetric.Instrument{Name: queriesName},
			sdkmetric.Stream{Aggregation: sdkmetric.AggregationBase2ExponentialHistogram{MaxSize: 160, MaxScale: 20}}),
			// The SDK takes only ASCII instrument names, a view renames to anything.
			sdkmetric.NewView(sdkmetric.Instrument{Name: ordersInstrument}, sdkmetric.Stream{Name: ordersName})))
	defer func() { require.NoError(t, mp.Shutdown(ctx)) }()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	defer func() { require.NoError(t, tp.Shutdown(ctx)) }()
	tracer := tp.Tracer("statsgate/e2e")

	meter := mp.Meter("statsgate/e2e", metric.WithInstrumentationVersion("1.0.0"))
	counter, err := meter.Int64Counter(ordersInstrument, metric.WithUnit("{order}"), metric.WithDescription("Orders taken."))
	require.NoError(t, err)
	requestsHist, err := meter.Float64Histogram(requestsName, metric.WithUnit("s"),
		metric.WithDescription("Duration of HTTP server requests."), metric.WithExplicitBucketBoundaries(requestBounds...))
	require.NoError(t, err)
	queriesHist, err := meter.Float64Histogram(queriesName, metric.WithUnit("s"), metric.WithDescription("Duration of database operations."))
	require.NoError(t, err)

	inSpan := func(name string, f func(context.Context)) {
		sctx, span := tracer.Start(ctx, name)
		defer span.End()
		require.True(t, span.SpanContext().IsSampled())
		f(sctx)
	}
	for table, adds := range orders {
		attrs := metric.WithAttributes(attribute.String(tableKey, table))
		for i, n := range adds {
			if i == len(adds)-1 {
				inSpan("order", func(sctx context.Context) { counter.Add(sctx, n, attrs) })
				continue
			}
			counter.Add(ctx, n, attrs)
		}
	}
	for hist, values := range map[metric.Float64Histogram]map[string][]int{requestsHist: requests, queriesHist: queries} {
		for method, ks := range values {
			attrs := metric.WithAttributes(attribute.String(methodKey, method))
			for _, k := range ks {
				inSpan("request", func(sctx context.Context) { hist.Record(sctx, float64(k)/256, attrs) })
			}
		}
	}

	require.NoError(t, reader.Collect(ctx, &w.Sent))
	exp, err := otlpmetricgrpc.New(ctx, otlpmetricgrpc.WithEndpoint(otlpEndpoint), otlpmetricgrpc.WithInsecure(),
		otlpmetricgrpc.WithTimeout(10*time.Second))
	require.NoError(t, err)
	require.NoError(t, exp.Export(ctx, &w.Sent), "export to %s", otlpEndpoint)
	require.NoError(t, exp.Shutdown(ctx))
	return w
}

// metric returns the sent metric called name.
func (w workload) metric(t *testing.T, name string) metricdata.Metrics {
	t.Helper()
	for _, sm := range w.Sent.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m
			}
		}
	}
	t.Fatalf("%s was not sent", name)
	return metricdata.Metrics{}
}

// seconds turns the measurements of one method, in 1/256 s, into seconds.
func seconds(ks []int) []float64 {
	out := make([]float64, len(ks))
	for i, k := range ks {
		out[i] = float64(k) / 256
	}
	return out
}
