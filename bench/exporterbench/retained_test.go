package exporterbench

import (
	"runtime"
	"testing"

	"github.com/statsgate/statsgate/bench/internal/workload"
)

// BenchmarkRetained measures the heap an exporter holds for its series:
// HeapAlloc after a full GC once the gateway workload is loaded, minus
// HeapAlloc before the exporter was created, per OTLP series
// (B/series-retained). Each op builds and loads a fresh exporter, batch by
// batch, dropping each batch after ConsumeMetrics as a receiver would; ns/op
// is the time that takes.
func BenchmarkRetained(b *testing.B) {
	for _, name := range exporterNames {
		b.Run("exporter="+name, func(b *testing.B) {
			for _, sz := range sizes() {
				if sz.Series < 100_000 {
					continue
				}
				b.Run("series="+sz.Name, func(b *testing.B) {
					if skipContrib1M(name, sz) {
						b.Skip("BENCH_CONTRIB_1M=0")
					}
					var retained float64
					for range b.N {
						retained += retainedOnce(b, name, sz)
					}
					b.ReportMetric(retained/float64(b.N)/float64(sz.Series), "B/series-retained")
				})
			}
		})
	}
}

func retainedOnce(b *testing.B, name string, sz workload.Size) float64 {
	b.StopTimer()
	before := heapAfterGC()
	b.StartTimer()
	in := start(b, name, settings{})
	in.load(b, workload.Gateway, sz.Agents(workload.Gateway), 0)
	b.StopTimer()
	after := heapAfterGC()
	runtime.KeepAlive(in)
	in.noteLogs("loading " + sz.Name + " series")
	in.shutdown(b)
	b.StartTimer()
	return float64(int64(after) - int64(before))
}
