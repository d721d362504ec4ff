package agentprometheusexporter

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/metadatatest"
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
