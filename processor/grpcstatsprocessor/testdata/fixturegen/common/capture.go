package common

import (
	"context"
	"fmt"
	"net"
	"sync"

	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"google.golang.org/grpc"
)

// CaptureServer is an OTLP/gRPC metrics server on loopback that keeps every
// export request it receives.
type CaptureServer struct {
	pmetricotlp.UnimplementedGRPCServer

	lis net.Listener
	srv *grpc.Server

	mu       sync.Mutex
	received pmetric.Metrics
	exports  int
}

// StartCaptureServer listens on a free loopback port and serves OTLP metrics.
func StartCaptureServer() (*CaptureServer, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("capture server listen: %w", err)
	}
	c := &CaptureServer{lis: lis, srv: grpc.NewServer(), received: pmetric.NewMetrics()}
	pmetricotlp.RegisterGRPCServer(c.srv, c)
	go func() { _ = c.srv.Serve(lis) }()
	return c, nil
}

// Endpoint is the host:port the OTLP exporter should send to.
func (c *CaptureServer) Endpoint() string { return c.lis.Addr().String() }

// Export implements pmetricotlp.GRPCServer.
func (c *CaptureServer) Export(_ context.Context, req pmetricotlp.ExportRequest) (pmetricotlp.ExportResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	req.Metrics().ResourceMetrics().MoveAndAppendTo(c.received.ResourceMetrics())
	c.exports++
	return pmetricotlp.NewExportResponse(), nil
}

// Received returns everything received so far and the number of exports.
func (c *CaptureServer) Received() (pmetric.Metrics, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := pmetric.NewMetrics()
	c.received.CopyTo(out)
	return out, c.exports
}

// Stop stops the server, waiting for running exports to finish.
func (c *CaptureServer) Stop() { c.srv.GracefulStop() }
