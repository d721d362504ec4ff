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

	mu    sync.Mutex
	peers []string
}

// serveMetrics serves OTLP/gRPC on l until the test ends.
func serveMetrics(t *testing.T, l net.Listener) *metricsServer {
	s := &metricsServer{srv: grpc.NewServer()}
	pmetricotlp.RegisterGRPCServer(s.srv, s)
	go func() { _ = s.srv.Serve(l) }()
	t.Cleanup(s.srv.Stop)
	return s
}

func (s *metricsServer) Export(ctx context.Context, _ pmetricotlp.ExportRequest) (pmetricotlp.ExportResponse, error) {
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
