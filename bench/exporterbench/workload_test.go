package exporterbench

import (
	"fmt"
	"strconv"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// shape describes what each agent (one resource) sends.
type shape struct {
	// gauges, counters and histograms are the families per agent, of each
	// kind; counters are monotonic cumulative sums, histograms cumulative
	// with ten explicit bounds.
	gauges, counters, histograms int
	// seriesPerFamily is the number of series per family and agent.
	seriesPerFamily int
	// baseLabels is 4 (job, instance, host_name, cloud_region) or 2 (job,
	// instance): the labels derived from the resource.
	baseLabels int
	// extraLabels is the number of point attributes. The gateway workload
	// uses its own four (code, method, region, route); a seed shape uses
	// extra_00, extra_01, ...
	extraLabels int
	// gatewayAttrs selects the gateway workload's point attributes.
	gatewayAttrs bool
}

// gateway is the main workload: 4 gauges, 3 counters and 3 histograms of 100
// series each per agent, 4 resource-derived labels and 4 point attributes:
// 1000 OTLP series per agent.
var gateway = shape{gauges: 4, counters: 3, histograms: 3, seriesPerFamily: 100, baseLabels: 4, extraLabels: 4, gatewayAttrs: true}

// seedShape is one of the seed's per-series conversion cases: 100 gauge
// families with one series each per agent, so that every series has exactly
// base+extra labels.
func seedShape(base, extra int) shape {
	return shape{gauges: 100, seriesPerFamily: 1, baseLabels: base, extraLabels: extra}
}

func (s shape) families() int { return s.gauges + s.counters + s.histograms }

// seriesPerAgent is the number of OTLP series (data points) in one agent's batch.
func (s shape) seriesPerAgent() int { return s.families() * s.seriesPerFamily }

// histogramBounds are the ten explicit bounds of every histogram.
var histogramBounds = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5}

var histogramCounts = []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}

// samplesPerAgent is the number of sample lines an agent's series give in
// the text exposition, including its target_info sample.
func (s shape) samplesPerAgent() int {
	perHistogram := len(histogramBounds) + 1 + 2 // buckets with +Inf, _sum, _count
	return (s.gauges+s.counters)*s.seriesPerFamily + s.histograms*s.seriesPerFamily*perHistogram + 1
}

// Fixed start time of every cumulative series; point times come from the caller.
var startTime = pcommon.NewTimestampFromTime(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC))

// pointTime returns the point time of round r: one second per round after startTime.
func pointTime(r int) pcommon.Timestamp {
	return startTime + pcommon.Timestamp(int64(r+1)*int64(time.Second))
}

// batch builds one agent's batch. agent names the resource (its instance and
// host); gen > 0 gives the gateway workload's points a route no earlier
// generation used, so every point is a new series.
func (s shape) batch(agent string, gen int, ts pcommon.Timestamp) pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	// Keys in sorted order, as an SDK's attribute set gives them.
	ra := rm.Resource().Attributes()
	ra.EnsureCapacity(5)
	if s.baseLabels == 4 {
		ra.PutStr("cloud.region", "eu-west-1")
		ra.PutStr("host.name", "host-"+agent)
	}
	ra.PutStr("service.instance.id", agent)
	ra.PutStr("service.name", "agent")
	ra.PutStr("service.namespace", "fleet")

	sm := rm.ScopeMetrics().AppendEmpty()
	sm.Scope().SetName("github.com/example/agent")
	sm.Scope().SetVersion("1.2.3")
	metrics := sm.Metrics()
	metrics.EnsureCapacity(s.families())

	route := "/api/v1/items"
	if gen > 0 {
		route += "/" + strconv.Itoa(gen)
	}
	putAttrs := func(attrs pcommon.Map, f, i int) {
		attrs.EnsureCapacity(s.extraLabels)
		if s.gatewayAttrs {
			attrs.PutStr("code", strconv.Itoa(200+i/10))
			attrs.PutStr("method", methods[i%10])
			attrs.PutStr("region", "a")
			attrs.PutStr("route", route)
			return
		}
		for k := range s.extraLabels {
			attrs.PutStr(extraKeys[k], fmt.Sprintf("value-%d-%d", k, (f+k)%7))
		}
	}

	for f := range s.families() {
		m := metrics.AppendEmpty()
		switch {
		case f < s.gauges:
			m.SetName(fmt.Sprintf("agent.memory.usage.%02d", f))
			m.SetUnit("By")
			m.SetDescription("Memory in use, part " + strconv.Itoa(f) + ".")
			dps := m.SetEmptyGauge().DataPoints()
			dps.EnsureCapacity(s.seriesPerFamily)
			for i := range s.seriesPerFamily {
				dp := dps.AppendEmpty()
				dp.SetTimestamp(ts)
				dp.SetDoubleValue(float64(i) * 1.5)
				putAttrs(dp.Attributes(), f, i)
			}
		case f < s.gauges+s.counters:
			m.SetName(fmt.Sprintf("agent.requests.%02d", f))
			m.SetUnit("{request}")
			m.SetDescription("Requests handled, part " + strconv.Itoa(f) + ".")
			sum := m.SetEmptySum()
			sum.SetIsMonotonic(true)
			sum.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
			dps := sum.DataPoints()
			dps.EnsureCapacity(s.seriesPerFamily)
			for i := range s.seriesPerFamily {
				dp := dps.AppendEmpty()
				dp.SetStartTimestamp(startTime)
				dp.SetTimestamp(ts)
				dp.SetIntValue(int64(1000 + i))
				putAttrs(dp.Attributes(), f, i)
			}
		default:
			m.SetName(fmt.Sprintf("agent.request.duration.%02d", f))
			m.SetUnit("s")
			m.SetDescription("Request duration, part " + strconv.Itoa(f) + ".")
			h := m.SetEmptyHistogram()
			h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
			dps := h.DataPoints()
			dps.EnsureCapacity(s.seriesPerFamily)
			for i := range s.seriesPerFamily {
				dp := dps.AppendEmpty()
				dp.SetStartTimestamp(startTime)
				dp.SetTimestamp(ts)
				dp.ExplicitBounds().FromRaw(histogramBounds)
				dp.BucketCounts().FromRaw(histogramCounts)
				dp.SetCount(66)
				dp.SetSum(12.5)
				putAttrs(dp.Attributes(), f, i)
			}
		}
	}
	return md
}

var methods = []string{"DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT", "PURGE", "QUERY", "TRACE"}

// extraKeys sort in index order.
var extraKeys = func() []string {
	k := make([]string, 16)
	for i := range k {
		k[i] = fmt.Sprintf("extra_%02d", i)
	}
	return k
}()

func agentName(i int) string { return fmt.Sprintf("agent-%06d", i) }

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

// size is a workload size in OTLP series.
type size struct {
	name   string
	series int
}

var allSizes = []size{{"10k", 10_000}, {"100k", 100_000}, {"1M", 1_000_000}}
