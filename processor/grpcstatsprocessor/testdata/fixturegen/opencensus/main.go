// Command opencensus captures the metrics of OpenCensus ocgrpc v0.24.0 with
// its default client and server views, carried into an OpenTelemetry
// MeterProvider by the OpenCensus bridge and sent by the real OTLP exporter.
package main

import (
	"context"
	"fmt"

	"go.opencensus.io/plugin/ocgrpc"
	"go.opencensus.io/stats/view"
	"go.opentelemetry.io/collector/pdata/pmetric"
	ocbridge "go.opentelemetry.io/otel/bridge/opencensus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"google.golang.org/grpc"

	"github.com/statsgate/statsgate/processor/grpcstatsprocessor/testdata/fixturegen/common"
)

const name = "opencensus"

func main() {
	common.Main(common.Variant{
		Name:        name,
		Description: "ocgrpc ServerHandler/ClientHandler with DefaultServerViews and DefaultClientViews, exported through the OpenCensus bridge",
		Libraries: []string{
			"go.opencensus.io",
			"go.opentelemetry.io/otel/bridge/opencensus",
		},
		ExpectMetrics: []string{
			"grpc.io/client/completed_rpcs", "grpc.io/client/roundtrip_latency",
			"grpc.io/client/received_bytes_per_rpc", "grpc.io/client/sent_bytes_per_rpc",
			"grpc.io/server/completed_rpcs", "grpc.io/server/server_latency",
			"grpc.io/server/received_bytes_per_rpc", "grpc.io/server/sent_bytes_per_rpc",
		},
		Setup: func(ctx context.Context, endpoint string) (*common.Instrumentation, error) {
			views := append(append([]*view.View{}, ocgrpc.DefaultServerViews...), ocgrpc.DefaultClientViews...)
			if err := view.Register(views...); err != nil {
				return nil, fmt.Errorf("register views: %w", err)
			}
			mp, err := common.NewMeterProvider(ctx, name, endpoint,
				sdkmetric.WithProducer(ocbridge.NewMetricProducer()))
			if err != nil {
				return nil, err
			}
			return &common.Instrumentation{
				ServerOptions: []grpc.ServerOption{grpc.StatsHandler(&ocgrpc.ServerHandler{})},
				DialOptions:   []grpc.DialOption{grpc.WithStatsHandler(&ocgrpc.ClientHandler{})},
				Flush: func(ctx context.Context) (*pmetric.Metrics, error) {
					// OpenCensus records through a worker goroutine; a
					// RetrieveData request is queued behind every earlier
					// record, so once it returns all calls are aggregated.
					for _, v := range views {
						if _, err := view.RetrieveData(v.Name); err != nil {
							return nil, fmt.Errorf("retrieve %s: %w", v.Name, err)
						}
					}
					return nil, mp.Shutdown(ctx)
				},
			}, nil
		},
	})
}
