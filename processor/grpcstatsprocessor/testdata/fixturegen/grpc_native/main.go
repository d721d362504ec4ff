// Command grpc_native captures the metrics of grpc-go's own OpenTelemetry
// plugin (google.golang.org/grpc/stats/opentelemetry, gRFC A66) with its
// default metric set, which includes the started counters.
package main

import (
	"context"

	"go.opentelemetry.io/collector/pdata/pmetric"
	"google.golang.org/grpc"
	"google.golang.org/grpc/stats/opentelemetry"

	"github.com/statsgate/statsgate/processor/grpcstatsprocessor/testdata/fixturegen/common"
)

const name = "grpc_native"

func main() {
	common.Main(common.Variant{
		Name:        name,
		Description: "grpc-go OpenTelemetry plugin (DialOption/ServerOption) with opentelemetry.DefaultMetrics()",
		Libraries:   []string{"google.golang.org/grpc"},
		ExpectMetrics: []string{
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
				ServerOptions: []grpc.ServerOption{opentelemetry.ServerOption(opts)},
				DialOptions:   []grpc.DialOption{opentelemetry.DialOption(opts)},
				Flush: func(ctx context.Context) (*pmetric.Metrics, error) {
					return nil, mp.Shutdown(ctx)
				},
			}, nil
		},
	})
}
