package processorbench

import (
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
// processors change the batches they are given; ours without sinks declares
// it does not and gets the same batch), copied with the timer stopped, so
// only ConsumeMetrics is timed (grpcstatstest.ConsumePerItem); one op is one
// data point (one metric in passthrough, where every metric has one point).
func BenchmarkProcess(b *testing.B) {
	for _, c := range benchCases {
		batch := c.batch()
		for _, name := range c.procs {
			b.Run("case="+c.name+"/proc="+name, func(b *testing.B) {
				grpcstatstest.ConsumePerItem(b, newProcessor(b, name, consumertest.NewNop()), batch, batchPoints)
			})
		}
	}
}
