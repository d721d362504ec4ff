package exporterbench

import (
	"runtime"
	"testing"

	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/statsgate/statsgate/bench/internal/workload"
)

// ingestAgents is the number of agents held while ingesting: 100k series.
const ingestAgents = 100

// BenchmarkIngest measures ConsumeMetrics. One op is one agent's batch of
// 1000 points; ns/point, B/point and allocs/point are per data point.
//
//   - kind=existing: every point updates a series that exists (the batches
//     of 100 agents, again and again, with a later point time each round).
//   - kind=new: every point creates a series (each batch carries a route no
//     earlier batch had), on top of the same 100k existing series.
//
// Each batch is a fresh copy, made while the timer is stopped, as a receiver
// would decode it: contrib changes the batches it is given (it adds the
// resource attributes to every point) and keeps references into them.
func BenchmarkIngest(b *testing.B) {
	for _, name := range exporterNames {
		b.Run("exporter="+name, func(b *testing.B) {
			b.Run("kind=existing", func(b *testing.B) { ingestExisting(b, name) })
			b.Run("kind=new", func(b *testing.B) { ingestNew(b, name) })
		})
	}
}

func ingestExisting(b *testing.B, name string) {
	in := start(b, name, settings{})
	defer in.shutdown(b)
	templates := make([]pmetric.Metrics, ingestAgents)
	for a := range templates {
		templates[a] = batch(workload.Gateway, a, 0, 0)
	}
	round := make([]pmetric.Metrics, ingestAgents)
	fresh := func(r int) {
		for a, t := range templates {
			md := pmetric.NewMetrics()
			t.CopyTo(md)
			setTimestamps(md, pointTime(r))
			round[a] = md
		}
	}
	// Warm-up: every series exists before timing.
	fresh(0)
	for _, md := range round {
		in.consume(b, md)
	}
	runtime.GC()

	m := newMeter(b)
	r := 1
	for i := range b.N {
		if i%ingestAgents == 0 {
			fresh(r)
			r++
			m.start()
		}
		in.consume(b, round[i%ingestAgents])
		if i%ingestAgents == ingestAgents-1 || i == b.N-1 {
			m.stop()
		}
	}
	m.report("point", float64(workload.Gateway.SeriesPerAgent()))
	in.noteLogs("ingesting points of existing series")
}

func ingestNew(b *testing.B, name string) {
	in := start(b, name, settings{})
	defer in.shutdown(b)
	in.load(b, workload.Gateway, ingestAgents, 0)
	runtime.GC()

	m := newMeter(b)
	round := make([]pmetric.Metrics, ingestAgents)
	gen := 0
	for i := range b.N {
		if i%ingestAgents == 0 {
			n := min(ingestAgents, b.N-i)
			for a := range n {
				gen++
				round[a] = batch(workload.Gateway, a, gen, 1)
			}
			m.start()
		}
		in.consume(b, round[i%ingestAgents])
		round[i%ingestAgents] = pmetric.Metrics{}
		if i%ingestAgents == ingestAgents-1 || i == b.N-1 {
			m.stop()
		}
	}
	m.report("point", float64(workload.Gateway.SeriesPerAgent()))
	in.noteLogs("ingesting points of new series")
}
