package grpcstatsprocessor

import (
	"context"
	"fmt"
	"testing"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/statsgate/statsgate/internal/grpcstatstest"
	"github.com/statsgate/statsgate/processor/grpcstatsprocessor/internal/dialect"
	"github.com/statsgate/statsgate/processor/grpcstatsprocessor/internal/metadata"
)

const benchPoints = 2000

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
// on sum and bounds, attribute rewrite) from grpcstatstest.LegacyBatch, the
// batch bench/processorbench compares with contrib; ns/op is per data point.
func BenchmarkConvert(b *testing.B) {
	for _, sinks := range [][]dialect.Dialect{
		{dialect.SemconvLegacy},
		{dialect.Semconv, dialect.SemconvLegacy},
		{dialect.Semconv, dialect.GRPCNative, dialect.SemconvLegacy, dialect.OpenCensus, dialect.GRPCPrometheus},
	} {
		b.Run(fmt.Sprintf("sinks=%d", len(sinks)), func(b *testing.B) {
			runPerItem(b, benchProcessor(b, sinks), grpcstatstest.LegacyBatch(benchPoints, false))
		})
	}
}

// BenchmarkPassThrough hands on metrics nobody recognises; ns/op is per metric.
func BenchmarkPassThrough(b *testing.B) {
	for _, n := range []int{0, 5} {
		sinks := dialect.All[:n]
		b.Run(fmt.Sprintf("sinks=%d", n), func(b *testing.B) {
			runPerItem(b, benchProcessor(b, sinks), grpcstatstest.UnrelatedBatch(benchPoints))
		})
	}
}

// unitBugBatch is otelgrpc v0.65.0's server durations with canonical
// attributes: the conversion only rescales values and bounds.
func unitBugBatch() pmetric.Metrics {
	md := grpcstatstest.LegacyBatch(benchPoints, false)
	sm := md.ResourceMetrics().At(0).ScopeMetrics().At(0)
	sm.Scope().SetVersion("0.65.0")
	m := sm.Metrics().At(0)
	m.SetName("rpc.server.call.duration")
	m.SetUnit("s")
	dps := m.Histogram().DataPoints()
	for i := 0; i < dps.Len(); i++ {
		attrs := dps.At(i).Attributes()
		attrs.Clear()
		attrs.PutStr("rpc.method", fmt.Sprint("shop.Cart/Method", i%grpcstatstest.Methods))
		attrs.PutStr("rpc.response.status_code", "OK")
		attrs.PutStr("rpc.system.name", "grpc")
	}
	return md
}

// BenchmarkRescale is the rename/scale path alone; ns/op is per data point.
func BenchmarkRescale(b *testing.B) {
	runPerItem(b, benchProcessor(b, dialect.All), unitBugBatch())
}
