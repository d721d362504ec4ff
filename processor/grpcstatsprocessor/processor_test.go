package grpcstatsprocessor

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/statsgate/statsgate/processor/grpcstatsprocessor/internal/metadatatest"
)

func TestUnrecognisedMetricsPassThroughUnchanged(t *testing.T) {
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })

	sink := new(consumertest.MetricsSink)
	set := metadatatest.NewSettings(tel)
	p, err := NewFactory().CreateMetrics(context.Background(), set, createDefaultConfig(), sink)
	require.NoError(t, err)
	require.NoError(t, p.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, p.Shutdown(context.Background())) })

	md := pmetric.NewMetrics()
	m := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	m.SetName("queue.depth")
	m.SetEmptyGauge().DataPoints().AppendEmpty().SetIntValue(7)
	m.Gauge().DataPoints().AppendEmpty().SetIntValue(9)
	want := pmetric.NewMetrics()
	md.CopyTo(want)

	require.NoError(t, p.ConsumeMetrics(context.Background(), md))
	require.Len(t, sink.AllMetrics(), 1)
	assert.Equal(t, want, sink.AllMetrics()[0])

	metadatatest.AssertEqualProcessorGrpcstatsPointsPassedThrough(t, tel,
		[]metricdata.DataPoint[int64]{{Value: 2}}, metricdatatest.IgnoreTimestamp())
}
