package sink

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/statsgate/statsgate/processor/grpcstatsprocessor/internal/dialect"
)

func TestNewShapesTheDispatch(t *testing.T) {
	assert.Nil(t, New(nil), "no sink: nothing to walk")
	one := mustNew(t, dialect.GRPCNative)
	assert.Same(t, one, New([]dialect.Sink{one}), "one sink: called directly")
	var all []dialect.Sink
	for _, d := range dialect.All {
		all = append(all, mustNew(t, d))
	}
	c, ok := New(all).(*combined)
	if !assert.True(t, ok, "several sinks: one combined sink") {
		return
	}
	scope := pcommon.NewInstrumentationScope()
	for name, want := range map[string]dialect.Dialect{
		"grpc.server.call.duration":     dialect.GRPCNative,
		"rpc.server.duration":           dialect.SemconvLegacy,
		"grpc.io/server/server_latency": dialect.OpenCensus,
		"grpc_server_handling_seconds":  dialect.GRPCPrometheus,
	} {
		m := pmetric.NewMetric()
		m.SetName(name)
		m.SetEmptyHistogram()
		m.SetUnit(map[dialect.Dialect]string{dialect.GRPCNative: "s", dialect.SemconvLegacy: "ms", dialect.OpenCensus: "ms", dialect.GRPCPrometheus: ""}[want])
		r := c.Recognize(scope, m)
		if assert.NotNil(t, r, name) {
			assert.Equal(t, want, r.Dialect, name)
		}
	}
	m := pmetric.NewMetric()
	m.SetName("http.server.request.duration")
	m.SetEmptyHistogram()
	assert.Nil(t, c.Recognize(scope, m), "an unrelated metric is nobody's")
}

func mustNew(t *testing.T, d dialect.Dialect) dialect.Sink {
	t.Helper()
	s, err := dialect.New(d, dialect.TargetSemconv)
	require.NoError(t, err)
	return s
}
