package storetest

import (
	"fmt"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// AgentBatch is one agent's batch of the gateway workload: 4 resource-derived
// labels, 4 point attributes; 4 gauges, 3 counters and 3 ten-bound histograms
// of seriesPerFamily series each.
func AgentBatch(agent, seriesPerFamily int) pmetric.Metrics {
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
