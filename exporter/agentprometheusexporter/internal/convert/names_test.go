package convert_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/convert"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/descriptors"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/prommodel"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/storetest"
)

// TestMetricNames checks the family name of each kind of metric under the
// four translation strategies. With suffixes, a monotonic sum ends in
// _total, units become suffixes (s: _seconds, By: _bytes, per unit: _per_),
// annotations ({requests}) give none, and unit 1 gives _ratio to gauges
// only; underscore escaping turns every character outside [a-zA-Z0-9:] into
// '_' and prefixes a leading digit with '_'. UTF-8 strategies keep the name.
func TestMetricNames(t *testing.T) {
	cum := pmetric.AggregationTemporalityCumulative
	p := pt{attrs: map[string]any{"k": "v"}, end: 1, v: 1}
	tests := []struct {
		name   string
		metric func(pmetric.MetricSlice)
		kind   prommodel.Kind
		// want per naming: underscore escaping with and without suffixes,
		// no UTF-8 escaping with suffixes, no translation.
		want [4]string
	}{
		{"counter with an annotation unit", counter("http.server.requests", "{requests}", p), prommodel.KindCounter,
			[4]string{"http_server_requests_total", "http_server_requests", "http.server.requests_total", "http.server.requests"}},
		{"counter already ending in total", counter("jobs_total", "", p), prommodel.KindCounter,
			[4]string{"jobs_total", "jobs_total", "jobs_total", "jobs_total"}},
		{"counter of unit 1 is no ratio", counter("errors", "1", p), prommodel.KindCounter,
			[4]string{"errors_total", "errors", "errors_total", "errors"}},
		{"non-monotonic sum: no total", sum("queue.size", "{items}", cum, false, p), prommodel.KindGauge,
			[4]string{"queue_size", "queue_size", "queue.size", "queue.size"}},
		{"gauge in bytes", gauge("memory.usage", "By", p), prommodel.KindGauge,
			[4]string{"memory_usage_bytes", "memory_usage", "memory.usage_bytes", "memory.usage"}},
		{"gauge of unit 1 is a ratio", gauge("cpu.utilization", "1", p), prommodel.KindGauge,
			[4]string{"cpu_utilization_ratio", "cpu_utilization", "cpu.utilization_ratio", "cpu.utilization"}},
		{"per unit", gauge("net.io", "By/s", p), prommodel.KindGauge,
			[4]string{"net_io_bytes_per_second", "net_io", "net.io_bytes_per_second", "net.io"}},
		{"histogram in seconds", histogram("rpc.duration", "s", cum, hp{end: 1, bounds: []float64{1}, counts: []uint64{1, 0}, count: 1}), prommodel.KindHistogram,
			[4]string{"rpc_duration_seconds", "rpc_duration", "rpc.duration_seconds", "rpc.duration"}},
		{"summary in milliseconds", func(ms pmetric.MetricSlice) {
			m := ms.AppendEmpty()
			m.SetName("gc.pause")
			m.SetUnit("ms")
			m.SetEmptySummary().DataPoints().AppendEmpty().SetTimestamp(at(1))
		}, prommodel.KindSummary,
			[4]string{"gc_pause_milliseconds", "gc_pause", "gc.pause_milliseconds", "gc.pause"}},
		{"UTF-8 letters", gauge("température", "", p), prommodel.KindGauge,
			[4]string{"temp_rature", "temp_rature", "température", "température"}},
		{"leading digit", gauge("2xx.responses", "", p), prommodel.KindGauge,
			[4]string{"_2xx_responses", "_2xx_responses", "2xx.responses", "2xx.responses"}},
	}
	for i, naming := range []storetest.Naming{
		storetest.UnderscoreEscapingWithSuffixes, storetest.UnderscoreEscapingWithoutSuffixes,
		storetest.NoUTF8EscapingWithSuffixes, storetest.NoTranslation,
	} {
		t.Run(naming.String(), func(t *testing.T) {
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					st := newStore(t, naming)
					stats := st.Consume(batch(agent(), tt.metric))
					assert.Equal(t, [convert.NumReasons]int64{}, stats.Dropped)
					assert.Equal(t, int64(1), stats.Created)
					require.Equal(t, []string{tt.want[i]}, st.FamilyNames())
					assert.Equal(t, tt.kind, st.Families()[0].Kind)
				})
			}
		})
	}
}

// TestFamilyKeepsHelpAndUnit: the description is the family's help, the
// OTLP unit its unit, whatever the name became.
func TestFamilyKeepsHelpAndUnit(t *testing.T) {
	st := newStore(t, storetest.UnderscoreEscapingWithSuffixes)
	md := batch(agent(), gauge("memory.usage", "By", pt{end: 1, v: 1}))
	md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).SetDescription("Memory in use.")
	st.Consume(md)
	f := st.FamilyNamed("memory_usage_bytes")
	require.NotNil(t, f)
	assert.Equal(t, "Memory in use.", f.Help)
	assert.Equal(t, "By", f.Unit)
}

// TestNamespace: the namespace prefixes every name and target_info, made a
// valid name first under underscore escaping (my-gw: my_gw).
func TestNamespace(t *testing.T) {
	tests := []struct {
		naming              storetest.Naming
		namespace           string
		wantName, wantTInfo string
	}{
		{storetest.UnderscoreEscapingWithSuffixes, "gw", "gw_rpc_duration_seconds", "gw_target_info"},
		{storetest.UnderscoreEscapingWithSuffixes, "my-gw", "my_gw_rpc_duration_seconds", "my_gw_target_info"},
		{storetest.UnderscoreEscapingWithoutSuffixes, "gw", "gw_rpc_duration", "gw_target_info"},
		{storetest.NoUTF8EscapingWithSuffixes, "gw", "gw_rpc.duration_seconds", "gw_target_info"},
		{storetest.NoTranslation, "gw", "gw_rpc.duration", "gw_target_info"},
	}
	for _, tt := range tests {
		t.Run(tt.naming.String()+"/"+tt.namespace, func(t *testing.T) {
			st := newStore(t, tt.naming)
			descs, err := descriptors.NewCache(100)
			require.NoError(t, err)
			st.Conv = convert.New(convert.Options{
				Namespace: tt.namespace, WithoutScopeInfo: true,
				WithSuffixes: tt.naming.WithSuffixes, UTF8Allowed: tt.naming.UTF8Allowed,
			}, st.Store, descs, st.Now)
			st.Consume(batch(agent(), gauge("rpc.duration", "s", pt{end: 1, v: 1})))
			assert.Equal(t, []string{tt.wantName}, st.FamilyNames())
			assert.Equal(t, tt.wantTInfo, st.Conv.TargetInfoName)
		})
	}
}

// TestInvalidNames: a metric whose name translates to nothing, or an
// attribute whose key does, is counted InvalidName per point; the other
// points of the batch are stored.
func TestInvalidNames(t *testing.T) {
	good := gauge("good", "", pt{end: 1, v: 1})
	tests := []struct {
		name    string
		naming  storetest.Naming
		bad     func(pmetric.MetricSlice)
		invalid int64
		created int64 // good included
	}{
		{"empty name", storetest.NoTranslation, gauge("", "", pt{end: 1}, pt{end: 2}), 2, 1},
		{"empty name escaped", storetest.UnderscoreEscapingWithSuffixes, gauge("", "", pt{end: 1}), 1, 1},
		{"only invalid characters", storetest.UnderscoreEscapingWithSuffixes, gauge("...", "", pt{end: 1}, pt{end: 2}), 2, 1},
		{"only invalid characters without suffixes", storetest.UnderscoreEscapingWithoutSuffixes, gauge("-.-", "", pt{end: 1}), 1, 1},
		{"kept as UTF-8", storetest.NoUTF8EscapingWithSuffixes, gauge("...", "", pt{end: 1}), 0, 2},
		{"attribute of underscores only", storetest.UnderscoreEscapingWithSuffixes,
			gauge("g", "", pt{attrs: map[string]any{"__": "x"}, end: 1}, pt{attrs: map[string]any{"ok": "x"}, end: 1}), 1, 2},
		{"attribute of invalid characters", storetest.UnderscoreEscapingWithSuffixes,
			gauge("g", "", pt{attrs: map[string]any{"..": "x"}, end: 1}), 1, 1},
		{"attribute of underscores only in UTF-8", storetest.NoTranslation,
			gauge("g", "", pt{attrs: map[string]any{"_": "x"}, end: 1}), 1, 1},
		{"attribute of underscores once ':' is '_'", storetest.NoUTF8EscapingWithSuffixes,
			gauge("g", "", pt{attrs: map[string]any{":_": "x"}, end: 1}, pt{attrs: map[string]any{"::": "x"}, end: 1}, pt{attrs: map[string]any{"a:": "x"}, end: 1}), 2, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := newStore(t, tt.naming)
			stats := st.Consume(batch(agent(), tt.bad, good))
			assert.Equal(t, dropped(map[convert.Reason]int64{convert.InvalidName: tt.invalid}), stats.Dropped)
			assert.Equal(t, tt.created, stats.Created)
			assert.Equal(t, map[string]storetest.Series{agentLabels: {Value: 1, Timestamp: ns(1)}}, st.Series("good"))
		})
	}
}
