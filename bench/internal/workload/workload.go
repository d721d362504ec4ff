// Package workload is the OTLP load of the exporter benchmarks, defined once:
// bench/exporterbench feeds it to both exporters in one process, and
// bench/cmd/loadgen sends it to a built collector over OTLP/gRPC for the
// end-to-end benchmark. The reports describe it from here (Shape.Describe),
// so that what they say is what ran.
package workload

import (
	"fmt"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// Bounds are the ten explicit bounds of every histogram, in seconds.
var Bounds = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5}

// bucketCounts are the counts of every histogram point, one per bound and
// the overflow; histogramCount is their sum.
var bucketCounts = []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}

const (
	histogramCount = 66
	histogramSum   = 12.5
)

// Shape is what each agent (one resource) sends.
type Shape struct {
	// Gauges, Counters and Histograms are the families per agent, of each
	// kind; counters are monotonic cumulative sums, histograms cumulative
	// with the explicit Bounds.
	Gauges, Counters, Histograms int
	// SeriesPerFamily is the number of series per family and agent.
	SeriesPerFamily int
	// BaseLabels is 4 (job, instance, host_name, cloud_region) or 2 (job,
	// instance): the labels an exporter derives from the resource.
	BaseLabels int
	// ExtraLabels is the number of point attributes: gatewayKeys with
	// GatewayAttrs, else extra_00, extra_01, ...
	ExtraLabels  int
	GatewayAttrs bool
}

// Gateway is the main workload: 4 gauges, 3 counters and 3 histograms of 100
// series each per agent, 4 resource-derived labels and 4 point attributes:
// 1000 OTLP series per agent.
var Gateway = Mix(10, 100)

// Mix is the gateway workload with families families of series series each
// per agent: 40% gauges, 30% counters and 30% histograms, exact for a
// multiple of ten families (a remainder fills gauges, then counters).
func Mix(families, series int) Shape {
	tens, rest := families/10, families%10
	gauges := 4*tens + min(rest, 4)
	counters := 3*tens + max(0, min(rest-4, 3))
	return Shape{
		Gauges: gauges, Counters: counters, Histograms: families - gauges - counters,
		SeriesPerFamily: series, BaseLabels: 4, ExtraLabels: len(gatewayKeys), GatewayAttrs: true,
	}
}

// Seed is one of the per-series conversion cases of the coder
// metrics-aggregator seed: 100 gauge families with one series each per
// agent, so that every series has exactly base+extra labels.
func Seed(base, extra int) Shape {
	return Shape{Gauges: 100, SeriesPerFamily: 1, BaseLabels: base, ExtraLabels: extra}
}

// Families is the number of families per agent.
func (s Shape) Families() int { return s.Gauges + s.Counters + s.Histograms }

// SeriesPerAgent is the number of OTLP series (data points) in one agent's batch.
func (s Shape) SeriesPerAgent() int { return s.Families() * s.SeriesPerFamily }

// Samples is the number of sample lines an agent's series give in the text
// exposition, its target_info apart: one per gauge and counter series, and
// per histogram series a bucket per bound, +Inf, _sum and _count.
func (s Shape) Samples() int {
	perHistogram := len(Bounds) + 1 + 2
	return (s.Gauges+s.Counters)*s.SeriesPerFamily + s.Histograms*s.SeriesPerFamily*perHistogram
}

// gatewayKeys are the gateway workload's point attributes, put in this
// (sorted) order.
var gatewayKeys = []string{"code", "method", "region", "route"}

var methods = []string{"DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT", "PURGE", "QUERY", "TRACE"}

// extraKeys sort in index order.
var extraKeys = func() []string {
	k := make([]string, 16)
	for i := range k {
		k[i] = fmt.Sprintf("extra_%02d", i)
	}
	return k
}()

// resourceKeys are the resource attributes of an agent, in the (sorted)
// order they are put.
func (s Shape) resourceKeys() []string {
	keys := []string{"service.instance.id", "service.name", "service.namespace"}
	if s.BaseLabels == 4 {
		keys = append([]string{"cloud.region", "host.name"}, keys...)
	}
	return keys
}

// pointKeys are the point attributes of every series, in the order they are put.
func (s Shape) pointKeys() []string {
	if s.GatewayAttrs {
		return gatewayKeys
	}
	return extraKeys[:s.ExtraLabels]
}

// AgentName is the name of the i-th agent: its service.instance.id, and its
// host.name after "host-".
func AgentName(i int) string { return fmt.Sprintf("agent-%06d", i) }

// Batch builds one agent's batch, cumulative points from start to ts. agent
// names the resource (its instance and host); gen > 0 gives the gateway
// workload's points a route no earlier generation used, so that every point
// is a new series.
func (s Shape) Batch(agent string, gen int, start, ts pcommon.Timestamp) pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	// Keys in sorted order, as an SDK's attribute set gives them.
	ra := rm.Resource().Attributes()
	ra.EnsureCapacity(5)
	if s.BaseLabels == 4 {
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
	metrics.EnsureCapacity(s.Families())

	route := "/api/v1/items"
	if gen > 0 {
		route += "/" + strconv.Itoa(gen)
	}
	keys := s.pointKeys()
	putAttrs := func(attrs pcommon.Map, f, i int) {
		attrs.EnsureCapacity(len(keys))
		if s.GatewayAttrs {
			attrs.PutStr(keys[0], strconv.Itoa(200+i/10))
			attrs.PutStr(keys[1], methods[i%10])
			attrs.PutStr(keys[2], "a")
			attrs.PutStr(keys[3], route)
			return
		}
		for k, key := range keys {
			attrs.PutStr(key, fmt.Sprintf("value-%d-%d", k, (f+k)%7))
		}
	}

	for f := range s.Families() {
		m := metrics.AppendEmpty()
		switch {
		case f < s.Gauges:
			m.SetName(fmt.Sprintf("agent.memory.usage.%02d", f))
			m.SetUnit("By")
			m.SetDescription("Memory in use, part " + strconv.Itoa(f) + ".")
			dps := m.SetEmptyGauge().DataPoints()
			dps.EnsureCapacity(s.SeriesPerFamily)
			for i := range s.SeriesPerFamily {
				dp := dps.AppendEmpty()
				dp.SetTimestamp(ts)
				dp.SetDoubleValue(float64(i) * 1.5)
				putAttrs(dp.Attributes(), f, i)
			}
		case f < s.Gauges+s.Counters:
			m.SetName(fmt.Sprintf("agent.requests.%02d", f))
			m.SetUnit("{request}")
			m.SetDescription("Requests handled, part " + strconv.Itoa(f) + ".")
			sum := m.SetEmptySum()
			sum.SetIsMonotonic(true)
			sum.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
			dps := sum.DataPoints()
			dps.EnsureCapacity(s.SeriesPerFamily)
			for i := range s.SeriesPerFamily {
				dp := dps.AppendEmpty()
				dp.SetStartTimestamp(start)
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
			dps.EnsureCapacity(s.SeriesPerFamily)
			for i := range s.SeriesPerFamily {
				dp := dps.AppendEmpty()
				dp.SetStartTimestamp(start)
				dp.SetTimestamp(ts)
				dp.ExplicitBounds().FromRaw(Bounds)
				dp.BucketCounts().FromRaw(bucketCounts)
				dp.SetCount(histogramCount)
				dp.SetSum(histogramSum)
				putAttrs(dp.Attributes(), f, i)
			}
		}
	}
	return md
}

// Describe says in one sentence what each agent sends, for the reports.
func (s Shape) Describe() string {
	var kinds []string
	add := func(n int, one, many string) {
		switch n {
		case 0:
		case 1:
			kinds = append(kinds, "1 "+one)
		default:
			kinds = append(kinds, fmt.Sprintf("%d %s", n, many))
		}
	}
	add(s.Gauges, "gauge", "gauges")
	add(s.Counters, "monotonic cumulative counter", "monotonic cumulative counters")
	add(s.Histograms, fmt.Sprintf("cumulative histogram with %d bounds", len(Bounds)), fmt.Sprintf("cumulative histograms with %d bounds", len(Bounds)))
	families := kinds[0]
	if n := len(kinds); n > 1 {
		families = strings.Join(kinds[:n-1], ", ") + " and " + kinds[n-1]
	}
	return fmt.Sprintf("Each agent is one resource (%s) sending the same %d families: %s, %d series per family, "+
		"each series with %d point attributes (%s, in that order): %d OTLP series and %d text samples per agent, "+
		"and its `target_info`.",
		codeList(s.resourceKeys()), s.Families(), families, s.SeriesPerFamily,
		len(s.pointKeys()), codeList(s.pointKeys()), s.SeriesPerAgent(), s.Samples())
}

func codeList(keys []string) string {
	q := make([]string, len(keys))
	for i, k := range keys {
		q[i] = "`" + k + "`"
	}
	return strings.Join(q, ", ")
}

// Size is a workload size in OTLP series.
type Size struct {
	Name   string
	Series int
}

// Sizes are the sizes the benchmarks run.
var Sizes = []Size{{"10k", 10_000}, {"100k", 100_000}, {"1M", 1_000_000}}

// Agents is the number of agents of shape s that make size z.
func (z Size) Agents(s Shape) int { return z.Series / s.SeriesPerAgent() }
