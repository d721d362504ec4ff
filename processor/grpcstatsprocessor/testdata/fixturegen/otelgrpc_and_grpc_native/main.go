// Command otelgrpc_and_grpc_native captures what a service exports when it
// registers both otelgrpc v0.72.0 stats handlers and grpc-go's own
// OpenTelemetry plugin on the same server and client, through one
// MeterProvider: every call is counted by both.
package main

import (
	"context"

	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/stats/opentelemetry"

	"github.com/statsgate/statsgate/processor/grpcstatsprocessor/testdata/fixturegen/common"
)

const name = "otelgrpc_and_grpc_native"

func main() {
	common.Main(common.Variant{
		Name:        name,
		Description: "otelgrpc stats handlers and the grpc-go OpenTelemetry plugin (opentelemetry.DefaultMetrics()) on the same server and client, one MeterProvider",
		Libraries: []string{
			"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc",
			"google.golang.org/grpc",
		},
		ExpectMetrics: []string{
			"rpc.client.call.duration", "rpc.server.call.duration",
			"grpc.client.attempt.started", "grpc.client.attempt.duration",
			"grpc.client.attempt.sent_total_compressed_message_size",
			"grpc.client.attempt.rcvd_total_compressed_message_size",
			"grpc.client.call.duration",
			"grpc.server.call.started", "grpc.server.call.duration",
			"grpc.server.call.sent_total_compressed_message_size",
			"grpc.server.call.rcvd_total_compressed_message_size",
		},
		Setup: func(ctx context.Context, endpoint string) (*common.Instrumentation, error) {
			mp, err := common.NewMeterProvider(ctx, name, endpoint)
			if err != nil {
				return nil, err
			}
			opts := opentelemetry.Options{MetricsOptions: opentelemetry.MetricsOptions{
				MeterProvider: mp,
				Metrics:       opentelemetry.DefaultMetrics(),
			}}
			return &common.Instrumentation{
				ServerOptions: []grpc.ServerOption{
					grpc.StatsHandler(otelgrpc.NewServerHandler(otelgrpc.WithMeterProvider(mp))),
					opentelemetry.ServerOption(opts),
				},
				DialOptions: []grpc.DialOption{
					grpc.WithStatsHandler(otelgrpc.NewClientHandler(otelgrpc.WithMeterProvider(mp))),
					opentelemetry.DialOption(opts),
				},
				Flush: func(ctx context.Context) (*pmetric.Metrics, error) {
					return nil, mp.Shutdown(ctx)
				},
			}, nil
		},
	})
}
