package grpcstatsprocessor

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/stats/opentelemetry"
	"google.golang.org/grpc/status"

	"github.com/statsgate/statsgate/processor/grpcstatsprocessor/internal/metadata"
)

// testService answers EmptyCall with OK and UnaryCall with the status the
// request asks for.
type testService struct {
	testgrpc.UnimplementedTestServiceServer
}

func (testService) EmptyCall(context.Context, *testgrpc.Empty) (*testgrpc.Empty, error) {
	return &testgrpc.Empty{}, nil
}

func (testService) UnaryCall(_ context.Context, req *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	if c := req.GetResponseStatus().GetCode(); c != 0 {
		return nil, status.Error(codes.Code(c), "as requested")
	}
	return &testgrpc.SimpleResponse{}, nil
}

// otlpReceiver hands what the OTLP exporter sends to a consumer.
type otlpReceiver struct {
	pmetricotlp.UnimplementedGRPCServer
	next func(context.Context, pmetricotlp.ExportRequest) error
}

func (r *otlpReceiver) Export(ctx context.Context, req pmetricotlp.ExportRequest) (pmetricotlp.ExportResponse, error) {
	return pmetricotlp.NewExportResponse(), r.next(ctx, req)
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	return ln
}

// TestLiveOtelgrpcAndGRPCPluginCountOnce runs a real grpc-go server and client
// with both otelgrpc and grpc's OpenTelemetry plugin registered, exports
// through the real OTLP exporter to the processor, and checks every call is
// counted once, in seconds.
func TestLiveOtelgrpcAndGRPCPluginCountOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// The processor behind an in-process OTLP endpoint.
	sink := new(consumertest.MetricsSink)
	p, err := NewFactory().CreateMetrics(ctx, processortest.NewNopSettings(metadata.Type), createDefaultConfig(), sink)
	require.NoError(t, err)
	otlpLn := listen(t)
	otlpSrv := grpc.NewServer()
	pmetricotlp.RegisterGRPCServer(otlpSrv, &otlpReceiver{next: func(ctx context.Context, req pmetricotlp.ExportRequest) error {
		return p.ConsumeMetrics(ctx, req.Metrics())
	}})
	go func() { _ = otlpSrv.Serve(otlpLn) }()
	defer otlpSrv.Stop()

	exp, err := otlpmetricgrpc.New(ctx, otlpmetricgrpc.WithEndpoint(otlpLn.Addr().String()), otlpmetricgrpc.WithInsecure())
	require.NoError(t, err)
	reader := sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(time.Hour))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))

	// A real service with both handlers on both sides.
	plugin := opentelemetry.Options{MetricsOptions: opentelemetry.MetricsOptions{MeterProvider: mp, Metrics: opentelemetry.DefaultMetrics()}}
	srvLn := listen(t)
	// WaitForHandlers: stopping the server waits for each call's handler,
	// after which the server's stats handlers record the call.
	srv := grpc.NewServer(grpc.StatsHandler(otelgrpc.NewServerHandler(otelgrpc.WithMeterProvider(mp))), opentelemetry.ServerOption(plugin),
		grpc.WaitForHandlers(true))
	testgrpc.RegisterTestServiceServer(srv, testService{})
	go func() { _ = srv.Serve(srvLn) }()
	defer srv.Stop()
	conn, err := grpc.NewClient(srvLn.Addr().String(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithStatsHandler(otelgrpc.NewClientHandler(otelgrpc.WithMeterProvider(mp))),
		opentelemetry.DialOption(plugin))
	require.NoError(t, err)
	defer conn.Close()

	client := testgrpc.NewTestServiceClient(conn)
	for range 4 {
		_, err := client.EmptyCall(ctx, &testgrpc.Empty{})
		require.NoError(t, err)
	}
	for range 3 {
		_, err := client.UnaryCall(ctx, &testgrpc.SimpleRequest{ResponseStatus: &testgrpc.EchoStatus{Code: int32(codes.NotFound)}})
		require.Equal(t, codes.NotFound, status.Code(err))
	}
	// A client's call returns once the server has answered, which can be
	// before the server's stats handlers have recorded it.
	require.NoError(t, conn.Close())
	srv.GracefulStop()
	require.NoError(t, mp.ForceFlush(ctx))
	require.NoError(t, mp.Shutdown(ctx))

	// Each export carries the cumulative state so far: every one must hold
	// one server and one client duration metric, and the last one the counts.
	exports := sink.AllMetrics()
	require.NotEmpty(t, exports)
	s := shapes["semconv"]
	var server, clientCalls map[string]uint64
	for _, md := range exports {
		var n int
		server, n = counts(md, s.server, s, true)
		assert.Equal(t, 1, n, "the plugin's server durations were dropped as duplicates")
		clientCalls, n = counts(md, s.client, s, true)
		assert.Equal(t, 1, n, "the plugin's client durations were dropped as duplicates")
		assertSeconds(t, md, s, false)
	}
	want := map[string]uint64{
		"grpc.testing.TestService/EmptyCall OK":        4,
		"grpc.testing.TestService/UnaryCall NOT_FOUND": 3,
	}
	assert.Equal(t, want, server, "server calls counted once")
	assert.Equal(t, want, clientCalls, "client calls counted once")
}
