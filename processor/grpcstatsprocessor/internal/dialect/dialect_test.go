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
	for target, want := range map[string]struct {
		host string
		port int64
	}{
		"dns:///api.internal:443":        {"api.internal", 443},
		"passthrough:///127.0.0.1:50051": {"127.0.0.1", 50051},
		"localhost:8080":                 {"localhost", 8080},
		"dns:///[::1]:9000":              {"::1", 9000},
		"unix:///run/app.sock":           {"app.sock", 0},
	} {
		host, port := splitTarget(target)
		assert.Equal(t, want.host, host, target)
		assert.Equal(t, want.port, port, target)
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
