package exporterbench

import (
	"testing"
	"time"

	"github.com/statsgate/statsgate/bench/internal/workload"
)

const (
	churnAgents     = 25 // live agents: 25k live series
	churnReplace    = 5  // agents replaced per period: 20%
	churnPeriods    = 8
	churnPeriod     = time.Second // = metric_expiration
	churnSendsEvery = churnPeriod / 2
)

// BenchmarkChurn runs the gateway workload with agents leaving and new
// agents arriving, in real time, with metric_expiration: 1s on both
// exporters (ours sweeps every max(expiration/4, 1s), contrib every
// expiration). After a warm-up period that brings in 25 agents (25k
// series), each of 8 periods of 1s replaces 20% of the live agents with new
// ones; every live agent sends its batch twice per period. At the end of
// each period the heap is measured after a full GC; the agents that left at
// the start of the period have not been swept yet then, on both exporters.
//
// The heap held by the exporter is HeapAlloc minus HeapAlloc before it was
// created. heap-growth-ratio is the heap held at the end of the last churn
// period over that at the end of the first: about 1 when expired series are
// released. B/live-series is the heap held at the end per live OTLP series
// (the departed agents not yet swept included). No scrapes run meanwhile.
// One op is the whole run (about 10s).
func BenchmarkChurn(b *testing.B) {
	for _, name := range exporterNames {
		b.Run("exporter="+name, func(b *testing.B) {
			var ratio, perSeries float64
			for range b.N {
				r, p := churnOnce(b, name)
				ratio += r
				perSeries += p
			}
			b.ReportMetric(ratio/float64(b.N), "heap-growth-ratio")
			b.ReportMetric(perSeries/float64(b.N), "B/live-series")
		})
	}
}

func churnOnce(b *testing.B, name string) (ratio, perSeries float64) {
	base := heapAfterGC()
	started := time.Now()
	in := start(b, name, settings{expiration: churnPeriod})
	defer in.shutdown(b)

	live := make([]int, churnAgents) // agent ids
	next := 0
	for i := range live {
		live[i] = next
		next++
	}
	send := func(round int) {
		for _, a := range live {
			in.consume(b, batch(workload.Gateway, a, 0, round))
		}
	}

	round := 0
	var heaps []uint64
	// Both exporters sweep on a ticker started by Start, every 1s here.
	// Periods begin half a period after it, so that no sweep runs close to
	// a measurement: each measurement holds the live agents plus the agents
	// that left at the start of that period, on both exporters.
	begin := started.Add(churnPeriod / 2)
	// Period 0 only brings the first agents in; the churn periods follow.
	for p := range churnPeriods + 1 {
		periodStart := begin.Add(time.Duration(p) * churnPeriod)
		// Replace the oldest 20% of the agents with new ones.
		if p > 0 {
			live = append(live[churnReplace:], make([]int, churnReplace)...)
			for i := churnAgents - churnReplace; i < churnAgents; i++ {
				live[i] = next
				next++
			}
		}
		for t := periodStart; t.Before(periodStart.Add(churnPeriod)); t = t.Add(churnSendsEvery) {
			time.Sleep(time.Until(t))
			send(round)
			round++
		}
		time.Sleep(time.Until(periodStart.Add(churnPeriod)))
		heaps = append(heaps, heapAfterGC())
	}
	if late := time.Since(begin) - (churnPeriods+1)*churnPeriod; late > churnPeriod/2 {
		note("churn %s: the run ended %v behind schedule (machine too slow for the workload)", name, late.Round(time.Millisecond))
	}
	in.noteLogs("churning")
	held := make([]float64, len(heaps))
	for i, h := range heaps {
		held[i] = float64(int64(h) - int64(base))
	}
	note("churn %s: heap held by the exporter at the end of the warm-up and of each churn period (MiB): %v", name, mib(held))
	return held[len(held)-1] / held[1], held[len(held)-1] / float64(churnAgents*workload.Gateway.SeriesPerAgent())
}

func mib(v []float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(int64(x*10/(1<<20))) / 10
	}
	return out
}
