package main

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	"google.golang.org/grpc"
	"google.golang.org/grpc/peer"
)

// metricsServer acknowledges OTLP/gRPC exports and keeps the client address
// of the connection each came on.
type metricsServer struct {
	pmetricotlp.UnimplementedGRPCServer
	srv *grpc.Server
	// held, when set, is told of each export, which then waits until
	// release is closed or the client gives it up.
	held, release chan struct{}

	mu    sync.Mutex
	peers []string
}

// serveMetrics serves OTLP/gRPC on l until the test ends.
func serveMetrics(t *testing.T, l net.Listener) *metricsServer {
	return startMetricsServer(t, l, &metricsServer{})
}

// serveHeldMetrics is serveMetrics with each export held until release is
// closed.
func serveHeldMetrics(t *testing.T, l net.Listener) *metricsServer {
	return startMetricsServer(t, l, &metricsServer{held: make(chan struct{}, 1), release: make(chan struct{})})
}

func startMetricsServer(t *testing.T, l net.Listener, s *metricsServer) *metricsServer {
	s.srv = grpc.NewServer()
	pmetricotlp.RegisterGRPCServer(s.srv, s)
	go func() { _ = s.srv.Serve(l) }()
	t.Cleanup(s.srv.Stop)
	return s
}

func (s *metricsServer) Export(ctx context.Context, _ pmetricotlp.ExportRequest) (pmetricotlp.ExportResponse, error) {
	if s.held != nil {
		select {
		case s.held <- struct{}{}:
		default:
		}
		select {
		case <-s.release:
		case <-ctx.Done():
			return pmetricotlp.NewExportResponse(), ctx.Err()
		}
	}
	p, _ := peer.FromContext(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.peers = append(s.peers, p.Addr.String())
	return pmetricotlp.NewExportResponse(), nil
}

func (s *metricsServer) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.peers...)
}

func operations(n int64) *metricdata.ResourceMetrics {
	return &metricdata.ResourceMetrics{Resource: resource.Empty(), ScopeMetrics: []metricdata.ScopeMetrics{{
		Metrics: []metricdata.Metrics{{Name: counterName, Data: metricdata.Sum[int64]{
			Temporality: metricdata.DeltaTemporality, IsMonotonic: true,
			DataPoints: []metricdata.DataPoint[int64]{{
				Attributes: attribute.NewSet(attribute.String("kind", "read")), Time: time.Now(), Value: n,
			}},
		}}},
	}}}
}

// Each acknowledged gRPC export names the connection that carried it, as
// the server saw it from the other end, also when it took a new one after
// failed attempts.
func TestGRPCExportRecordsItsConnection(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	first := serveMetrics(t, l)
	ctx := context.Background()
	exp, err := newExporter(ctx, config{endpoint: addr, protocol: "grpc", temporality: "delta"})
	require.NoError(t, err)
	defer func() { assert.NoError(t, exp.Shutdown(ctx)) }()
	rec := newRecorder(exp, true)

	require.NoError(t, rec.Export(ctx, operations(1)))
	require.NoError(t, rec.Export(ctx, operations(2)))
	require.Len(t, first.seen(), 2)
	assert.Equal(t, first.seen()[0], rec.exports[0].Conn)
	assert.Equal(t, first.seen()[1], rec.exports[1].Conn)
	assert.Equal(t, rec.exports[0].Conn, rec.exports[1].Conn, "two exports, one connection")

	// The gateway goes away: the next export's first attempts fail until
	// it is back on another connection.
	first.srv.Stop()
	back := make(chan *metricsServer, 1)
	go func() {
		time.Sleep(300 * time.Millisecond)
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Errorf("listening again on %s: %v", addr, err)
			back <- nil
			return
		}
		back <- serveMetrics(t, l)
	}()
	require.NoError(t, rec.Export(ctx, operations(3)))
	second := <-back
	require.NotNil(t, second)
	require.Len(t, second.seen(), 1)
	assert.Equal(t, second.seen()[0], rec.exports[2].Conn)
	assert.NotEqual(t, rec.exports[0].Conn, rec.exports[2].Conn, "a new connection")
	for _, e := range rec.exports {
		assert.Empty(t, e.Replica, "over gRPC no header names the replica")
	}
}

// An export in flight when the agent stops is finished and acknowledged,
// not cancelled by the SDK's reader: with deltas, what the gateway took is
// what the manifest says the agent sent.
func TestExportInFlightWhenTheAgentStopsFinishes(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := serveHeldMetrics(t, l)
	ctx := context.Background()
	exp, err := newExporter(ctx, config{endpoint: l.Addr().String(), protocol: "grpc", temporality: "delta"})
	require.NoError(t, err)
	rec := newRecorder(exp, true)
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(rec, sdkmetric.WithInterval(50*time.Millisecond))))
	counter, err := mp.Meter("test").Int64Counter(counterName)
	require.NoError(t, err)
	counter.Add(ctx, 3, metric.WithAttributes(attribute.String("kind", "read")))

	<-srv.held // a periodic export is in flight
	stopped := make(chan error, 1)
	go func() { stopped <- mp.Shutdown(ctx) }()
	// Shutdown cancels the reader's run at once; the export outlives it.
	time.Sleep(300 * time.Millisecond)
	close(srv.release)
	require.NoError(t, <-stopped)

	assert.Empty(t, rec.failed, "exports failed")
	require.NotEmpty(t, rec.exports)
	assert.Equal(t, int64(3), rec.acked.get("read").Operations, "the delta in flight acknowledged")
	assert.Len(t, srv.seen(), len(rec.exports), "every export the gateway took acknowledged")
}
