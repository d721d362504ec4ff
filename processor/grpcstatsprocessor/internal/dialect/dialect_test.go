package dialect

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

func mustNew(t *testing.T, d Dialect, target Target) Sink {
	t.Helper()
	s, err := New(d, target)
	require.NoError(t, err)
	return s
}

func TestNewRefusesAnUnknownDialect(t *testing.T) {
	for _, d := range All {
		_, err := New(d, TargetSemconv)
		assert.NoError(t, err, d)
	}
	for _, d := range []Dialect{"", "prometheus", "SEMCONV"} {
		s, err := New(d, TargetSemconv)
		assert.Nil(t, s)
		assert.EqualError(t, err, fmt.Sprintf("unknown dialect %q", d))
	}
}

func TestStatusName(t *testing.T) {
	tests := []struct {
		in   pcommon.Value
		want string
	}{
		{pcommon.NewValueInt(0), "OK"},
		{pcommon.NewValueInt(5), "NOT_FOUND"},
		{pcommon.NewValueInt(16), "UNAUTHENTICATED"},
		{pcommon.NewValueInt(99), "99"},
		{pcommon.NewValueStr("NotFound"), "NOT_FOUND"},
		{pcommon.NewValueStr("Canceled"), "CANCELLED"},
		{pcommon.NewValueStr("DEADLINE_EXCEEDED"), "DEADLINE_EXCEEDED"},
		{pcommon.NewValueStr("12"), "UNIMPLEMENTED"},
		{pcommon.NewValueStr("weird"), "weird"},
		{pcommon.NewValueStr("not_found"), "NOT_FOUND"}, // Connect's spelling (otelconnect ≤ v0.9)
		{pcommon.NewValueStr("canceled"), "CANCELED"},   // Connect's code 1; each system's spelling is chosen later
		{pcommon.NewValueStr("CANCELED"), "CANCELED"},
		{pcommon.NewValueStr("ok"), "ok"},               // Connect never writes it; not a code name
		{pcommon.NewValueStr("cancelled"), "CANCELLED"}, // the conventions' example spelling
		{pcommon.NewValueDouble(14), "UNAVAILABLE"},
		{pcommon.NewValueDouble(1.5), "1.5"},
		{pcommon.NewValueBool(true), "true"},
		{pcommon.NewValueMap(), ""}, // no status, rather than its JSON
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, StatusName(tt.in), tt.in.AsString())
	}
}

func TestSplitTarget(t *testing.T) {
	for _, tt := range []struct {
		target string
		host   string
		port   int64
	}{
		// The examples of the semantic conventions' grpc.md (server.address).
		{"grpc.io:50051", "grpc.io", 50051},
		{"dns://1.2.3.4/grpc.io:50051", "grpc.io", 50051},
		{"unix:///run/containerd/containerd.sock", "/run/containerd/containerd.sock", 0},
		{"zk://zookeeper:2181/my-server", "zk://zookeeper:2181/my-server", 0},
		{"ipv4:198.51.100.123:50051,198.51.100.124:50051", "ipv4:198.51.100.123:50051,198.51.100.124:50051", 0},
		// A66's placeholder for a target it does not report.
		{"other", "", 0},
		{"", "", 0},
		// More of gRPC's name syntax.
		{"dns:///api.internal:443", "api.internal", 443},
		{"dns:api.internal:443", "api.internal", 443},
		{"dns:///api.internal", "api.internal", 0},
		{"dns:///[::1]:9000", "::1", 9000},
		{"passthrough:///127.0.0.1:50051", "127.0.0.1", 50051},
		{"localhost:8080", "localhost", 8080},
		{"api.internal", "api.internal", 0},
		{"[::1]", "::1", 0},
		{"unix:///run/x.sock", "/run/x.sock", 0},
		{"unix:/run/x.sock", "/run/x.sock", 0},
		{"unix:relative.sock", "relative.sock", 0},
		{"unix-abstract:grpc", "unix-abstract:grpc", 0},
		{"xds:///cart.shop:443", "xds:///cart.shop:443", 0},
		{"dns://8.8.8.8", "dns://8.8.8.8", 0},
		{"dns:///api.internal:99999", "api.internal", 0},
	} {
		host, port := splitTarget(tt.target)
		assert.Equal(t, tt.host, host, tt.target)
		assert.Equal(t, tt.port, port, tt.target)
	}
}

func TestRecognizeChecksTypeAndUnit(t *testing.T) {
	s := mustNew(t, SemconvLegacy, TargetSemconv)
	m := pmetric.NewMetric()
	m.SetName("rpc.server.duration")
	m.SetEmptyHistogram()
	m.SetUnit("ms")
	assert.NotNil(t, s.Recognize(pcommon.NewInstrumentationScope(), m))
	m.SetUnit("s") // not the unit this dialect uses: scaling would be wrong
	assert.Nil(t, s.Recognize(pcommon.NewInstrumentationScope(), m))
	m.SetUnit("ms")
	m.SetEmptyGauge()
	assert.Nil(t, s.Recognize(pcommon.NewInstrumentationScope(), m))
}

func TestUnitBugRecognisedByScopeVersion(t *testing.T) {
	s := mustNew(t, Semconv, TargetSemconv)
	m := pmetric.NewMetric()
	m.SetName("rpc.server.call.duration")
	m.SetUnit("s")
	m.SetEmptyHistogram()
	scope := pcommon.NewInstrumentationScope()
	scope.SetName(otelgrpcScope)
	scope.SetVersion("0.65.0")
	assert.Equal(t, 1000.0, s.Recognize(scope, m).Divisor)
	scope.SetVersion("0.66.0")
	assert.Equal(t, 1.0, s.Recognize(scope, m).Divisor)
}

func TestStartedOnlyIntoGRPCTarget(t *testing.T) {
	m := pmetric.NewMetric()
	m.SetName("grpc_server_started_total")
	m.SetEmptySum().SetIsMonotonic(true)
	assert.Nil(t, mustNew(t, GRPCPrometheus, TargetSemconv).Recognize(pcommon.NewInstrumentationScope(), m), "semconv has no started metric")
	r := mustNew(t, GRPCPrometheus, TargetGRPC).Recognize(pcommon.NewInstrumentationScope(), m)
	if assert.NotNil(t, r) {
		assert.Equal(t, ServerCallStarted, r.Concept)
	}
}

func TestPortOf(t *testing.T) {
	tests := []struct {
		in   pcommon.Value
		want int64
	}{
		{pcommon.NewValueInt(443), 443},
		{pcommon.NewValueStr("8443"), 8443},
		{pcommon.NewValueDouble(50051), 50051},
		{pcommon.NewValueStr("99999999999999999999"), 0}, // would overflow
		{pcommon.NewValueStr("abc"), 0},
		{pcommon.NewValueInt(-1), 0},
		{pcommon.NewValueInt(70000), 0},
		{pcommon.NewValueStr(""), 0},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, portOf(tt.in), tt.in.AsString())
	}
}
