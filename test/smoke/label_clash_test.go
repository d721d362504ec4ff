package smoke

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	"go.yaml.in/yaml/v3"

	"github.com/statsgate/statsgate/test/internal/gatewaytest"
)

// TestLabelClashThroughTheBinary runs the default config with a UTF-8
// translation_strategy and sends a gauge whose points differ only in label
// names that escape alike ({a.b="x"}, {a-b="x"}, {a_b="x"}): a scraper
// without UTF-8 names must get one series, the first point's, a scraper with
// UTF-8 names the same one, and the two others are counted as label_clash.
func TestLabelClashThroughTheBinary(t *testing.T) {
	b, err := os.ReadFile(gatewayConfig)
	require.NoError(t, err)
	var cfg map[string]any
	require.NoError(t, yaml.Unmarshal(b, &cfg))
	cfg["exporters"].(map[string]any)["agentprometheus"].(map[string]any)["translation_strategy"] = "NoUTF8EscapingWithSuffixes"
	out, err := yaml.Marshal(cfg)
	require.NoError(t, err)
	config := filepath.Join(t.TempDir(), "utf8.yaml")
	require.NoError(t, os.WriteFile(config, out, 0o600))

	otlp, metrics, telemetry := startGateway(t, config)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	exp, err := otlpmetricgrpc.New(ctx, otlpmetricgrpc.WithEndpoint(otlp), otlpmetricgrpc.WithInsecure())
	require.NoError(t, err)
	defer func() { require.NoError(t, exp.Shutdown(ctx)) }()
	now := time.Now()
	var points []metricdata.DataPoint[float64]
	for i, key := range []string{"a.b", "a-b", "a_b"} {
		points = append(points, metricdata.DataPoint[float64]{Attributes: attribute.NewSet(attribute.String(key, "x")), Time: now, Value: float64(i + 1)})
	}
	require.NoError(t, exp.Export(ctx, &metricdata.ResourceMetrics{
		Resource: resource.NewSchemaless(attribute.String("service.name", "clash")),
		ScopeMetrics: []metricdata.ScopeMetrics{{
			Scope:   instrumentation.Scope{Name: "statsgate/smoke"},
			Metrics: []metricdata.Metrics{{Name: "clash.level", Data: metricdata.Gauge[float64]{DataPoints: points}}},
		}},
	}))

	for _, tc := range []struct{ accept, family, label string }{
		{"text/plain;version=0.0.4", "clash_level", "a_b"},
		{"text/plain;version=1.0.0;escaping=allow-utf-8", "clash.level", "a.b"},
	} {
		var got []string
		require.Eventually(t, func() bool {
			got = seriesOf(t, "http://"+metrics+"/metrics", tc.accept, tc.family, tc.label)
			return len(got) > 0
		}, 10*time.Second, 100*time.Millisecond, "%s: %s never appeared", tc.accept, tc.family)
		assert.Equal(t, []string{"x 1"}, got, "%s: one series, the first point's", tc.accept)
	}
	var dropped float64
	require.Eventually(t, func() bool {
		fams, _, _, err := gatewaytest.Scrape("http://" + telemetry + "/metrics")
		if err != nil {
			return false
		}
		dropped, _ = gatewaytest.Value(fams, "otelcol_exporter_agentprometheus_points_dropped", map[string]string{"reason": "label_clash"})
		return dropped == 2
	}, 10*time.Second, 100*time.Millisecond, "points dropped as label_clash: %v, want 2", dropped)
}

// seriesOf scrapes url asking for accept, a text format, and returns, for
// every series of family, the value of label and the sample's value.
func seriesOf(t *testing.T, url, accept, family, label string) []string {
	t.Helper()
	fams, _, _, err := gatewaytest.ScrapeAccepting(url, accept)
	require.NoError(t, err, accept)
	var got []string
	for _, m := range fams[family].GetMetric() {
		got = append(got, gatewaytest.LabelValue(m, label)+" "+strconv.FormatFloat(m.GetGauge().GetValue(), 'g', -1, 64))
	}
	return got
}
