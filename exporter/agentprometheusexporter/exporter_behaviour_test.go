package agentprometheusexporter

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/convert"
)

var t0 = time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)

func ts(d time.Duration) pcommon.Timestamp { return pcommon.NewTimestampFromTime(t0.Add(d)) }

// batch builds one resource with one scope; add metrics to the returned slice.
func batch(resource map[string]any) (pmetric.Metrics, pmetric.MetricSlice) {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	_ = rm.Resource().Attributes().FromRaw(resource)
	sm := rm.ScopeMetrics().AppendEmpty()
	sm.Scope().SetName("lib")
	sm.Scope().SetVersion("1.0")
	return md, sm.Metrics()
}

var agent = map[string]any{"service.name": "api", "service.namespace": "shop", "service.instance.id": "i-1", "host.name": "h1"}

const agentLabels = `instance=i-1,job=shop/api,otel_scope_name=lib,otel_scope_version=1.0`

// lbl returns the agent's labels plus extra pairs, sorted as samples() sorts them.
func lbl(extra ...string) string {
	parts := append(strings.Split(agentLabels, ","), extra...)
	sort.Strings(parts)
	return "{" + strings.Join(parts, ",") + "}"
}

func gauge(ms pmetric.MetricSlice, name string, v float64, attrs map[string]any) pmetric.NumberDataPoint {
	m := ms.AppendEmpty()
	m.SetName(name)
	dp := m.SetEmptyGauge().DataPoints().AppendEmpty()
	dp.SetDoubleValue(v)
	dp.SetTimestamp(ts(time.Minute))
	_ = dp.Attributes().FromRaw(attrs)
	return dp
}

func sum(ms pmetric.MetricSlice, name, unit string, monotonic bool, temporality pmetric.AggregationTemporality) pmetric.NumberDataPointSlice {
	m := ms.AppendEmpty()
	m.SetName(name)
	m.SetUnit(unit)
	s := m.SetEmptySum()
	s.SetIsMonotonic(monotonic)
	s.SetAggregationTemporality(temporality)
	return s.DataPoints()
}

func TestMetricTypes(t *testing.T) {
	tests := []struct {
		name  string
		build func(ms pmetric.MetricSlice)
		want  []string
	}{
		{
			name: "int and double gauges",
			build: func(ms pmetric.MetricSlice) {
				m := ms.AppendEmpty()
				m.SetName("queue.depth")
				dp := m.SetEmptyGauge().DataPoints().AppendEmpty()
				dp.SetIntValue(7)
				gauge(ms, "temperature", 21.5, map[string]any{"room": "lab"})
			},
			want: []string{
				"queue_depth{" + agentLabels + "} 7",
				"temperature" + lbl("room=lab") + " 21.5",
			},
		},
		{
			name: "monotonic cumulative sum is a counter with unit and total suffixes",
			build: func(ms pmetric.MetricSlice) {
				dp := sum(ms, "http.requests", "{request}", true, pmetric.AggregationTemporalityCumulative).AppendEmpty()
				dp.SetIntValue(42)
				dp = sum(ms, "data.sent", "By", true, pmetric.AggregationTemporalityCumulative).AppendEmpty()
				dp.SetDoubleValue(1024)
			},
			want: []string{
				"data_sent_bytes_total{" + agentLabels + "} 1024",
				"http_requests_total{" + agentLabels + "} 42",
			},
		},
		{
			name: "non-monotonic sum is a gauge",
			build: func(ms pmetric.MetricSlice) {
				sum(ms, "connections.open", "", false, pmetric.AggregationTemporalityCumulative).AppendEmpty().SetIntValue(-3)
			},
			want: []string{"connections_open{" + agentLabels + "} -3"},
		},
		{
			name: "unspecified temporality and non-monotonic delta sums are dropped",
			build: func(ms pmetric.MetricSlice) {
				sum(ms, "a", "", true, pmetric.AggregationTemporalityUnspecified).AppendEmpty().SetIntValue(1)
				sum(ms, "b", "", false, pmetric.AggregationTemporalityDelta).AppendEmpty().SetIntValue(1)
			},
			want: nil,
		},
		{
			name: "classic histogram with cumulative buckets",
			build: func(ms pmetric.MetricSlice) {
				m := ms.AppendEmpty()
				m.SetName("rpc.duration")
				m.SetUnit("s")
				h := m.SetEmptyHistogram()
				h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
				dp := h.DataPoints().AppendEmpty()
				dp.ExplicitBounds().FromRaw([]float64{0.1, 1})
				dp.BucketCounts().FromRaw([]uint64{2, 3, 1})
				dp.SetCount(6)
				dp.SetSum(4.5)
			},
			want: []string{
				"rpc_duration_seconds_bucket{" + agentLabels + "} le=+Inf 6",
				"rpc_duration_seconds_bucket{" + agentLabels + "} le=0.1 2",
				"rpc_duration_seconds_bucket{" + agentLabels + "} le=1 5",
				"rpc_duration_seconds_count{" + agentLabels + "} 6",
				"rpc_duration_seconds_sum{" + agentLabels + "} 4.5",
			},
		},
		{
			name: "summary with quantiles",
			build: func(ms pmetric.MetricSlice) {
				m := ms.AppendEmpty()
				m.SetName("latency")
				dp := m.SetEmptySummary().DataPoints().AppendEmpty()
				dp.SetCount(10)
				dp.SetSum(3)
				q := dp.QuantileValues().AppendEmpty()
				q.SetQuantile(0.5)
				q.SetValue(0.2)
			},
			want: []string{
				"latency_count{" + agentLabels + "} 10",
				"latency_sum{" + agentLabels + "} 3",
				"latency{" + agentLabels + "} quantile=0.5 0.2",
			},
		},
		{
			name: "exponential histogram shows count and sum in text",
			build: func(ms pmetric.MetricSlice) {
				m := ms.AppendEmpty()
				m.SetName("payload")
				h := m.SetEmptyExponentialHistogram()
				h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
				dp := h.DataPoints().AppendEmpty()
				dp.SetScale(2)
				dp.SetCount(5)
				dp.SetSum(12)
				dp.Positive().SetOffset(1)
				dp.Positive().BucketCounts().FromRaw([]uint64{2, 3})
			},
			want: []string{
				"payload_bucket{" + agentLabels + "} le=+Inf 5",
				"payload_count{" + agentLabels + "} 5",
				"payload_sum{" + agentLabels + "} 12",
			},
		},
		{
			name: "NaN and infinities",
			build: func(ms pmetric.MetricSlice) {
				gauge(ms, "g", math.NaN(), map[string]any{"k": "nan"})
				gauge(ms, "g", math.Inf(1), map[string]any{"k": "pos"})
				gauge(ms, "g", math.Inf(-1), map[string]any{"k": "neg"})
			},
			want: []string{
				"g" + lbl("k=nan") + " NaN",
				"g" + lbl("k=neg") + " -Inf",
				"g" + lbl("k=pos") + " +Inf",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			te := startExporter(t, nil)
			md, ms := batch(agent)
			tt.build(ms)
			te.consume(md)
			families := te.scrape()
			got := samples(families)
			var withoutTargetInfo []string
			for _, s := range got {
				if !strings.HasPrefix(s, "target_info") {
					withoutTargetInfo = append(withoutTargetInfo, s)
				}
			}
			assert.Equal(t, tt.want, withoutTargetInfo)
			if len(tt.want) > 0 {
				assert.Contains(t, got, "target_info{host_name=h1,instance=i-1,job=shop/api} 1")
			}
		})
	}
}

func TestDeltaSumAccumulatesWhenAlignedAndStartsAgainOnGap(t *testing.T) {
	te := startExporter(t, nil)
	send := func(start, end time.Duration, v int64) {
		te.clock.advance(time.Second)
		md, ms := batch(agent)
		dp := sum(ms, "jobs.done", "", true, pmetric.AggregationTemporalityDelta).AppendEmpty()
		dp.SetStartTimestamp(ts(start))
		dp.SetTimestamp(ts(end))
		dp.SetIntValue(v)
		te.consume(md)
	}
	// value is the sample and its timestamp, as Prometheus would store them.
	value := func() string {
		var m *dto.Metric
		for _, mf := range te.scrape() {
			if mf.GetName() == "jobs_done_total" {
				m = mf.GetMetric()[0]
			}
		}
		if m == nil {
			return "absent"
		}
		at := time.UnixMilli(m.GetTimestampMs()).Sub(t0)
		return fmt.Sprintf("%v @%v", m.GetCounter().GetValue(), at)
	}

	send(0, time.Minute, 5)
	assert.Equal(t, "absent", value(), "a new run is left out of the first scrape")
	assert.Equal(t, "0 @1ms", value(), "then shown as its zero, just after its start")
	assert.Equal(t, "5 @1m0s", value(), "then with its value, once the scraper has seen the zero")
	send(time.Minute, 2*time.Minute, 3) // aligned: start == previous end
	assert.Equal(t, "8 @2m0s", value())
	send(3*time.Minute, 4*time.Minute, 2) // a gap: the total starts again
	assert.Equal(t, "absent", value())
	assert.Equal(t, "0 @3m0.001s", value())
	assert.Equal(t, "2 @4m0s", value())
}

func TestDeltaHistogramAccumulates(t *testing.T) {
	te := startExporter(t, nil)
	send := func(start, end time.Duration, counts []uint64, total uint64, s float64) {
		md, ms := batch(agent)
		m := ms.AppendEmpty()
		m.SetName("d")
		h := m.SetEmptyHistogram()
		h.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
		dp := h.DataPoints().AppendEmpty()
		dp.SetStartTimestamp(ts(start))
		dp.SetTimestamp(ts(end))
		dp.ExplicitBounds().FromRaw([]float64{1})
		dp.BucketCounts().FromRaw(counts)
		dp.SetCount(total)
		dp.SetSum(s)
		te.consume(md)
	}
	send(0, time.Minute, []uint64{1, 1}, 2, 3)
	te.scrape() // a new run is left out of the first scrape
	assert.Equal(t, []string{
		"d_bucket{" + agentLabels + "} le=+Inf 0",
		"d_bucket{" + agentLabels + "} le=1 0",
		"d_count{" + agentLabels + "} 0",
		"d_sum{" + agentLabels + "} 0",
	}, samples(te.scrape())[:4], "a new run is shown as its zero first, in its layout")
	send(time.Minute, 2*time.Minute, []uint64{2, 0}, 2, 1)
	assert.Equal(t, []string{
		"d_bucket{" + agentLabels + "} le=+Inf 4",
		"d_bucket{" + agentLabels + "} le=1 3",
		"d_count{" + agentLabels + "} 4",
		"d_sum{" + agentLabels + "} 4",
	}, samples(te.scrape())[:4])
}

func TestNoRecordedValueRemovesOnlyThatSeries(t *testing.T) {
	te := startExporter(t, nil)
	md, ms := batch(agent)
	dps := sum(ms, "c", "", true, pmetric.AggregationTemporalityCumulative)
	for _, k := range []string{"a", "b", "c"} {
		dp := dps.AppendEmpty()
		dp.SetIntValue(1)
		dp.Attributes().PutStr("k", k)
	}
	te.consume(md)

	md, ms = batch(agent)
	dps = sum(ms, "c", "", true, pmetric.AggregationTemporalityCumulative)
	for _, k := range []string{"a", "b", "c"} {
		dp := dps.AppendEmpty()
		dp.SetIntValue(2)
		dp.SetTimestamp(ts(time.Minute))
		dp.Attributes().PutStr("k", k)
		if k == "a" {
			dp.SetFlags(pmetric.DefaultDataPointFlags.WithNoRecordedValue(true))
		}
	}
	te.consume(md)
	got := samples(te.scrape())
	assert.Equal(t, []string{"c_total" + lbl("k=b") + " 2", "c_total" + lbl("k=c") + " 2"}, got[:2])
}

func TestExpiryRemovesStaleSeriesWithoutScrapes(t *testing.T) {
	te := startExporter(t, func(c *Config) { c.MetricExpiration = time.Minute })
	md, ms := batch(agent)
	gauge(ms, "old", 1, nil)
	te.consume(md)

	te.clock.advance(50 * time.Second)
	md, ms = batch(map[string]any{"service.name": "web", "service.instance.id": "i-2"})
	gauge(ms, "fresh", 1, nil)
	te.consume(md)

	te.clock.advance(20 * time.Second) // "old" is now 70s old, "fresh" 20s
	te.sweep()
	assert.Equal(t, int64(1), te.exp.store.SeriesCount())
	got := samples(te.scrape())
	assert.Equal(t, []string{
		"fresh{instance=i-2,job=web,otel_scope_name=lib,otel_scope_version=1.0} 1",
		"target_info{instance=i-2,job=web} 1",
	}, got, "the expired series and its resource's target_info must be gone")
}

func TestLimitsRefuseNewSeriesAndKeepUpdatingExisting(t *testing.T) {
	te := startExporter(t, func(c *Config) { c.MaxSeriesPerResource = 2; c.MaxSeries = 3 })
	send := func(res map[string]any, v float64, keys ...string) {
		md, ms := batch(res)
		m := ms.AppendEmpty()
		m.SetName("g")
		dps := m.SetEmptyGauge().DataPoints()
		for _, k := range keys {
			dp := dps.AppendEmpty()
			dp.SetDoubleValue(v)
			dp.Attributes().PutStr("k", k)
		}
		te.consume(md)
	}
	flooder := map[string]any{"service.name": "flood", "service.instance.id": "1"}
	send(flooder, 1, "a", "b", "c", "d") // c and d exceed the per-resource limit
	send(flooder, 2, "a", "b")           // existing series keep updating
	other := map[string]any{"service.name": "calm", "service.instance.id": "2"}
	send(other, 5, "x", "y") // y exceeds max_series
	got := samples(te.scrape())
	assert.Equal(t, []string{
		"g{instance=1,job=flood,k=a,otel_scope_name=lib,otel_scope_version=1.0} 2",
		"g{instance=1,job=flood,k=b,otel_scope_name=lib,otel_scope_version=1.0} 2",
		"g{instance=2,job=calm,k=x,otel_scope_name=lib,otel_scope_version=1.0} 5",
	}, got[:3])
	assert.Equal(t, int64(3), te.exp.store.SeriesCount())
}

func TestTypeConflictKeepsFirstTypeAndScrapeParses(t *testing.T) {
	te := startExporter(t, nil)
	md, ms := batch(agent)
	gauge(ms, "shared", 1, nil)
	te.consume(md)
	md, ms = batch(map[string]any{"service.name": "other", "service.instance.id": "x"})
	// A histogram with no unit and no suffix maps onto the same family name.
	m := ms.AppendEmpty()
	m.SetName("shared")
	h := m.SetEmptyHistogram()
	h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	h.DataPoints().AppendEmpty().SetCount(1)
	te.consume(md)

	families := te.scrape()
	require.Contains(t, families, "shared")
	assert.Equal(t, dto.MetricType_GAUGE, families["shared"].GetType())
	assert.Len(t, families["shared"].GetMetric(), 1)
}

func TestLabelValuesAreEscapedAndRepaired(t *testing.T) {
	te := startExporter(t, nil)
	md, ms := batch(agent)
	values := map[string]string{
		"quote":     `say "hi"`,
		"backslash": `C:\temp`,
		"newline":   "two\nlines",
		"badutf8":   "ok\xffok",
		"long":      strings.Repeat("x", 64<<10),
	}
	for k, v := range values {
		gauge(ms, "weird", 1, map[string]any{"k": k, "v": v})
	}
	te.consume(md)
	families := te.scrape()
	got := map[string]string{}
	for _, m := range families["weird"].GetMetric() {
		var k, v string
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "k":
				k = l.GetValue()
			case "v":
				v = l.GetValue()
			}
		}
		got[k] = v
	}
	want := map[string]string{}
	for k, v := range values {
		want[k] = v
	}
	want["badutf8"] = "ok\uFFFDok"
	assert.Equal(t, want, got)
}

func TestCollidingLabelNamesJoinValues(t *testing.T) {
	te := startExporter(t, nil)
	md, ms := batch(agent)
	gauge(ms, "g", 1, map[string]any{"a.b": "dot", "a_b": "underscore"})
	te.consume(md)
	assert.Equal(t, "g"+lbl("a_b=dot;underscore")+" 1", samples(te.scrape())[0])
}

func TestHistogramLeAttributeIsRenamed(t *testing.T) {
	te := startExporter(t, nil)
	md, ms := batch(agent)
	m := ms.AppendEmpty()
	m.SetName("h")
	h := m.SetEmptyHistogram()
	h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	dp := h.DataPoints().AppendEmpty()
	dp.SetCount(1)
	dp.Attributes().PutStr("le", "attr")
	te.consume(md)
	assert.Contains(t, samples(te.scrape()), "h_count"+lbl("exported_le=attr")+" 1")
}

func TestOptions(t *testing.T) {
	te := startExporter(t, func(c *Config) {
		c.Namespace = "gw"
		c.ConstLabels = map[string]string{"region": "eu"}
		c.ResourceConstantLabels.Included = []string{"host.name"}
		c.WithoutScopeInfo = true
		c.SendTimestamps = true
	})
	md, ms := batch(agent)
	gauge(ms, "g", 1, nil)
	te.consume(md)
	body, _ := te.scrapeRaw("text/plain")
	assert.Contains(t, body, fmt.Sprintf(`gw_g{host_name="h1",instance="i-1",job="shop/api",region="eu"} 1 %d`, t0.Add(time.Minute).UnixMilli()))
	assert.Contains(t, body, `gw_target_info{host_name="h1",instance="i-1",job="shop/api"} 1`)
}

func TestDescriptorsDoNotGrowWithAgents(t *testing.T) {
	te := startExporter(t, nil)
	const agents, families, rounds = 1000, 50, 3
	for range rounds {
		for a := range agents {
			md, ms := batch(map[string]any{"service.name": "svc", "service.instance.id": fmt.Sprint(a)})
			for f := range families {
				for s := range 2 {
					gauge(ms, fmt.Sprint("family", f), 1, map[string]any{"series": s})
				}
			}
			te.consume(md)
		}
	}
	assert.Equal(t, families, te.exp.descs.Len(), "one descriptor per family, not per agent")
	hits, misses, evictions := te.exp.descs.Stats()
	assert.Equal(t, int64(families), misses)
	assert.Zero(t, evictions)
	rate := float64(hits) / float64(hits+misses)
	assert.Greater(t, rate, 0.999, "steady-state hit rate")
	t.Logf("descriptors %d, hits %d, misses %d, hit rate %.5f", te.exp.descs.Len(), hits, misses, rate)
	assert.Equal(t, int64(agents*families*2), te.exp.store.SeriesCount())
}

func TestProtobufCarriesNativeHistogram(t *testing.T) {
	te := startExporter(t, nil)
	md, ms := batch(agent)
	m := ms.AppendEmpty()
	m.SetName("payload")
	h := m.SetEmptyExponentialHistogram()
	h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	dp := h.DataPoints().AppendEmpty()
	dp.SetScale(10) // finer than native histograms allow: downscaled to 8
	dp.SetCount(5)
	dp.SetSum(12)
	dp.SetZeroCount(1)
	dp.Positive().SetOffset(0)
	dp.Positive().BucketCounts().FromRaw([]uint64{1, 1, 1, 1})
	te.consume(md)

	body, hdr := te.scrapeRaw(`application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited`)
	require.Contains(t, hdr.Get("Content-Type"), "application/vnd.google.protobuf")
	dec := expfmt.NewDecoder(strings.NewReader(body), expfmt.NewFormat(expfmt.TypeProtoDelim))
	var found *dto.Histogram
	for {
		var mf dto.MetricFamily
		if err := dec.Decode(&mf); err != nil {
			break
		}
		if mf.GetName() == "payload" {
			found = mf.GetMetric()[0].GetHistogram()
		}
	}
	require.NotNil(t, found)
	assert.Equal(t, int32(8), found.GetSchema())
	assert.Equal(t, uint64(5), found.GetSampleCount())
	assert.Equal(t, uint64(1), found.GetZeroCount())
	// Four scale-10 buckets 0..3 fold into scale-8 bucket 0, Prometheus index 1.
	require.Len(t, found.GetPositiveSpan(), 1)
	assert.Equal(t, int32(1), found.GetPositiveSpan()[0].GetOffset())
	assert.Equal(t, []int64{4}, found.GetPositiveDelta())
}

func TestConcurrentIngestAndScrape(t *testing.T) {
	te := startExporter(t, nil)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				md, ms := batch(map[string]any{"service.name": "svc", "service.instance.id": fmt.Sprint(w)})
				for s := range 20 {
					gauge(ms, "g", float64(i), map[string]any{"s": s})
				}
				te.consume(md)
			}
		}()
	}
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				te.scrape()
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, int64(80), te.exp.store.SeriesCount())
}

func TestBadPointDoesNotTakeDownItsBatch(t *testing.T) {
	te := startExporter(t, nil)
	md, ms := batch(agent)
	m := ms.AppendEmpty()
	m.SetName("payload")
	h := m.SetEmptyExponentialHistogram()
	h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	bad := h.DataPoints().AppendEmpty()
	bad.SetScale(-5) // coarser than native histograms allow
	bad.SetCount(1)
	bad.Attributes().PutStr("k", "bad")
	good := h.DataPoints().AppendEmpty()
	good.SetScale(0)
	good.SetCount(2)
	good.SetZeroCount(2) // the buckets add up to the count
	good.Attributes().PutStr("k", "good")
	gauge(ms, "after", 1, nil)
	stats := te.exp.conv.ConsumeMetrics(md)
	assert.Equal(t, int64(1), stats.Dropped[convert.Invalid])
	got := samples(te.scrape())
	assert.Contains(t, got, "payload_count"+lbl("k=good")+" 2")
	assert.Contains(t, got, "after"+lbl()+" 1")
	for _, s := range got {
		assert.NotContains(t, s, "k=bad")
	}
}

// An empty label is an absent one: a point whose attribute is empty is the
// series without that label, whichever way the empty value comes (an
// attribute, a scope without a version), and a point with fewer labels
// never takes another's names with its values.
func TestEmptyValuesAreAbsentLabels(t *testing.T) {
	te := startExporter(t, nil)
	md, ms := batch(agent)
	long := strings.Repeat("v", 200) // a value whose length takes two bytes
	gauge(ms, "m", 1, map[string]any{"a": "", "b": "x"})
	gauge(ms, "m", 2, map[string]any{"a": "y", "b": ""})
	gauge(ms, "m", 3, map[string]any{"a": long, "b": ""})
	gauge(ms, "m", 4, map[string]any{"b": "x"}) // the first point's series
	gauge(ms, "m", 5, map[string]any{"a": "", "b": ""})
	sm := md.ResourceMetrics().At(0).ScopeMetrics().AppendEmpty()
	sm.Scope().SetName("lib") // no version
	gauge(sm.Metrics(), "n", 6, map[string]any{"a": "z"})
	te.consume(md)

	got := samples(te.scrape())
	assert.ElementsMatch(t, []string{
		"m" + lbl("b=x") + " 4",
		"m" + lbl("a=y") + " 2",
		"m" + lbl("a="+long) + " 3",
		"m" + lbl() + " 5",
	}, filterPrefix(got, "m{"))
	assert.Equal(t, []string{"n{a=z,instance=i-1,job=shop/api,otel_scope_name=lib} 6"}, filterPrefix(got, "n{"))
}
