package agentprometheusexporter // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/metadata"
)

// NewFactory returns the factory of the agentprometheus exporter.
func NewFactory() exporter.Factory {
	return exporter.NewFactory(
		metadata.Type,
		createDefaultConfig,
		exporter.WithMetrics(createMetrics, metadata.MetricsStability),
	)
}

func createMetrics(ctx context.Context, set exporter.Settings, cfg component.Config) (exporter.Metrics, error) {
	c := cfg.(*Config)
	exp, err := newAgentPrometheusExporter(set, c, wallClock)
	if err != nil {
		return nil, err
	}
	return exporterhelper.NewMetrics(ctx, set, cfg,
		exp.consumeMetrics,
		exporterhelper.WithStart(exp.start),
		exporterhelper.WithShutdown(exp.shutdown),
		// The exporter copies what it keeps out of the batch and never
		// changes it, so the pipeline need not clone batches for it.
		exporterhelper.WithCapabilities(consumer.Capabilities{MutatesData: false}),
		// Serving is local and synchronous: no timeout or retry. The queue
		// is contrib's sending_queue, off unless configured.
		exporterhelper.WithTimeout(exporterhelper.TimeoutConfig{Timeout: 0}),
		exporterhelper.WithQueue(c.QueueBatchConfig),
	)
}
