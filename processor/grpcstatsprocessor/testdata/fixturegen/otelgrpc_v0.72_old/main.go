// Command otelgrpc_v0.72_old captures the metrics of otelgrpc v0.72.0 with
// OTEL_SEMCONV_STABILITY_OPT_IN=rpc/old, which asks for the old (≤ v1.37)
// RPC semantic conventions only.
package main

import (
	"context"

	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"google.golang.org/grpc"

	"github.com/statsgate/statsgate/processor/grpcstatsprocessor/testdata/fixturegen/common"
)

const name = "otelgrpc_v0.72_old"

func main() {
	common.Main(common.Variant{
		Name:        name,
		Description: "otelgrpc stats handlers on server and client, OTEL_SEMCONV_STABILITY_OPT_IN=rpc/old",
		Libraries:   []string{"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"},
		Env:         map[string]string{"OTEL_SEMCONV_STABILITY_OPT_IN": "rpc/old"},
		ExpectMetrics: []string{
			"rpc.client.duration", "rpc.server.duration",
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
