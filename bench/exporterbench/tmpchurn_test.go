package exporterbench

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/statsgate/statsgate/bench/internal/workload"
)

func BenchmarkTmpChurn(b *testing.B) {
	runtime.MemProfileRate = 4096
	in := start(b, "ours", settings{expiration: churnPeriod})
	defer in.shutdown(b)
	live := make([]int, churnAgents)
	next := 0
	for i := range live {
		live[i] = next
		next++
	}
	round := 0
	begin := time.Now().Add(churnPeriod / 2)
	for p := range 25 {
		periodStart := begin.Add(time.Duration(p) * churnPeriod)
		if p > 0 {
			live = append(live[churnReplace:], make([]int, churnReplace)...)
			for i := churnAgents - churnReplace; i < churnAgents; i++ {
				live[i] = next
				next++
			}
		}
		for t := periodStart; t.Before(periodStart.Add(churnPeriod)); t = t.Add(churnSendsEvery) {
			time.Sleep(time.Until(t))
			for _, a := range live {
				in.consume(b, batch(workload.Gateway, a, 0, round))
			}
			round++
		}
		time.Sleep(time.Until(periodStart.Add(churnPeriod)))
		h := heapAfterGC()
		fmt.Printf("period %d heap %.1f MiB\n", p, float64(h)/(1<<20))
		if p == 1 || p == 24 {
			f, err := os.Create(fmt.Sprintf("/tmp/churn%d.pprof", p))
			if err != nil {
				b.Fatal(err)
			}
			if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
				b.Fatal(err)
			}
			if err := f.Close(); err != nil {
				b.Fatal(err)
			}
		}
	}
}
