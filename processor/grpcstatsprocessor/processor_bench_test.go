package grpcstatsprocessor

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/statsgate/statsgate/internal/grpcstatstest"
	"github.com/statsgate/statsgate/processor/grpcstatsprocessor/internal/dialect"
	"github.com/statsgate/statsgate/processor/grpcstatsprocessor/internal/metadata"
)

const benchPoints = 2000

// benchProcessor is the processor with the given sinks and method guard
// bound (0: off; the other benchmarks leave the guard to BenchmarkMethodGuard).
func benchProcessor(b *testing.B, sinks []dialect.Dialect, maxPerService int) *grpcStatsProcessor {
	cfg := createDefaultConfig().(*Config)
	cfg.Sinks, cfg.noSinks = sinks, len(sinks) == 0
	cfg.Methods.MaxPerService = maxPerService
	p, err := NewFactory().CreateMetrics(context.Background(), processortest.NewNopSettings(metadata.Type), cfg, consumertest.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	return p.(*grpcStatsProcessor)
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
			grpcstatstest.ConsumePerItem(b, benchProcessor(b, sinks, 0), grpcstatstest.LegacyBatch(benchPoints, false), benchPoints)
		})
	}
}

// BenchmarkPassThrough hands on metrics nobody recognises; ns/op is per metric.
func BenchmarkPassThrough(b *testing.B) {
	for _, n := range []int{0, 5} {
		sinks := dialect.All[:n]
		b.Run(fmt.Sprintf("sinks=%d", n), func(b *testing.B) {
			grpcstatstest.ConsumePerItem(b, benchProcessor(b, sinks, 0), grpcstatstest.UnrelatedBatch(benchPoints), benchPoints)
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
	grpcstatstest.ConsumePerItem(b, benchProcessor(b, dialect.All, 0), unitBugBatch(), benchPoints)
}

// BenchmarkMethodGuard converts the legacy batch (grpcstatstest.Methods
// methods of one service) with the method guard on: max_per_service 100
// keeps every method, 10 collapses half of them into _OTHER. ns/op is per
// data point.
func BenchmarkMethodGuard(b *testing.B) {
	for _, max := range []int{100, 10} {
		b.Run(fmt.Sprintf("max_per_service=%d", max), func(b *testing.B) {
			grpcstatstest.ConsumePerItem(b, benchProcessor(b, []dialect.Dialect{dialect.SemconvLegacy}, max), grpcstatstest.LegacyBatch(benchPoints, false), benchPoints)
		})
	}
}

// canonicalBatch is grpcstatstest.LegacyBatch as the semconv target writes
// it. Converting it again changes nothing, so one batch can be consumed over
// and over without a copy, which RunParallel cannot leave out of the time.
func canonicalBatch(b *testing.B) pmetric.Metrics {
	md := grpcstatstest.LegacyBatch(benchPoints, false)
	if err := benchProcessor(b, dialect.All, 0).ConsumeMetrics(context.Background(), md); err != nil {
		b.Fatal(err)
	}
	return md
}

// BenchmarkMethodGuardParallel consumes canonical server durations
// (grpcstatstest.Methods methods of one service, the semconv sink alone)
// from GOMAXPROCS goroutines at once, as a gateway's receivers call the
// processor, each with a batch of its own, with the method guard off and
// with max_per_service 100 (every method kept). ns/op is per data point.
func BenchmarkMethodGuardParallel(b *testing.B) {
	for _, max := range []int{0, 100} {
		b.Run(fmt.Sprintf("max_per_service=%d", max), func(b *testing.B) {
			p := benchProcessor(b, []dialect.Dialect{dialect.Semconv}, max)
			batches := make(chan pmetric.Metrics, runtime.GOMAXPROCS(0))
			for range cap(batches) {
				batches <- canonicalBatch(b)
			}
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				md := <-batches
				for n := 0; pb.Next(); n++ {
					if n%benchPoints != 0 {
						continue
					}
					if err := p.ConsumeMetrics(context.Background(), md); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
