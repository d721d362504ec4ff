package processorbench

import (
	"context"
	"testing"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/statsgate/statsgate/internal/grpcstatstest"
)

// benchCase is one batch shape and the processors that handle it.
type benchCase struct {
	name  string
	batch func() pmetric.Metrics
	procs []string
}

var benchCases = []benchCase{
	{
		name:  "convert",
		batch: func() pmetric.Metrics { return grpcstatstest.LegacyBatch(batchPoints, false) },
		procs: []string{"ours-0sinks", "ours-1sink", "ours-2sinks", "ours-5sinks", metricstransform},
	},
	{
		name:  "convert-strcode",
		batch: func() pmetric.Metrics { return grpcstatstest.LegacyBatch(batchPoints, true) },
		procs: []string{"ours-1sink", "ours-5sinks", metricstransform},
	},
	{
		name:  "passthrough",
		batch: func() pmetric.Metrics { return grpcstatstest.UnrelatedBatch(batchPoints) },
		procs: []string{"ours-0sinks", "ours-5sinks", metricstransform},
	},
}

// BenchmarkProcess consumes a fresh copy of a batch per iteration (both
// processors change the batches they are given), copied with the timer
// stopped, so only ConsumeMetrics is timed; one op is one data point (one
// metric in passthrough, where every metric has one point).
func BenchmarkProcess(b *testing.B) {
	for _, c := range benchCases {
		batch := c.batch()
		for _, name := range c.procs {
			b.Run("case="+c.name+"/proc="+name, func(b *testing.B) {
				p := newProcessor(b, name, consumertest.NewNop())
				// A processor that declares it leaves batches alone (ours
				// without sinks) is handed the same batch every time, as the
				// collector's fan-out would: copying a batch for an op that
				// costs next to nothing would make the run last hours.
				mutates := p.Capabilities().MutatesData
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i += batchPoints {
					md := batch
					if mutates {
						b.StopTimer()
						md = pmetric.NewMetrics()
						batch.CopyTo(md)
						b.StartTimer()
					}
					if err := p.ConsumeMetrics(context.Background(), md); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
