package main

import (
	"fmt"

	"github.com/statsgate/statsgate/bench/internal/workload"
)

// shape is what each agent sends.
func (o options) shape() workload.Shape { return workload.Mix(o.families, o.series) }

// expectedSamples is the number of sample lines a complete text exposition
// has for this load, target_info apart.
func expectedSamples(o options) int64 {
	return int64(o.shape().Samples()) * int64(o.agents)
}

// describe says what the load is, for the report of bench/e2e.sh: A is the
// number of agents, which changes from row to row.
func describe(o options) string {
	return fmt.Sprintf("A agents × %d families × %d series, one OTLP/gRPC request per agent (%d in flight). %s",
		o.families, o.series, o.concurrency, o.shape().Describe())
}
