// Command otelconnect_v0.9 captures the metrics of otelconnect v0.9.0
// (semantic conventions v1.21: rpc.*.duration in ms, rpc.system "grpc" or
// "connect_rpc", an integer rpc.grpc.status_code over gRPC and a lower-case
// rpc.connect_rpc.error_code over Connect) for connect-go servers and
// clients speaking the gRPC protocol and the Connect protocol.
package main

import (
	"context"

	"connectrpc.com/otelconnect"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/statsgate/statsgate/processor/grpcstatsprocessor/testdata/fixturegen/common"
	"github.com/statsgate/statsgate/processor/grpcstatsprocessor/testdata/fixturegen/commonconnect"
)

const name = "otelconnect_v0.9"

func main() {
	common.Main(common.Variant{
		Name:        name,
		Description: "otelconnect interceptor on a connect-go server and its clients, over the gRPC and the Connect protocol, default options",
		Libraries:   []string{"connectrpc.com/otelconnect", "connectrpc.com/connect"},
		Env:         map[string]string{},
		ExpectMetrics: []string{
			"rpc.client.duration", "rpc.server.duration",
		},
		Setup: func(ctx context.Context, endpoint string) (*common.Instrumentation, error) {
			mp, err := common.NewMeterProvider(ctx, name, endpoint)
			if err != nil {
				return nil, err
			}
			interceptor, err := otelconnect.NewInterceptor(otelconnect.WithMeterProvider(mp))
			if err != nil {
				return nil, err
			}
			return &common.Instrumentation{
				Serve: func(ctx context.Context) ([]common.Call, error) {
					return commonconnect.Serve(ctx, interceptor)
				},
				Flush: func(ctx context.Context) (*pmetric.Metrics, error) {
					return nil, mp.Shutdown(ctx)
				},
			}, nil
		},
	})
}
