package exporterbench

import (
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/statsgate/statsgate/bench/internal/workload"
)

// Fixed start time of every cumulative series; point times come from the caller.
var startTime = pcommon.NewTimestampFromTime(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC))

// pointTime returns the point time of round r: one second per round after startTime.
func pointTime(r int) pcommon.Timestamp {
	return startTime + pcommon.Timestamp(int64(r+1)*int64(time.Second))
}

// batch is the batch of agent a (workload.AgentName) of shape s at round r.
func batch(s workload.Shape, a, gen, r int) pmetric.Metrics {
	return s.Batch(workload.AgentName(a), gen, startTime, pointTime(r))
}

// textSamples is the number of sample lines agents of shape s give in the
// text exposition, each agent's target_info included.
func textSamples(s workload.Shape, agents int) int { return agents * (s.Samples() + 1) }

// setTimestamps sets the point time of every point of md.
func setTimestamps(md pmetric.Metrics, ts pcommon.Timestamp) {
	rms := md.ResourceMetrics()
	for i := range rms.Len() {
		sms := rms.At(i).ScopeMetrics()
		for j := range sms.Len() {
			ms := sms.At(j).Metrics()
			for k := range ms.Len() {
				m := ms.At(k)
				switch m.Type() {
				case pmetric.MetricTypeGauge:
					dps := m.Gauge().DataPoints()
					for p := range dps.Len() {
						dps.At(p).SetTimestamp(ts)
					}
				case pmetric.MetricTypeSum:
					dps := m.Sum().DataPoints()
					for p := range dps.Len() {
						dps.At(p).SetTimestamp(ts)
					}
				case pmetric.MetricTypeHistogram:
					dps := m.Histogram().DataPoints()
					for p := range dps.Len() {
						dps.At(p).SetTimestamp(ts)
					}
				}
			}
		}
	}
}
