// Command otelconnect_v0.12 captures the metrics of otelconnect v0.12.0
// (semantic conventions v1.43: rpc.*.call.duration in s, rpc.system.name
// "grpc" or "connectrpc", rpc.response.status_code and error.type) for
// connect-go servers and clients speaking the gRPC protocol and the Connect
// protocol.
package main

import (
	"context"

	"connectrpc.com/otelconnect"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/statsgate/statsgate/processor/grpcstatsprocessor/testdata/fixturegen/common"
	"github.com/statsgate/statsgate/processor/grpcstatsprocessor/testdata/fixturegen/commonconnect"
)

const name = "otelconnect_v0.12"

func main() {
	common.Main(common.Variant{
		Name:        name,
		Description: "otelconnect interceptor on a connect-go server and its clients, over the gRPC and the Connect protocol, default options",
		Libraries:   []string{"connectrpc.com/otelconnect", "connectrpc.com/connect"},
		Env:         map[string]string{},
		ExpectMetrics: []string{
			"rpc.client.call.duration", "rpc.server.call.duration",
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
