package grpcstatsprocessor

import (
	"context"
	"fmt"
	"testing"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/statsgate/statsgate/processor/grpcstatsprocessor/internal/dialect"
	"github.com/statsgate/statsgate/processor/grpcstatsprocessor/internal/metadata"
)

const benchPoints = 2000

// legacyBatch is one resource's otelgrpc v0.64 server durations: 20 methods
// × 5 statuses × 20 peers... flattened into benchPoints points of one metric.
func legacyBatch() pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("service.name", "cart")
	sm := rm.ScopeMetrics().AppendEmpty()
	sm.Scope().SetName("go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc")
	sm.Scope().SetVersion("0.64.0")
	m := sm.Metrics().AppendEmpty()
	m.SetName("rpc.server.duration")
	m.SetUnit("ms")
	h := m.SetEmptyHistogram()
	h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	for i := range benchPoints {
		dp := h.DataPoints().AppendEmpty()
		dp.Attributes().PutInt("rpc.grpc.status_code", int64(i%5))
		dp.Attributes().PutStr("rpc.method", fmt.Sprint("Method", i%20))
		dp.Attributes().PutStr("rpc.service", "shop.Cart")
		dp.Attributes().PutStr("rpc.system", "grpc")
		dp.Attributes().PutStr("tenant", fmt.Sprint("t", i/100))
		dp.SetCount(3)
		dp.SetSum(12)
		dp.ExplicitBounds().FromRaw([]float64{0, 5, 10, 25, 50, 75, 100, 250, 500, 750, 1000, 2500, 5000, 7500, 10000})
		dp.BucketCounts().FromRaw(make([]uint64, 16))
	}
	return md
}

// unrelatedBatch is benchPoints metrics of one point each that no dialect knows.
func unrelatedBatch() pmetric.Metrics {
	md := pmetric.NewMetrics()
	ms := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics()
	for i := range benchPoints {
		m := ms.AppendEmpty()
		m.SetName(fmt.Sprint("http.server.request.duration.", i%50))
		m.SetEmptyGauge().DataPoints().AppendEmpty().SetIntValue(1)
	}
	return md
}

func benchProcessor(b *testing.B, sinks []dialect.Dialect) *grpcStatsProcessor {
	cfg := createDefaultConfig().(*Config)
	cfg.Sinks, cfg.noSinks = sinks, len(sinks) == 0
	cfg.Methods.MaxPerService = 0 // the guard is measured on its own below
	p, err := NewFactory().CreateMetrics(context.Background(), processortest.NewNopSettings(metadata.Type), cfg, consumertest.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	return p.(*grpcStatsProcessor)
}

// runPerItem consumes a fresh copy of batch per iteration, timing only the
// processor, and reports ns and allocations per point (or per metric).
func runPerItem(b *testing.B, p *grpcStatsProcessor, batch pmetric.Metrics) {
	// A processor that does not mutate gets the same batch every time, as
	// the collector's fan-out would hand it; copying per iteration would
	// dwarf an operation that costs next to nothing.
	mutates := p.Capabilities().MutatesData
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += benchPoints {
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
}

// BenchmarkConvert converts otelgrpc v0.64 server durations (rename, ms→s
// on sum and bounds, attribute rewrite); ns/op is per data point.
func BenchmarkConvert(b *testing.B) {
	for _, sinks := range [][]dialect.Dialect{
		{dialect.SemconvLegacy},
		{dialect.Semconv, dialect.SemconvLegacy},
		{dialect.Semconv, dialect.GRPCNative, dialect.SemconvLegacy, dialect.OpenCensus, dialect.GRPCPrometheus},
	} {
		b.Run(fmt.Sprintf("sinks=%d", len(sinks)), func(b *testing.B) {
			runPerItem(b, benchProcessor(b, sinks), legacyBatch())
		})
	}
}

// BenchmarkPassThrough hands on metrics nobody recognises; ns/op is per metric.
func BenchmarkPassThrough(b *testing.B) {
	for _, n := range []int{0, 5} {
		sinks := dialect.All[:n]
		b.Run(fmt.Sprintf("sinks=%d", n), func(b *testing.B) {
			runPerItem(b, benchProcessor(b, sinks), unrelatedBatch())
		})
	}
}

// unitBugBatch is otelgrpc v0.65.0's server durations with canonical
// attributes: the conversion only rescales values and bounds.
func unitBugBatch() pmetric.Metrics {
	md := legacyBatch()
	sm := md.ResourceMetrics().At(0).ScopeMetrics().At(0)
	sm.Scope().SetVersion("0.65.0")
	m := sm.Metrics().At(0)
	m.SetName("rpc.server.call.duration")
	m.SetUnit("s")
	dps := m.Histogram().DataPoints()
	for i := 0; i < dps.Len(); i++ {
		attrs := dps.At(i).Attributes()
		attrs.Clear()
		attrs.PutStr("rpc.method", fmt.Sprint("shop.Cart/Method", i%20))
		attrs.PutStr("rpc.response.status_code", "OK")
		attrs.PutStr("rpc.system.name", "grpc")
	}
	return md
}

// BenchmarkRescale is the rename/scale path alone; ns/op is per data point.
func BenchmarkRescale(b *testing.B) {
	runPerItem(b, benchProcessor(b, dialect.All), unitBugBatch())
}
