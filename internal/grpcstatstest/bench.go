package grpcstatstest

import (
	"context"
	"testing"

	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// ConsumePerItem has c consume batch, which holds items data points (or
// metrics of one point each), until b.N items are consumed, and reports
// allocations: ns/op and allocs/op are per item. Each round gets a fresh
// copy, made with the timer stopped, so that only ConsumeMetrics is timed;
// a consumer that declares it leaves batches alone (MutatesData false) gets
// the same batch every round, as the collector's fan-out would hand it:
// copying a batch for an operation that costs next to nothing would make
// the run last hours.
func ConsumePerItem(b *testing.B, c consumer.Metrics, batch pmetric.Metrics, items int) {
	b.Helper()
	mutates := c.Capabilities().MutatesData
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += items {
		md := batch
		if mutates {
			b.StopTimer()
			md = pmetric.NewMetrics()
			batch.CopyTo(md)
			b.StartTimer()
		}
		if err := c.ConsumeMetrics(context.Background(), md); err != nil {
			b.Fatal(err)
		}
	}
}
