package convert_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/aggregate"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/storetest"
)

func agentNamed(instance string) map[string]any {
	return map[string]any{"service.name": "api", "service.instance.id": instance, "k8s.pod.name": "pod-" + instance}
}

func TestAggregateSumsAgentsByLabel(t *testing.T) {
	st := storetest.New(t, storetest.Options{WithoutScopeInfo: true, Aggregate: []aggregate.RuleConfig{
		{Metrics: []string{"calls"}, By: []string{"service.name", "method"}},
	}})
	stats := st.Consume(batch(agentNamed("a"), counter("calls", "", pt{attrs: map[string]any{"method": "get", "user": "u1"}, start: 1, end: 10, v: 3})))
	assert.Equal(t, int64(1), stats.Aggregated)
	st.Consume(batch(agentNamed("b"), counter("calls", "", pt{attrs: map[string]any{"method": "get", "user": "u2"}, start: 1, end: 10, v: 4})))
	got := st.Series("calls_total")
	require.Len(t, got, 1, "%v", got)
	assert.Equal(t, 7.0, got[`job="api",method="get"`].Value)
	st.Consume(batch(agentNamed("a"), counter("calls", "", pt{attrs: map[string]any{"method": "get", "user": "u1"}, start: 1, end: 20, v: 5})))
	assert.Equal(t, 9.0, st.Series("calls_total")[`job="api",method="get"`].Value)
	// A restart: a new start, values from zero.
	st.Consume(batch(agentNamed("a"), counter("calls", "", pt{attrs: map[string]any{"method": "get", "user": "u1"}, start: 25, end: 30, v: 1})))
	assert.Equal(t, 10.0, st.Series("calls_total")[`job="api",method="get"`].Value)
	_ = pmetric.NewMetrics
}
