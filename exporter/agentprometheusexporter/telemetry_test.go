package agentprometheusexporter

import (
	"context"
	"net/http"
	"runtime"
	"testing"
	"time"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/metadatatest"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/scrape"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/storetest"
	"github.com/statsgate/statsgate/internal/testnet"
)

func TestSelfTelemetry(t *testing.T) {
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	te := startExporterWith(t, metadatatest.NewSettings(tel), func(c *Config) {
		c.MaxSeriesPerResource = 2
		c.MetricExpiration = time.Minute
	})

	md, ms := batch(agent)
	dps := sum(ms, "c", "", true, pmetric.AggregationTemporalityCumulative)
	for _, k := range []string{"a", "b", "c"} { // c is over the per-resource limit
		dp := dps.AppendEmpty()
		dp.SetIntValue(1)
		dp.Attributes().PutStr("k", k)
	}
	sum(ms, "bad", "", false, pmetric.AggregationTemporalityDelta).AppendEmpty().SetIntValue(1)
	te.consume(md)

	md, ms = batch(agent)
	dp := sum(ms, "c", "", true, pmetric.AggregationTemporalityCumulative).AppendEmpty()
	dp.Attributes().PutStr("k", "a")
	dp.SetFlags(pmetric.DefaultDataPointFlags.WithNoRecordedValue(true))
	te.consume(md)

	te.clock.advance(2 * time.Minute)
	te.sweep()
	te.scrape()

	reason := func(r string) attribute.Set { return attribute.NewSet(attribute.String("reason", r)) }
	metadatatest.AssertEqualExporterAgentprometheusSeriesCreated(t, tel, []metricdata.DataPoint[int64]{{Value: 2}}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualExporterAgentprometheusSeriesRefused(t, tel,
		[]metricdata.DataPoint[int64]{{Attributes: reason("max_series_per_resource"), Value: 1}}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualExporterAgentprometheusPointsDropped(t, tel,
		[]metricdata.DataPoint[int64]{{Attributes: reason("unsupported_temporality"), Value: 1}}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualExporterAgentprometheusSeriesRemoved(t, tel, []metricdata.DataPoint[int64]{
		{Attributes: reason("no_recorded_value"), Value: 1},
		{Attributes: reason("expired"), Value: 1},
	}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualExporterAgentprometheusSeriesActive(t, tel, []metricdata.DataPoint[int64]{{Value: 0}}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualExporterAgentprometheusDescriptorsCached(t, tel, []metricdata.DataPoint[int64]{{Value: 1}}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualExporterAgentprometheusDescriptorCacheMisses(t, tel, []metricdata.DataPoint[int64]{{Value: 1}}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualExporterAgentprometheusDescriptorCacheHits(t, tel, []metricdata.DataPoint[int64]{{Value: 1}}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualExporterAgentprometheusDescriptorCacheEvictions(t, tel, []metricdata.DataPoint[int64]{{Value: 0}}, metricdatatest.IgnoreTimestamp())
	got, err := tel.GetMetric("otelcol_exporter_agentprometheus_scrape_duration")
	require.NoError(t, err)
	hist := got.Data.(metricdata.Histogram[float64])
	require.Len(t, hist.DataPoints, 1)
	require.Equal(t, uint64(1), hist.DataPoints[0].Count)
	format, _ := hist.DataPoints[0].Attributes.Value("format")
	require.Equal(t, "text", format.AsString())
}

// gaugeNames are the exporter's observed gauges.
var gaugeNames = []string{
	"otelcol_exporter_agentprometheus_series_active",
	"otelcol_exporter_agentprometheus_descriptors_cached",
	"otelcol_exporter_agentprometheus_descriptor_cache_hits",
	"otelcol_exporter_agentprometheus_descriptor_cache_misses",
	"otelcol_exporter_agentprometheus_descriptor_cache_evictions",
}

// TestShutdownUnregistersTheGauges: the gauges are observed while the
// exporter runs and no longer once it has shut down. Otherwise an exporter
// replaced by a reload would go on reporting its series next to the new
// one's, and its callbacks would keep its whole store reachable from the
// meter provider.
func TestShutdownUnregistersTheGauges(t *testing.T) {
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	cfg := createDefaultConfig().(*Config)
	cfg.Server.NetAddr.Endpoint = testnet.FreeEndpoint(t)
	cfg.Scrape.DrainTimeout = 0
	exp, err := newAgentPrometheusExporter(metadatatest.NewSettings(tel), cfg, newFakeClock().clock())
	require.NoError(t, err)
	ctx := context.Background()
	observed := func() []string {
		var names []string
		for _, name := range gaugeNames {
			if _, err := tel.GetMetric(name); err == nil {
				names = append(names, name)
			}
		}
		return names
	}

	require.NoError(t, exp.start(ctx, componenttest.NewNopHost()))
	md, ms := batch(agent)
	gauge(ms, "g", 1, nil)
	require.NoError(t, exp.consumeMetrics(ctx, md))
	assert.Equal(t, gaugeNames, observed(), "observed while running")
	metadatatest.AssertEqualExporterAgentprometheusSeriesActive(t, tel, []metricdata.DataPoint[int64]{{Value: 1}}, metricdatatest.IgnoreTimestamp())
	require.NoError(t, exp.shutdown(ctx))
	assert.Empty(t, observed(), "observed after shutdown")

	// The same instance can start again, and is observed again.
	require.NoError(t, exp.start(ctx, componenttest.NewNopHost()))
	metadatatest.AssertEqualExporterAgentprometheusSeriesActive(t, tel, []metricdata.DataPoint[int64]{{Value: 1}}, metricdatatest.IgnoreTimestamp())
	require.NoError(t, exp.shutdown(ctx))
	assert.Empty(t, observed(), "observed after the second shutdown")

	// Nothing the telemetry holds keeps the shut-down exporter's series. Two
	// collections: sync.Pool keeps what it holds through one.
	series := weak.Make(exp.store)
	exp = nil
	runtime.GC()
	runtime.GC()
	assert.Nil(t, series.Value(), "the store of a shut-down exporter is still reachable")
}

// TestScrapeTelemetryDoesNotAllocate: counting a scrape and recording its
// duration by format use attribute sets and option lists prepared once.
func TestScrapeTelemetryDoesNotAllocate(t *testing.T) {
	if storetest.RaceEnabled {
		t.Skip("the race detector allocates")
	}
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	exp, err := newAgentPrometheusExporter(metadatatest.NewSettings(tel), createDefaultConfig().(*Config), wallClock)
	require.NoError(t, err)
	for _, accept := range []string{
		"text/plain;version=0.0.4",
		"application/openmetrics-text;version=1.0.0;escaping=allow-utf-8",
		"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited",
	} {
		format := scrape.Negotiate(http.Header{"Accept": []string{accept}}, true)
		record := func() { exp.Scraped(format, scrape.OutcomeServed, time.Millisecond) }
		record() // the first recording of a series creates it
		assert.Zero(t, testing.AllocsPerRun(100, record), "allocations per %s scrape", format.Exposition)
	}
	got, err := tel.GetMetric("otelcol_exporter_agentprometheus_scrape_duration")
	require.NoError(t, err)
	counts := map[string]uint64{}
	for _, dp := range got.Data.(metricdata.Histogram[float64]).DataPoints {
		format, _ := dp.Attributes.Value("format")
		counts[format.AsString()] += dp.Count
	}
	// AllocsPerRun runs the function once more than asked, to warm up.
	assert.Equal(t, map[string]uint64{"text": 102, "openmetrics": 102, "protobuf": 102}, counts)
}
