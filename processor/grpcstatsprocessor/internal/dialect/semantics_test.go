package dialect

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// convertPoint converts one point of the named metric with the dialect's
// rule and returns its attributes.
func convertPoint(t *testing.T, d Dialect, target Target, status StatusKey, name, unit string, attrs map[string]any) map[string]any {
	t.Helper()
	m := pmetric.NewMetric()
	m.SetName(name)
	m.SetUnit(unit)
	require.NoError(t, m.SetEmptyHistogram().DataPoints().AppendEmpty().Attributes().FromRaw(attrs))
	r := mustNew(t, d, target).Recognize(pcommon.NewInstrumentationScope(), m)
	require.NotNil(t, r, name)
	NewWriter(target, Options{Status: status}).NewRewriter().Rewrite(m, r)
	return m.Histogram().DataPoints().At(0).Attributes().AsRaw()
}

func TestStableSemanticConventions(t *testing.T) {
	const (
		server       = "rpc.server.call.duration"
		client       = "rpc.client.call.duration"
		legacyServer = "rpc.server.duration"
		legacyClient = "rpc.client.duration"
	)
	tests := []struct {
		name       string
		d          Dialect
		metric     string
		in, want   map[string]any
		statusKeys StatusKey
	}{
		{
			name: "a client point already on rpc.status_code keeps its status and gets error.type", d: Semconv, metric: client,
			in:   map[string]any{"rpc.method": "s/M", "rpc.status_code": "NOT_FOUND", "rpc.system.name": "grpc"},
			want: map[string]any{"rpc.method": "s/M", "rpc.status_code": "NOT_FOUND", "rpc.system.name": "grpc", "error.type": "NOT_FOUND"},
		},
		{
			name: "the stable key wins over the old one", d: Semconv, metric: client,
			in:   map[string]any{"rpc.method": "s/M", "rpc.response.status_code": "OK", "rpc.status_code": "UNAVAILABLE", "rpc.system.name": "grpc"},
			want: map[string]any{"rpc.method": "s/M", "rpc.status_code": "UNAVAILABLE", "rpc.system.name": "grpc", "error.type": "UNAVAILABLE"},
		},
		{
			name: "a server point's error.type is kept (otelgrpc ≥ v0.71)", d: Semconv, metric: server,
			in:   map[string]any{"rpc.method": "s/M", "rpc.response.status_code": "UNAVAILABLE", "rpc.system.name": "grpc", "error.type": "UNAVAILABLE"},
			want: map[string]any{"rpc.method": "s/M", "rpc.status_code": "UNAVAILABLE", "rpc.system.name": "grpc", "error.type": "UNAVAILABLE"},
		},
		{
			name: "a server point's error.type is derived for the server error codes", d: SemconvLegacy, metric: legacyServer, statusKeys: StatusStable,
			in:   map[string]any{"rpc.service": "s", "rpc.method": "M", "rpc.grpc.status_code": int64(4), "rpc.system": "grpc"},
			want: map[string]any{"rpc.method": "s/M", "rpc.status_code": "DEADLINE_EXCEEDED", "rpc.system.name": "grpc", "error.type": "DEADLINE_EXCEEDED"},
		},
		{
			name: "a server NOT_FOUND is not a server error", d: SemconvLegacy, metric: legacyServer,
			in:   map[string]any{"rpc.service": "s", "rpc.method": "M", "rpc.grpc.status_code": int64(5), "rpc.system": "grpc"},
			want: map[string]any{"rpc.method": "s/M", "rpc.status_code": "NOT_FOUND", "rpc.system.name": "grpc"},
		},
		{
			name: "a client NOT_FOUND is a client error", d: SemconvLegacy, metric: legacyClient,
			in:   map[string]any{"rpc.service": "s", "rpc.method": "M", "rpc.grpc.status_code": int64(5), "rpc.system": "grpc"},
			want: map[string]any{"rpc.method": "s/M", "rpc.status_code": "NOT_FOUND", "rpc.system.name": "grpc", "error.type": "NOT_FOUND"},
		},
		{
			name: "an input's own error.type is kept as it is", d: Semconv, metric: client,
			in:   map[string]any{"rpc.method": "s/M", "rpc.response.status_code": "UNAVAILABLE", "rpc.system.name": "grpc", "error.type": "*net.OpError"},
			want: map[string]any{"rpc.method": "s/M", "rpc.status_code": "UNAVAILABLE", "rpc.system.name": "grpc", "error.type": "*net.OpError"},
		},
		{
			name: "the old key only (rpc/old consumers)", d: Semconv, metric: client, statusKeys: StatusOld,
			in:   map[string]any{"rpc.method": "s/M", "rpc.status_code": "OK", "rpc.system.name": "grpc"},
			want: map[string]any{"rpc.method": "s/M", "rpc.response.status_code": "OK", "rpc.system.name": "grpc"},
		},
		{
			name: "both keys during a migration", d: Semconv, metric: client, statusKeys: StatusDup,
			in:   map[string]any{"rpc.method": "s/M", "rpc.response.status_code": "INTERNAL", "rpc.system.name": "grpc"},
			want: map[string]any{"rpc.method": "s/M", "rpc.status_code": "INTERNAL", "rpc.response.status_code": "INTERNAL", "rpc.system.name": "grpc", "error.type": "INTERNAL"},
		},
		// otelconnect v0.9: legacy metrics, rpc.system grpc or connect_rpc.
		{
			name: "otelconnect v0.9 over gRPC: integer status, rpc.system grpc", d: SemconvLegacy, metric: legacyClient,
			in:   map[string]any{"rpc.service": "s", "rpc.method": "M", "rpc.grpc.status_code": int64(1), "rpc.system": "grpc", "net.peer.name": "127.0.0.1", "net.peer.port": int64(8080)},
			want: map[string]any{"rpc.method": "s/M", "rpc.status_code": "CANCELLED", "rpc.system.name": "grpc", "error.type": "CANCELLED", "server.address": "127.0.0.1", "server.port": int64(8080)},
		},
		{
			name: "otelconnect v0.9 over Connect: lower-case error code, Connect's spelling of canceled", d: SemconvLegacy, metric: legacyClient,
			in:   map[string]any{"rpc.service": "s", "rpc.method": "M", "rpc.connect_rpc.error_code": "canceled", "rpc.system": "connect_rpc"},
			want: map[string]any{"rpc.method": "s/M", "rpc.status_code": "CANCELED", "rpc.system.name": "connectrpc", "error.type": "CANCELED"},
		},
		{
			name: "otelconnect v0.9 over Connect: no error code is OK", d: SemconvLegacy, metric: legacyServer,
			in:   map[string]any{"rpc.service": "s", "rpc.method": "M", "rpc.system": "connect_rpc"},
			want: map[string]any{"rpc.method": "s/M", "rpc.status_code": "OK", "rpc.system.name": "connectrpc"},
		},
		{
			name: "otelconnect v0.9 over Connect: a server unimplemented", d: SemconvLegacy, metric: legacyServer,
			in:   map[string]any{"rpc.service": "s", "rpc.method": "M", "rpc.connect_rpc.error_code": "unimplemented", "rpc.system": "connect_rpc"},
			want: map[string]any{"rpc.method": "s/M", "rpc.status_code": "UNIMPLEMENTED", "rpc.system.name": "connectrpc", "error.type": "UNIMPLEMENTED"},
		},
		// otelconnect v0.12: semconv v1.43, CANCELED whatever the protocol.
		{
			name: "otelconnect v0.12 over Connect keeps CANCELED, not a server error", d: Semconv, metric: server,
			in:   map[string]any{"rpc.method": "s/M", "rpc.response.status_code": "CANCELED", "rpc.system.name": "connectrpc", "error.type": "CANCELED"},
			want: map[string]any{"rpc.method": "s/M", "rpc.status_code": "CANCELED", "rpc.system.name": "connectrpc"},
		},
		{
			name: "otelconnect v0.12's error.type on a server NOT_FOUND is removed", d: Semconv, metric: server,
			in:   map[string]any{"rpc.method": "s/M", "rpc.response.status_code": "NOT_FOUND", "rpc.system.name": "grpc", "error.type": "NOT_FOUND"},
			want: map[string]any{"rpc.method": "s/M", "rpc.status_code": "NOT_FOUND", "rpc.system.name": "grpc"},
		},
		{
			name: "an error.type without a status is kept", d: Semconv, metric: client,
			in:   map[string]any{"rpc.method": "s/M", "rpc.system.name": "grpc", "error.type": "*net.OpError"},
			want: map[string]any{"rpc.method": "s/M", "rpc.system.name": "grpc", "error.type": "*net.OpError"},
		},
		{
			name: "an error.type on a call that succeeded is removed", d: Semconv, metric: client,
			in:   map[string]any{"rpc.method": "s/M", "rpc.response.status_code": "OK", "rpc.system.name": "grpc", "error.type": "OK"},
			want: map[string]any{"rpc.method": "s/M", "rpc.status_code": "OK", "rpc.system.name": "grpc"},
		},
		{
			name: "otelconnect v0.12 over gRPC: CANCELED becomes gRPC's CANCELLED, in error.type too", d: Semconv, metric: client,
			in:   map[string]any{"rpc.method": "s/M", "rpc.response.status_code": "CANCELED", "rpc.system.name": "grpc", "error.type": "CANCELED"},
			want: map[string]any{"rpc.method": "s/M", "rpc.status_code": "CANCELLED", "rpc.system.name": "grpc", "error.type": "CANCELLED"},
		},
		{
			name: "a Connect point's gRPC spelling becomes Connect's", d: Semconv, metric: client,
			in:   map[string]any{"rpc.method": "s/M", "rpc.status_code": "CANCELLED", "rpc.system.name": "connectrpc"},
			want: map[string]any{"rpc.method": "s/M", "rpc.status_code": "CANCELED", "rpc.system.name": "connectrpc", "error.type": "CANCELED"},
		},
		// Other RPC systems: left alone but for the system key.
		{
			name: "a Dubbo point is left alone, its system named as semconv names it", d: SemconvLegacy, metric: legacyServer,
			in:   map[string]any{"rpc.service": "s", "rpc.method": "M", "rpc.system": "apache_dubbo", "net.peer.name": "x", "custom": "y"},
			want: map[string]any{"rpc.service": "s", "rpc.method": "M", "rpc.system.name": "dubbo", "net.peer.name": "x", "custom": "y"},
		},
		{
			name: "a JSON-RPC point is left alone", d: Semconv, metric: server,
			in:   map[string]any{"rpc.method": "sum", "rpc.response.status_code": "-32602", "rpc.system.name": "jsonrpc", "error.type": "-32602"},
			want: map[string]any{"rpc.method": "sum", "rpc.response.status_code": "-32602", "rpc.system.name": "jsonrpc", "error.type": "-32602"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			unit := "s"
			if tt.d == SemconvLegacy {
				unit = "ms"
			}
			assert.Equal(t, tt.want, convertPoint(t, tt.d, TargetSemconv, tt.statusKeys, tt.metric, unit, tt.in))
		})
	}
}

func TestConnectIntoTheGRPCTarget(t *testing.T) {
	got := convertPoint(t, Semconv, TargetGRPC, StatusStable, "rpc.client.call.duration", "s",
		map[string]any{"rpc.method": "s/M", "rpc.response.status_code": "CANCELED", "rpc.system.name": "connectrpc", "error.type": "CANCELED"})
	assert.Equal(t, map[string]any{"grpc.method": "s/M", "grpc.status": "CANCELLED"}, got, "A66 spells codes as gRPC does")
}

func TestNativeAndOtherDialectsAreGRPC(t *testing.T) {
	got := convertPoint(t, GRPCNative, TargetSemconv, StatusStable, "grpc.server.call.duration", "s",
		map[string]any{"grpc.method": "s/M", "grpc.status": "INTERNAL"})
	assert.Equal(t, map[string]any{"rpc.method": "s/M", "rpc.status_code": "INTERNAL", "rpc.system.name": "grpc", "error.type": "INTERNAL"}, got)
	got = convertPoint(t, GRPCNative, TargetSemconv, StatusStable, "grpc.client.call.duration", "s",
		map[string]any{"grpc.method": "s/M", "grpc.status": "OK", "grpc.target": "zk://zookeeper:2181/my-server"})
	assert.Equal(t, map[string]any{"rpc.method": "s/M", "rpc.status_code": "OK", "rpc.system.name": "grpc", "server.address": "zk://zookeeper:2181/my-server"}, got)
}

func TestSystemName(t *testing.T) {
	for in, want := range map[string]string{
		"grpc": "grpc", "connect_rpc": "connectrpc", "connectrpc": "connectrpc",
		"apache_dubbo": "dubbo", "dubbo": "dubbo", "jsonrpc": "jsonrpc", "": "",
	} {
		assert.Equal(t, want, SystemName(in), in)
	}
}
