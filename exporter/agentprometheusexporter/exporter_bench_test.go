package agentprometheusexporter

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"sync"
	"testing"

	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/exposition"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/metadata"
)

// agentBatch is one agent's batch of the gateway workload: 4 resource-derived
// labels, 4 point attributes; 4 gauges, 3 counters and 3 ten-bound histograms
// of seriesPerFamily series each.
func agentBatch(agent, seriesPerFamily int) pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	_ = rm.Resource().Attributes().FromRaw(map[string]any{
		"service.name": "svc", "service.namespace": "ns", "service.instance.id": fmt.Sprint("agent-", agent),
		"host.name": fmt.Sprint("host-", agent), "cloud.region": "eu-west-1",
	})
	sm := rm.ScopeMetrics().AppendEmpty()
	sm.Scope().SetName("agent")
	bounds := []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5}
	for f := range 10 {
		m := sm.Metrics().AppendEmpty()
		m.SetName(fmt.Sprint("family_", f))
		for s := range seriesPerFamily {
			// Keys in a fixed order, as SDKs send them (a Go map would not).
			putAttrs := func(attrs pcommon.Map) {
				attrs.PutStr("code", fmt.Sprint(s/10))
				attrs.PutStr("method", fmt.Sprint("m", s%10))
				attrs.PutStr("region", "a")
				attrs.PutStr("route", "/api/v1/items")
			}
			switch {
			case f < 4:
				if s == 0 {
					m.SetEmptyGauge()
				}
				dp := m.Gauge().DataPoints().AppendEmpty()
				dp.SetDoubleValue(float64(s))
				putAttrs(dp.Attributes())
			case f < 7:
				if s == 0 {
					m.SetEmptySum().SetIsMonotonic(true)
					m.Sum().SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
				}
				dp := m.Sum().DataPoints().AppendEmpty()
				dp.SetIntValue(int64(s))
				putAttrs(dp.Attributes())
			default:
				if s == 0 {
					m.SetEmptyHistogram().SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
				}
				dp := m.Histogram().DataPoints().AppendEmpty()
				dp.ExplicitBounds().FromRaw(bounds)
				dp.BucketCounts().FromRaw([]uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})
				dp.SetCount(66)
				dp.SetSum(12.5)
				putAttrs(dp.Attributes())
			}
		}
	}
	return md
}

func benchExporter(b *testing.B) *agentPrometheusExporter {
	cfg := createDefaultConfig().(*Config)
	cfg.ResourceLabels = []string{"host.name", "cloud.region"}
	cfg.WithoutScopeInfo = true
	exp, err := newAgentPrometheusExporter(exportertest.NewNopSettings(metadata.Type), cfg, wallClock)
	if err != nil {
		b.Fatal(err)
	}
	return exp
}

// BenchmarkIngestExisting updates series that exist already; ns/op and
// allocs/op are per data point.
func BenchmarkIngestExisting(b *testing.B) {
	exp := benchExporter(b)
	batches := make([]pmetric.Metrics, 100)
	for a := range batches {
		batches[a] = agentBatch(a, 100)
		_ = exp.consumeMetrics(context.Background(), batches[a])
	}
	points := batches[0].DataPointCount()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += points {
		_ = exp.consumeMetrics(context.Background(), batches[(i/points)%len(batches)])
	}
}

// BenchmarkScrapeText writes the text exposition of 100 agents × 1000 series
// (100k OTLP series); ns/op is per scrape.
func BenchmarkScrapeText(b *testing.B) {
	exp := benchExporter(b)
	for a := range 100 {
		_ = exp.consumeMetrics(context.Background(), agentBatch(a, 100))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := exposition.WriteText(io.Discard, exp.store, exp.expo); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRetainedMemory reports heap bytes per series held, after GC, for
// 100 agents × 1000 series (100k OTLP series).
func BenchmarkRetainedMemory(b *testing.B) {
	for range b.N {
		batches := make([]pmetric.Metrics, 100)
		for a := range batches {
			batches[a] = agentBatch(a, 100)
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		exp := benchExporter(b)
		for _, md := range batches {
			_ = exp.consumeMetrics(context.Background(), md)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(exp.store.SeriesCount()), "B/series")
		runtime.KeepAlive(exp)
		runtime.KeepAlive(batches)
	}
}

// BenchmarkIngestDuringScrapes updates existing series while 0 or 4
// goroutines scrape the same store without pause; ns/op is per data point.
// On a 2-core machine the scrapers compete for CPU as much as for locks.
func BenchmarkIngestDuringScrapes(b *testing.B) {
	for _, scrapers := range []int{0, 4} {
		b.Run(fmt.Sprintf("scrapers=%d", scrapers), func(b *testing.B) {
			exp := benchExporter(b)
			batches := make([]pmetric.Metrics, 100)
			for a := range batches {
				batches[a] = agentBatch(a, 100)
				_ = exp.consumeMetrics(context.Background(), batches[a])
			}
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for range scrapers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						select {
						case <-stop:
							return
						default:
							_ = exposition.WriteText(io.Discard, exp.store, exp.expo)
						}
					}
				}()
			}
			points := batches[0].DataPointCount()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += points {
				_ = exp.consumeMetrics(context.Background(), batches[(i/points)%len(batches)])
			}
			b.StopTimer()
			close(stop)
			wg.Wait()
		})
	}
}
