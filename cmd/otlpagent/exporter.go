package main

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/grpc"
	"google.golang.org/grpc/peer"
)

// replicaExporter is an OTLP exporter and the replica that answered its last
// request, when the gateway's load balancer names it in a response header,
// or over gRPC the connection that carried it, which the load balancer's
// connection log ties to a replica.
type replicaExporter struct {
	sdkmetric.Exporter
	replica func() string
	conn    func() string
}

// newExporter returns the OTLP exporter of one agent. Retries are quick: a
// replica that goes away should cost the agent a reconnect, not the SDK's
// default 5 s back-off.
func newExporter(ctx context.Context, cfg config) (replicaExporter, error) {
	temporality := sdkmetric.DefaultTemporalitySelector
	if cfg.temporality == "delta" {
		temporality = func(sdkmetric.InstrumentKind) metricdata.Temporality { return metricdata.DeltaTemporality }
	}
	none := func() string { return "" }
	if cfg.protocol == "grpc" {
		var conn connRecorder
		exp, err := otlpmetricgrpc.New(ctx,
			otlpmetricgrpc.WithEndpoint(cfg.endpoint), otlpmetricgrpc.WithInsecure(),
			otlpmetricgrpc.WithTemporalitySelector(temporality),
			otlpmetricgrpc.WithTimeout(5*time.Second),
			otlpmetricgrpc.WithDialOption(grpc.WithChainUnaryInterceptor(conn.intercept)),
			otlpmetricgrpc.WithRetry(otlpmetricgrpc.RetryConfig{Enabled: true, InitialInterval: 100 * time.Millisecond, MaxInterval: time.Second, MaxElapsedTime: 30 * time.Second}))
		return replicaExporter{Exporter: exp, replica: none, conn: conn.last}, err
	}
	rt := &replicaTransport{next: http.DefaultTransport.(*http.Transport).Clone(), header: cfg.replicaHeader}
	exp, err := otlpmetrichttp.New(ctx,
		otlpmetrichttp.WithEndpoint(cfg.endpoint), otlpmetrichttp.WithInsecure(),
		otlpmetrichttp.WithTemporalitySelector(temporality),
		otlpmetrichttp.WithTimeout(5*time.Second),
		otlpmetrichttp.WithHTTPClient(&http.Client{Transport: rt}),
		otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig{Enabled: true, InitialInterval: 100 * time.Millisecond, MaxInterval: time.Second, MaxElapsedTime: 30 * time.Second}))
	return replicaExporter{Exporter: exp, replica: rt.last, conn: none}, err
}

// replicaTransport keeps the replica header of the last response. An agent's
// exports are sequential, so after a successful Export it names the replica
// that acknowledged it.
type replicaTransport struct {
	next    http.RoundTripper
	header  string
	replica atomic.Pointer[string]
}

func (t *replicaTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	if err == nil && t.header != "" {
		v := resp.Header.Get(t.header)
		t.replica.Store(&v)
	}
	return resp, err
}

func (t *replicaTransport) last() string {
	if p := t.replica.Load(); p != nil {
		return *p
	}
	return ""
}

// connRecorder keeps the local address of the gRPC connection that carried
// the last successful call. The SDK retries within one Export, each attempt
// a call of its own: after a successful Export, it names the connection of
// the attempt that was acknowledged.
type connRecorder struct {
	addr atomic.Pointer[string]
}

// intercept is a unary client interceptor.
func (c *connRecorder) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	var p peer.Peer
	// A copy: appending must not write into the caller's slice.
	err := invoker(ctx, method, req, reply, cc, append(opts[:len(opts):len(opts)], grpc.Peer(&p))...)
	if err == nil {
		// Empty rather than the previous connection's, should grpc-go not
		// say: an export must not be put on a connection it did not take.
		a := ""
		if p.LocalAddr != nil {
			a = p.LocalAddr.String()
		}
		c.addr.Store(&a)
	}
	return err
}

func (c *connRecorder) last() string {
	if p := c.addr.Load(); p != nil {
		return *p
	}
	return ""
}
