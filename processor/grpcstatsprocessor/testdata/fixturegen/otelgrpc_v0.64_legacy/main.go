// Command otelgrpc_v0.64_legacy captures the metrics of otelgrpc v0.64.0,
// the last release on the old RPC semantic conventions (rpc.server.duration
// in milliseconds, rpc.grpc.status_code as an integer).
package main

import (
	"context"

	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"google.golang.org/grpc"

	"github.com/statsgate/statsgate/processor/grpcstatsprocessor/testdata/fixturegen/common"
)

const name = "otelgrpc_v0.64_legacy"

func main() {
	common.Main(common.Variant{
		Name:        name,
		Description: "otelgrpc stats handlers on server and client, default options",
		Libraries:   []string{"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"},
		Env:         map[string]string{},
		ExpectMetrics: []string{
			"rpc.client.duration", "rpc.client.request.size", "rpc.client.requests_per_rpc",
			"rpc.client.response.size", "rpc.client.responses_per_rpc",
			"rpc.server.duration", "rpc.server.request.size", "rpc.server.requests_per_rpc",
			"rpc.server.response.size", "rpc.server.responses_per_rpc",
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
