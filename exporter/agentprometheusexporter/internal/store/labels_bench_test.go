package store

import "testing"

// BenchmarkAppendText renders one series' label set of the bench workload
// (bench/internal/workload: job, instance, two resource labels and four
// point attributes) with every value its own and with the resource's
// values shared, as the converter stores them.
func BenchmarkAppendText(b *testing.B) {
	names := []string{"cloud_region", "code", "host_name", "instance", "job", "method", "region", "route"}
	values := []string{"eu-west-1", "200", "host-0042", "agent-0042:9100", "agent", "GET", "eu", "/api/v1/items"}
	const resource = 1<<0 | 1<<2 | 1<<3 | 1<<4 // cloud_region, host_name, instance, job
	for _, c := range []struct {
		name   string
		shared uint64
	}{{"shared=none", 0}, {"shared=resource", resource}} {
		var own, shared []byte
		for i, v := range values {
			if c.shared&(1<<i) != 0 {
				shared = AppendValue(shared, v)
			} else {
				own = AppendValue(own, v)
			}
		}
		set := LabelSet{Names: NewSharedLabelNames(names, c.shared), values: string(own)}
		if c.shared != 0 {
			s := string(shared)
			set.shared = &s
		}
		want := `cloud_region="eu-west-1",code="200",host_name="host-0042",instance="agent-0042:9100",job="agent",method="GET",region="eu",route="/api/v1/items"`
		if got := set.Text(); got != want {
			b.Fatalf("%s: %s, want %s", c.name, got, want)
		}
		b.Run(c.name, func(b *testing.B) {
			buf := make([]byte, 0, 256)
			b.ReportAllocs()
			for range b.N {
				buf = set.AppendText(buf[:0])
			}
		})
	}
}
