package common

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
)

// NewMeterProvider returns an SDK MeterProvider whose only reader is a
// PeriodicReader with a one hour interval feeding the real OTLP/gRPC metric
// exporter, sending in plain text to endpoint. Nothing is exported until
// Shutdown, which collects and exports exactly once.
func NewMeterProvider(ctx context.Context, variant, endpoint string, readerOpts ...sdkmetric.PeriodicReaderOption) (*sdkmetric.MeterProvider, error) {
	exp, err := otlpmetricgrpc.New(ctx,
		otlpmetricgrpc.WithEndpoint(endpoint),
		otlpmetricgrpc.WithInsecure(),
		otlpmetricgrpc.WithTimeout(10*time.Second),
	)
	if err != nil {
		return nil, err
	}
	opts := append([]sdkmetric.PeriodicReaderOption{sdkmetric.WithInterval(time.Hour)}, readerOpts...)
	reader := sdkmetric.NewPeriodicReader(exp, opts...)
	res := resource.NewSchemaless(
		attribute.String("service.name", "fixturegen"),
		attribute.String("fixturegen.variant", variant),
	)
	return sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithResource(res)), nil
}
