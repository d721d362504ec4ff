package agentprometheusexporter

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/aggregate"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/metadata"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/storetest"
)

// aggregateEverything sums every family of storetest.AgentBatch by job and
// method: the agents' 4 resource labels and the other 3 point attributes
// summed away.
func aggregateEverything(cfg *Config) {
	cfg.Aggregate = []aggregate.RuleConfig{{Metrics: []string{"family_*"}, By: []string{"service.name", "method"}}}
}

func benchAggregator(b *testing.B, configure func(*Config)) *agentPrometheusExporter {
	cfg := benchConfig()
	configure(cfg)
	exp, err := newAgentPrometheusExporter(exportertest.NewNopSettings(metadata.Type), cfg, wallClock)
	if err != nil {
		b.Fatal(err)
	}
	return exp
}

// BenchmarkIngestAggregated is BenchmarkIngestExisting with every family
// aggregated: each point updates its source and adds its increment to its
// group. ns/op and allocs/op are per data point; run both side by side to
// compare (BENCHMARKS.md, "Aggregation").
func BenchmarkIngestAggregated(b *testing.B) {
	benchIngestExisting(b, benchAggregator(b, aggregateEverything))
}

// counterBatch is one agent's export of series cumulative counters with
// the four point attributes of storetest.AgentBatch, 10 methods.
func counterBatch(agent, series int) pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	_ = rm.Resource().Attributes().FromRaw(map[string]any{
		"service.name": "svc", "service.namespace": "ns", "service.instance.id": fmt.Sprint("agent-", agent),
		"host.name": fmt.Sprint("host-", agent), "cloud.region": "eu-west-1",
	})
	m := rm.ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	m.SetName("family_requests")
	s := m.SetEmptySum()
	s.SetIsMonotonic(true)
	s.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	for i := range series {
		dp := s.DataPoints().AppendEmpty()
		dp.SetIntValue(int64(i))
		dp.Attributes().PutStr("code", fmt.Sprint(i/10))
		dp.Attributes().PutStr("method", fmt.Sprint("m", i%10))
		dp.Attributes().PutStr("region", "a")
		dp.Attributes().PutStr("route", "/api/v1/items")
	}
	return md
}

// BenchmarkAggregateSourceMemory reports the heap held per source after GC
// for agents × series aggregated by job and method, and how many series the
// gateway serves for them: 1,000 agents × 1,000 counters in full (1M
// sources, 10 groups), and the same with storetest.AgentBatch's mix of
// gauges, counters and ten-bucket histograms (a histogram's source holds
// its bucket counts).
func BenchmarkAggregateSourceMemory(b *testing.B) {
	for _, tc := range []struct {
		name  string
		batch func(agent int) pmetric.Metrics
	}{
		{"counters", func(a int) pmetric.Metrics { return counterBatch(a, 1000) }},
		{"mixed", func(a int) pmetric.Metrics { return storetest.AgentBatch(a, 100) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for range b.N {
				batches := make([]pmetric.Metrics, 1000)
				for a := range batches {
					batches[a] = tc.batch(a)
				}
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				exp := benchAggregator(b, aggregateEverything)
				for _, md := range batches {
					_ = exp.consumeMetrics(context.Background(), md)
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				sources := exp.agg.Sources()
				if sources != int64(1000*batches[0].DataPointCount()) {
					b.Fatalf("%d sources held, want one per series sent", sources)
				}
				b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(sources), "B/source")
				b.ReportMetric(float64(exp.store.SeriesCount()), "series")
				b.ReportMetric(float64(exp.agg.Groups()), "groups")
				runtime.KeepAlive(exp)
				runtime.KeepAlive(batches)
			}
		})
	}
}
