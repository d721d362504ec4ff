package grpcstatsprocessor // import "github.com/statsgate/statsgate/processor/grpcstatsprocessor"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/processor"

	"github.com/statsgate/statsgate/processor/grpcstatsprocessor/internal/metadata"
)

// grpcStatsProcessor implements processor.Metrics directly rather than through
// processorhelper: the helper walks every batch to count data points, and the
// processor decides itself which batches need a walk at all.
type grpcStatsProcessor struct {
	cfg       *Config
	next      consumer.Metrics
	telemetry *metadata.TelemetryBuilder
}

var _ processor.Metrics = (*grpcStatsProcessor)(nil)

func newProcessor(set processor.Settings, cfg *Config, next consumer.Metrics) (*grpcStatsProcessor, error) {
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	return &grpcStatsProcessor{cfg: cfg, next: next, telemetry: tb}, nil
}

func (p *grpcStatsProcessor) Start(context.Context, component.Host) error { return nil }

func (p *grpcStatsProcessor) Shutdown(context.Context) error {
	p.telemetry.Shutdown()
	return nil
}

func (p *grpcStatsProcessor) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: false}
}

// ConsumeMetrics hands the batch on. No dialect is recognised yet, so every
// point passes through unchanged.
func (p *grpcStatsProcessor) ConsumeMetrics(ctx context.Context, md pmetric.Metrics) error {
	p.telemetry.ProcessorGrpcstatsPointsPassedThrough.Add(ctx, int64(md.DataPointCount()))
	return p.next.ConsumeMetrics(ctx, md)
}
