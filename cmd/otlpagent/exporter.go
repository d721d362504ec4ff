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
)

// replicaExporter is an OTLP exporter and the replica that answered its last
// request, when the gateway's load balancer names it in a response header.
type replicaExporter struct {
	sdkmetric.Exporter
	replica func() string
}

// newExporter returns the OTLP exporter of one agent. Retries are quick: a
// replica that goes away should cost the agent a reconnect, not the SDK's
// default 5 s back-off.
func newExporter(ctx context.Context, cfg config) (replicaExporter, error) {
	temporality := sdkmetric.DefaultTemporalitySelector
	if cfg.temporality == "delta" {
		temporality = func(sdkmetric.InstrumentKind) metricdata.Temporality { return metricdata.DeltaTemporality }
	}
	if cfg.protocol == "grpc" {
		exp, err := otlpmetricgrpc.New(ctx,
			otlpmetricgrpc.WithEndpoint(cfg.endpoint), otlpmetricgrpc.WithInsecure(),
			otlpmetricgrpc.WithTemporalitySelector(temporality),
			otlpmetricgrpc.WithTimeout(5*time.Second),
			otlpmetricgrpc.WithRetry(otlpmetricgrpc.RetryConfig{Enabled: true, InitialInterval: 100 * time.Millisecond, MaxInterval: time.Second, MaxElapsedTime: 30 * time.Second}))
		return replicaExporter{Exporter: exp, replica: func() string { return "" }}, err
	}
	rt := &replicaTransport{next: http.DefaultTransport.(*http.Transport).Clone(), header: cfg.replicaHeader}
	exp, err := otlpmetrichttp.New(ctx,
		otlpmetrichttp.WithEndpoint(cfg.endpoint), otlpmetrichttp.WithInsecure(),
		otlpmetrichttp.WithTemporalitySelector(temporality),
		otlpmetrichttp.WithTimeout(5*time.Second),
		otlpmetrichttp.WithHTTPClient(&http.Client{Transport: rt}),
		otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig{Enabled: true, InitialInterval: 100 * time.Millisecond, MaxInterval: time.Second, MaxElapsedTime: 30 * time.Second}))
	return replicaExporter{Exporter: exp, replica: rt.last}, err
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
