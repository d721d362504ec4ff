// Command otelgrpc_v0.66 captures the metrics of otelgrpc v0.66.0, the
// release that fixed v0.65.0's millisecond values, with its default
// semantic conventions.
package main

import (
	"context"

	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"google.golang.org/grpc"

	"github.com/statsgate/statsgate/processor/grpcstatsprocessor/testdata/fixturegen/common"
)

const name = "otelgrpc_v0.66"

func main() {
	common.Main(common.Variant{
		Name:        name,
		Description: "otelgrpc stats handlers on server and client, default options",
		Libraries:   []string{"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"},
		Env:         map[string]string{},
		ExpectMetrics: []string{
			"rpc.client.call.duration", "rpc.server.call.duration",
		},
		Setup: func(ctx context.Context, endpoint string) (*common.Instrumentation, error) {
			mp, err := common.NewMeterProvider(ctx, name, endpoint)
			if err != nil {
				return nil, err
			}
			return &common.Instrumentation{
				ServerOptions: []grpc.ServerOption{grpc.StatsHandler(otelgrpc.NewServerHandler(otelgrpc.WithMeterProvider(mp)))},
				DialOptions:   []grpc.DialOption{grpc.WithStatsHandler(otelgrpc.NewClientHandler(otelgrpc.WithMeterProvider(mp)))},
				Flush: func(ctx context.Context) (*pmetric.Metrics, error) {
					return nil, mp.Shutdown(ctx)
				},
			}, nil
		},
	})
}
