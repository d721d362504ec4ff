package agentprometheusexporter

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/metadata"
	"github.com/statsgate/statsgate/internal/testnet"
)

// richAgent has resource attributes for the patterns to pick from.
var richAgent = map[string]any{
	"service.name": "api", "service.namespace": "shop", "service.instance.id": "i-1",
	"host.name": "h1", "k8s.pod.name": "p-1", "k8s.pod.uid": "u-1", "k8s.node.name": "n-1", "cloud.region": "eu",
}

func TestResourceConstantLabelsPatterns(t *testing.T) {
	for name, tc := range map[string]struct {
		included, excluded []string
		want               string
	}{
		"names and a wildcard": {
			included: []string{"host.name", "k8s.pod.*"},
			want:     `g{host_name="h1",instance="i-1",job="shop/api",k8s_pod_name="p-1",k8s_pod_uid="u-1"} 1`,
		},
		"an exclusion wins": {
			included: []string{"k8s.*"}, excluded: []string{"k8s.pod.u?d"},
			want: `g{instance="i-1",job="shop/api",k8s_node_name="n-1",k8s_pod_name="p-1"} 1`,
		},
		"only exclusions take every other attribute": {
			excluded: []string{"service.*", "k8s.*"},
			want:     `g{cloud_region="eu",host_name="h1",instance="i-1",job="shop/api"} 1`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			te := startExporter(t, func(c *Config) {
				c.ResourceConstantLabels.Included, c.ResourceConstantLabels.Excluded = tc.included, tc.excluded
				c.WithoutScopeInfo, c.SendTimestamps = true, false
			})
			md, ms := batch(richAgent)
			gauge(ms, "g", 1, nil)
			te.consume(md)
			body, _ := te.scrapeRaw("text/plain")
			assert.Contains(t, body, tc.want+"\n")
		})
	}
}

func TestResourceToTelemetryConversionExcludingServiceAttributes(t *testing.T) {
	te := startExporter(t, func(c *Config) {
		c.ResourceToTelemetryConversion.Enabled = true
		c.ResourceToTelemetryConversion.ExcludeServiceAttributes = true
		c.WithoutScopeInfo, c.SendTimestamps = true, false
	})
	md, ms := batch(agent)
	gauge(ms, "g", 1, map[string]any{"host.name": "from the point"})
	te.consume(md)
	body, _ := te.scrapeRaw("text/plain")
	assert.Contains(t, body, `g{host_name="h1",instance="i-1",job="shop/api"} 1`+"\n",
		"service attributes left out; the resource's host.name replaces the point's, as contrib copies it onto the point")
}

func TestAddMetricSuffixesWhenItsGateIsOff(t *testing.T) {
	setGate(t, disableAddMetricSuffixesGate, false)
	te := startExporter(t, func(c *Config) { c.AddMetricSuffixes, c.WithoutScopeInfo, c.SendTimestamps = false, true, false })
	md, ms := batch(agent)
	m := ms.AppendEmpty()
	m.SetName("requests")
	m.SetUnit("s")
	s := m.SetEmptySum()
	s.SetIsMonotonic(true)
	s.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	dp := s.DataPoints().AppendEmpty()
	dp.SetTimestamp(ts(time.Minute))
	dp.SetIntValue(3)
	te.consume(md)
	body, _ := te.scrapeRaw("text/plain")
	assert.Contains(t, body, `requests{instance="i-1",job="shop/api"} 3`, "neither _seconds nor _total")
}

func TestKeepIdentifyingResourceAttributesGate(t *testing.T) {
	setGate(t, keepIdentifyingResourceAttributesGate, true)
	te := startExporter(t, nil)
	md, ms := batch(agent)
	gauge(ms, "g", 1, nil)
	te.consume(md)
	body, _ := te.scrapeRaw("text/plain")
	assert.Contains(t, body, `target_info{host_name="h1",instance="i-1",job="shop/api",service_instance_id="i-1",service_name="api",service_namespace="shop"} 1`)
}

// sending_queue puts the collector's queue in front of the exporter: a batch
// is accepted into it and stored by its consumers, and the queue reports
// itself in the exporter's telemetry.
func TestSendingQueueIsApplied(t *testing.T) {
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	set := exportertest.NewNopSettings(metadata.Type)
	set.TelemetrySettings = tel.NewTelemetrySettings()

	cfg := createDefaultConfig().(*Config)
	cfg.Server.NetAddr.Endpoint = testnet.FreeEndpoint(t)
	cfg.Scrape.DrainTimeout = 0
	queue := cfg.QueueBatchConfig.GetOrInsertDefault()
	queue.QueueSize = 7
	queue.Batch.GetOrInsertDefault().FlushTimeout = 10 * time.Millisecond
	require.NoError(t, cfg.Validate())

	exp, err := NewFactory().CreateMetrics(context.Background(), set, cfg)
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, exp.Shutdown(context.Background())) })

	capacity, err := tel.GetMetric("otelcol_exporter_queue_capacity")
	require.NoError(t, err, "the queue reports its capacity")
	assert.Equal(t, int64(7), capacity.Data.(metricdata.Gauge[int64]).DataPoints[0].Value)

	for i := range 3 {
		md, ms := batch(agent)
		gauge(ms, "g", float64(i), map[string]any{"n": i})
		require.NoError(t, exp.ConsumeMetrics(context.Background(), md))
	}
	te := &testExporter{t: t, endpoint: cfg.Server.NetAddr.Endpoint}
	require.Eventually(t, func() bool {
		body, _ := te.scrapeRaw("text/plain")
		return strings.Count(body, "\ng{") == 3
	}, 5*time.Second, 10*time.Millisecond, "every queued batch is stored")
}

// A const label that is not a legacy name (contrib's README has one) is
// served as client_golang serves it: quoted for a scraper that takes UTF-8,
// escaped to underscores for one that does not.
func TestConstLabelWithASpace(t *testing.T) {
	te := startExporter(t, func(c *Config) {
		c.ConstLabels = map[string]string{"another label": "spaced value"}
		c.WithoutScopeInfo, c.SendTimestamps = true, false
	})
	md, ms := batch(agent)
	gauge(ms, "g", 1, nil)
	te.consume(md)
	body, _ := te.scrapeRaw("text/plain;version=0.0.4;escaping=allow-utf-8")
	assert.Contains(t, body, `g{"another label"="spaced value",instance="i-1",job="shop/api"} 1`+"\n")
	body, _ = te.scrapeRaw("text/plain")
	assert.Contains(t, body, `g{another_label="spaced value",instance="i-1",job="shop/api"} 1`+"\n")
}
