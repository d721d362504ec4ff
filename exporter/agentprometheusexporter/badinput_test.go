package agentprometheusexporter

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/metadatatest"
)

// otherAgent is the second resource of every bad-input batch.
var otherAgent = map[string]any{"service.name": "web", "service.namespace": "shop", "service.instance.id": "i-2"}

const otherLabels = `instance=i-2,job=shop/web,otel_scope_name=lib,otel_scope_version=1.0`

// described appends a metric with a description: promtool lints a family
// without HELP, and the rows expect no lint problem their input does not cause.
func described(ms pmetric.MetricSlice, name, unit string) pmetric.Metric {
	m := ms.AppendEmpty()
	m.SetName(name)
	m.SetUnit(unit)
	m.SetDescription("Described " + name + ".")
	return m
}

func counter(ms pmetric.MetricSlice, name string, temporality pmetric.AggregationTemporality) pmetric.NumberDataPointSlice {
	s := described(ms, name, "").SetEmptySum()
	s.SetIsMonotonic(true)
	s.SetAggregationTemporality(temporality)
	return s.DataPoints()
}

func histogramPoints(ms pmetric.MetricSlice, name string, temporality pmetric.AggregationTemporality) pmetric.HistogramDataPointSlice {
	h := described(ms, name, "").SetEmptyHistogram()
	h.SetAggregationTemporality(temporality)
	return h.DataPoints()
}

func histogramPoint(dps pmetric.HistogramDataPointSlice, point string, bounds []float64, counts []uint64, count uint64) pmetric.HistogramDataPoint {
	dp := dps.AppendEmpty()
	dp.Attributes().PutStr("point", point)
	dp.ExplicitBounds().FromRaw(bounds)
	dp.BucketCounts().FromRaw(counts)
	dp.SetCount(count)
	dp.SetSum(1.5)
	dp.SetStartTimestamp(ts(0))
	dp.SetTimestamp(ts(time.Minute))
	return dp
}

func exponentialPoints(ms pmetric.MetricSlice, name string, temporality pmetric.AggregationTemporality) pmetric.ExponentialHistogramDataPointSlice {
	h := described(ms, name, "").SetEmptyExponentialHistogram()
	h.SetAggregationTemporality(temporality)
	return h.DataPoints()
}

// exponentialPoint appends a point whose positive buckets start at offset.
func exponentialPoint(dps pmetric.ExponentialHistogramDataPointSlice, point string, scale, offset int32, counts []uint64, count uint64) pmetric.ExponentialHistogramDataPoint {
	dp := dps.AppendEmpty()
	dp.Attributes().PutStr("point", point)
	dp.SetScale(scale)
	dp.Positive().SetOffset(offset)
	dp.Positive().BucketCounts().FromRaw(counts)
	dp.SetCount(count)
	dp.SetSum(2)
	dp.SetStartTimestamp(ts(0))
	dp.SetTimestamp(ts(time.Minute))
	return dp
}

func describedGauge(ms pmetric.MetricSlice, name string, v float64, attrs map[string]any) pmetric.NumberDataPoint {
	dp := described(ms, name, "").SetEmptyGauge().DataPoints().AppendEmpty()
	dp.SetDoubleValue(v)
	dp.SetTimestamp(ts(time.Minute))
	_ = dp.Attributes().FromRaw(attrs)
	return dp
}

// addGood appends a gauge, a counter and a histogram that are valid in
// every way: each row checks they all come through its bad input.
func addGood(ms pmetric.MetricSlice) {
	dp := described(ms, "good.queue.depth", "{item}").SetEmptyGauge().DataPoints().AppendEmpty()
	dp.SetIntValue(7)
	dp.SetTimestamp(ts(time.Minute))
	c := counter(ms, "good.requests", pmetric.AggregationTemporalityCumulative).AppendEmpty()
	c.SetIntValue(42)
	c.SetStartTimestamp(ts(0))
	c.SetTimestamp(ts(time.Minute))
	m := described(ms, "good.latency", "s")
	h := m.SetEmptyHistogram()
	h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	hp := h.DataPoints().AppendEmpty()
	hp.ExplicitBounds().FromRaw([]float64{0.1, 1})
	hp.BucketCounts().FromRaw([]uint64{1, 2, 3})
	hp.SetCount(6)
	hp.SetSum(4.5)
	hp.SetStartTimestamp(ts(0))
	hp.SetTimestamp(ts(time.Minute))
}

func goodSamples(labels string) []string {
	l := "{" + labels + "}"
	return []string{
		"good_latency_seconds_bucket" + l + " le=+Inf 6",
		"good_latency_seconds_bucket" + l + " le=0.1 1",
		"good_latency_seconds_bucket" + l + " le=1 3",
		"good_latency_seconds_count" + l + " 6",
		"good_latency_seconds_sum" + l + " 4.5",
		"good_queue_depth" + l + " 7",
		"good_requests_total" + l + " 42",
	}
}

// pointLabels are the agent's labels with point=<point>, as samples() writes them.
func pointLabels(point string, extra ...string) string {
	return lbl(append([]string{"point=" + point}, extra...)...)
}

// droppedPoints reads points_dropped by reason from the exporter's telemetry.
func droppedPoints(t *testing.T, tel *componenttest.Telemetry) map[string]int64 {
	return countsBy(t, tel, "otelcol_exporter_agentprometheus_points_dropped", "reason")
}

// checkScrapes scrapes text, OpenMetrics and protobuf: each must parse and
// pass checkFamilies, the three must hold the same series, and the text
// scrape must pass promtool with exactly the lint problems expected. It
// returns the protobuf scrape's families, and whether promtool was there.
func checkScrapes(t *testing.T, te *testExporter, lints []string) (proto map[string]*dto.MetricFamily, linted bool) {
	t.Helper()
	var raw []byte
	seriesOf := func(families map[string]*dto.MetricFamily) map[string]int {
		out := map[string]int{}
		for name, mf := range families {
			out[name] = len(mf.GetMetric())
		}
		return out
	}
	var want map[string]int
	for _, accept := range []string{acceptText, acceptOpenMetrics, acceptProtobuf} {
		body, header := te.scrapeRaw(accept)
		families, err := decodeExposition([]byte(body), header.Get("Content-Type"))
		require.NoError(t, err, "%s scrape:\n%s", accept, body)
		switch accept {
		case acceptText:
			raw, want = []byte(body), seriesOf(families)
		case acceptOpenMetrics:
			if te.exp.cfg.EnableOpenMetrics {
				require.Contains(t, header.Get("Content-Type"), "application/openmetrics-text", "OpenMetrics is enabled")
			} else {
				require.Contains(t, header.Get("Content-Type"), "text/plain", "OpenMetrics is disabled")
			}
			assert.Equal(t, want, seriesOf(families), "the OpenMetrics scrape holds the series of the text scrape")
		default:
			proto = families
			assert.Equal(t, want, seriesOf(families), "protobuf holds the series of the text scrape")
		}
	}
	path := promtool(t)
	if path != "" {
		assert.Equal(t, lints, promtoolLint(t, path, raw), "promtool lint problems of:\n%s", raw)
	}
	return proto, path != ""
}

// badInputRow is one kind of bad input. Its batch holds the bad input among
// good points: good metrics before and after it in the agent's scope, and
// in a second resource. Every row asserts what became of the bad input,
// that the good points all came through and that every scrape is valid.
type badInputRow struct {
	name      string
	configure func(*Config)
	// earlier runs before the row's batch, e.g. to store a first type.
	earlier func(te *testExporter)
	// bad appends the bad input (and points of the same metric that must
	// survive it) to the agent's scope.
	bad func(ms pmetric.MetricSlice)
	// resource appends bad input that is a resource of its own.
	resource func(md pmetric.Metrics)
	// dropped is points_dropped by reason after the row's batch.
	dropped map[string]int64
	// check asserts the outcome on the text scrape's samples and, for what
	// text cannot show, the protobuf families.
	check func(t *testing.T, te *testExporter, got []string, proto map[string]*dto.MetricFamily)
	// lints are the promtool lint problems the input itself causes.
	lints []string
}

func TestBadInput(t *testing.T) {
	for _, row := range badInputRows() {
		t.Run(row.name, func(t *testing.T) {
			tel := componenttest.NewTelemetry()
			t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
			te := startExporterWith(t, metadatatest.NewSettings(tel), func(c *Config) {
				c.EnableOpenMetrics = true
				if row.configure != nil {
					row.configure(c)
				}
			})
			if row.earlier != nil {
				row.earlier(te)
			}
			md, ms := batch(agent)
			addGood(ms)
			row.bad(ms)
			dp := described(ms, "good.after", "").SetEmptyGauge().DataPoints().AppendEmpty()
			dp.SetIntValue(1)
			rm := md.ResourceMetrics().AppendEmpty()
			_ = rm.Resource().Attributes().FromRaw(otherAgent)
			sm := rm.ScopeMetrics().AppendEmpty()
			sm.Scope().SetName("lib")
			sm.Scope().SetVersion("1.0")
			addGood(sm.Metrics())
			if row.resource != nil {
				row.resource(md)
			}
			te.consume(md)
			te.takeZeros()

			want := row.dropped
			if want == nil {
				want = map[string]int64{}
			}
			assert.Equal(t, want, droppedPoints(t, tel), "points dropped by reason")
			got := samples(te.scrape())
			for _, s := range append(goodSamples(agentLabels), goodSamples(otherLabels)...) {
				assert.Contains(t, got, s, "a good point of the batch is missing")
			}
			assert.Contains(t, got, "good_after"+lbl()+" 1", "the good point after the bad input is missing")
			proto, linted := checkScrapes(t, te, row.lints)
			row.check(t, te, got, proto)
			if !linted {
				t.Skip("promtool not in PATH: the row was checked, but its text scrape was not linted")
			}
		})
	}
}

func badInputRows() []badInputRow {
	cumulative, delta := pmetric.AggregationTemporalityCumulative, pmetric.AggregationTemporalityDelta
	return []badInputRow{
		// Names.
		{
			name:    "empty metric name is dropped as invalid_name",
			bad:     func(ms pmetric.MetricSlice) { describedGauge(ms, "", 1, nil) },
			dropped: map[string]int64{"invalid_name": 1},
			check:   func(*testing.T, *testExporter, []string, map[string]*dto.MetricFamily) {},
		},
		{
			name: "metric name without a valid character is dropped as invalid_name",
			bad: func(ms pmetric.MetricSlice) {
				describedGauge(ms, "!!!", 1, nil)
				describedGauge(ms, "запросы.всего", 1, nil)
			},
			dropped: map[string]int64{"invalid_name": 2},
			check:   func(*testing.T, *testExporter, []string, map[string]*dto.MetricFamily) {},
		},
		{
			name: "invalid characters are replaced and a leading digit is prefixed",
			bad: func(ms pmetric.MetricSlice) {
				describedGauge(ms, "1st-stage/load avg", 1, nil)
				describedGauge(ms, "café.requests", 2, nil)
				describedGauge(ms, "bad\xffbyte", 3, nil)
			},
			check: func(t *testing.T, _ *testExporter, got []string, _ map[string]*dto.MetricFamily) {
				assert.Contains(t, got, "_1st_stage_load_avg"+lbl()+" 1")
				assert.Contains(t, got, "caf_requests"+lbl()+" 2")
				assert.Contains(t, got, "bad_byte"+lbl()+" 3")
			},
		},
		{
			name:      "UTF-8 names are kept with a UTF-8 strategy and escaped for scrapers that do not ask for them",
			configure: func(c *Config) { c.TranslationStrategy = NoUTF8EscapingWithSuffixes },
			bad: func(ms pmetric.MetricSlice) {
				describedGauge(ms, "café.requests", 2, map[string]any{"clé.é": "v", `quote"key`: "q", "a:b": "colon"})
				describedGauge(ms, "bad\xffbyte", 3, nil)
			},
			check: func(t *testing.T, te *testExporter, got []string, proto map[string]*dto.MetricFamily) {
				// Text and protobuf were negotiated with underscore escaping;
				// "a:b" is a valid metric name but not a valid label name.
				assert.Contains(t, got, "caf__requests"+lbl("a_b=colon", "cl___=v", "quote_key=q")+" 2")
				assert.Contains(t, got, "bad_byte"+lbl()+" 3")
				assert.Contains(t, proto, "caf__requests")
				// A scraper that asks for UTF-8 gets the names as sent.
				for _, accept := range []string{acceptText + ";escaping=allow-utf-8", acceptProtobuf + ";escaping=allow-utf-8"} {
					body, header := te.scrapeRaw(accept)
					families, err := decodeExposition([]byte(body), header.Get("Content-Type"))
					require.NoError(t, err, "%s:\n%s", accept, body)
					require.Contains(t, families, "café.requests", accept)
					require.Contains(t, families, "bad\uFFFDbyte", accept)
					assert.Equal(t, "café.requests"+lbl("a_b=colon", "clé.é=v", `quote"key=q`)+" 2", samples(map[string]*dto.MetricFamily{"café.requests": families["café.requests"]})[0])
				}
			},
		},
		{
			name:      "UTF-8 names that escape alike keep the first family and join their labels",
			configure: func(c *Config) { c.TranslationStrategy = NoUTF8EscapingWithSuffixes },
			bad: func(ms pmetric.MetricSlice) {
				describedGauge(ms, "disk.used", 1, map[string]any{"mount.point": "/", "mount_point": "root"})
				describedGauge(ms, "disk_used", 2, nil) // the scrape would write disk_used twice
			},
			dropped: map[string]int64{"type_conflict": 1},
			check: func(t *testing.T, _ *testExporter, got []string, _ map[string]*dto.MetricFamily) {
				assert.Contains(t, got, "disk_used"+lbl("mount_point=/;root")+" 1")
				assert.NotContains(t, got, "disk_used"+lbl()+" 2")
			},
		},
		{
			name:      "UTF-8 attribute names that escape alike keep the first series and drop the others as label_clash",
			configure: func(c *Config) { c.TranslationStrategy = NoUTF8EscapingWithSuffixes },
			bad: func(ms pmetric.MetricSlice) {
				dps := described(ms, "clash", "").SetEmptyGauge().DataPoints()
				for i, attrs := range []map[string]any{
					{"a.b": "x"},
					{"a-b": "x"}, // a_b="x" again
					{"a_b": "x"}, // and again
					{"a.b": "y"},
					{"a.b": "x", "a-b": "y"}, // one label: a_b="y;x", "a-b" first
					{"a_b": "y;x"},           // that one again
					{"a_b": "x;y"},
				} {
					dp := dps.AppendEmpty()
					dp.SetIntValue(int64(i + 1))
					_ = dp.Attributes().FromRaw(attrs)
				}
			},
			dropped: map[string]int64{"label_clash": 3},
			check: func(t *testing.T, te *testExporter, got []string, _ map[string]*dto.MetricFamily) {
				want := []string{
					"clash" + lbl("a_b=x") + " 1",
					"clash" + lbl("a_b=y") + " 4",
					"clash" + lbl("a_b=y;x") + " 5",
					"clash" + lbl("a_b=x;y") + " 7",
				}
				assert.ElementsMatch(t, want, filterPrefix(got, "clash{"))
				// The same series for a scraper that takes UTF-8 names.
				for _, accept := range []string{acceptText + ";escaping=allow-utf-8", acceptProtobuf + ";escaping=allow-utf-8"} {
					body, header := te.scrapeRaw(accept)
					families, err := decodeExposition([]byte(body), header.Get("Content-Type"))
					require.NoError(t, err, "%s:\n%s", accept, body)
					assert.ElementsMatch(t, []string{
						"clash" + lbl("a.b=x") + " 1",
						"clash" + lbl("a.b=y") + " 4",
						"clash" + lbl("a-b=y", "a.b=x") + " 5",
						"clash" + lbl("a_b=x;y") + " 7",
					}, samples(map[string]*dto.MetricFamily{"clash": families["clash"]}), accept)
				}
			},
		},
		{
			name:    "a metric named target_info is dropped: the exporter writes that family",
			bad:     func(ms pmetric.MetricSlice) { describedGauge(ms, "target_info", 5, nil) },
			dropped: map[string]int64{"type_conflict": 1},
			check: func(t *testing.T, _ *testExporter, got []string, _ map[string]*dto.MetricFamily) {
				assert.NotContains(t, got, "target_info"+lbl()+" 5")
				assert.Contains(t, got, "target_info{host_name=h1,instance=i-1,job=shop/api} 1")
			},
		},
		{
			name: "a family whose name another family's series take is dropped as type_conflict",
			bad: func(ms pmetric.MetricSlice) {
				histogramPoint(histogramPoints(ms, "job.duration", cumulative), "good", []float64{1}, []uint64{1, 1}, 2)
				describedGauge(ms, "job.duration.count", 9, nil) // job_duration_count is the histogram's
				counter(ms, "jobs", cumulative).AppendEmpty().SetIntValue(3)
				describedGauge(ms, "jobs", 9, nil) // OpenMetrics types jobs_total as "jobs"
			},
			dropped: map[string]int64{"type_conflict": 2},
			check: func(t *testing.T, _ *testExporter, got []string, _ map[string]*dto.MetricFamily) {
				assert.Contains(t, got, "job_duration_count"+pointLabels("good")+" 2")
				assert.Contains(t, got, "jobs_total"+lbl()+" 3")
				assert.Empty(t, filterPrefix(got, "jobs{"), "the gauge jobs is dropped")
			},
		},
		{
			name:      "without OpenMetrics a counter x_total and a gauge x are both served",
			configure: func(c *Config) { c.EnableOpenMetrics = false },
			bad: func(ms pmetric.MetricSlice) {
				counter(ms, "jobs", cumulative).AppendEmpty().SetIntValue(3)
				describedGauge(ms, "jobs", 9, nil) // clashes only in OpenMetrics, never served here
			},
			check: func(t *testing.T, _ *testExporter, got []string, _ map[string]*dto.MetricFamily) {
				assert.Contains(t, got, "jobs_total"+lbl()+" 3")
				assert.Contains(t, got, "jobs"+lbl()+" 9")
			},
		},
		{
			name: "the same family with another type from another agent is dropped as type_conflict",
			earlier: func(te *testExporter) {
				md, ms := batch(otherAgent)
				describedGauge(ms, "shared.value", 1, nil)
				te.consume(md)
			},
			bad: func(ms pmetric.MetricSlice) {
				histogramPoint(histogramPoints(ms, "shared.value", cumulative), "bad", []float64{1}, []uint64{1, 0}, 1)
			},
			dropped: map[string]int64{"type_conflict": 1},
			check: func(t *testing.T, _ *testExporter, got []string, _ map[string]*dto.MetricFamily) {
				assert.Contains(t, got, "shared_value{"+otherLabels+"} 1")
				assert.Empty(t, filterPrefix(got, "shared_value_count"), "the histogram is dropped")
			},
		},
		{
			name: "the same name with other units from another agent is another family",
			earlier: func(te *testExporter) {
				md, ms := batch(otherAgent)
				dp := described(ms, "payload.size", "By").SetEmptyGauge().DataPoints().AppendEmpty()
				dp.SetIntValue(2048)
				te.consume(md)
			},
			bad: func(ms pmetric.MetricSlice) {
				dp := described(ms, "payload.size", "KiBy").SetEmptyGauge().DataPoints().AppendEmpty()
				dp.SetIntValue(2)
			},
			check: func(t *testing.T, _ *testExporter, got []string, _ map[string]*dto.MetricFamily) {
				assert.Contains(t, got, "payload_size_bytes{"+otherLabels+"} 2048")
				assert.Contains(t, got, "payload_size_kibibytes"+lbl()+" 2")
			},
			// promlint wants base units; KiBy is the agent's choice.
			lints: []string{`payload_size_kibibytes use base unit "bytes" instead of "kibibytes"`},
		},
		{
			name: "the same name with units the name does not show shares the first family and its HELP",
			earlier: func(te *testExporter) {
				md, ms := batch(otherAgent)
				m := described(ms, "payload.sent", "{packet}")
				m.SetDescription("Packets.")
				m.SetEmptyGauge().DataPoints().AppendEmpty().SetIntValue(20)
				te.consume(md)
			},
			bad: func(ms pmetric.MetricSlice) {
				m := described(ms, "payload.sent", "{datagram}")
				m.SetDescription("Datagrams.")
				m.SetEmptyGauge().DataPoints().AppendEmpty().SetIntValue(2)
			},
			check: func(t *testing.T, _ *testExporter, got []string, proto map[string]*dto.MetricFamily) {
				assert.Contains(t, got, "payload_sent{"+otherLabels+"} 20")
				assert.Contains(t, got, "payload_sent"+lbl()+" 2")
				assert.Equal(t, "Packets.", proto["payload_sent"].GetHelp())
			},
		},
		// Labels.
		{
			name: "attribute names that collide after sanitisation are one label with joined values",
			bad: func(ms pmetric.MetricSlice) {
				describedGauge(ms, "collide", 1, map[string]any{"a.b": "dot", "a_b": "underscore", "a-b": "dash"})
				// A point attribute named like a resource label joins it too.
				describedGauge(ms, "collide.job", 1, map[string]any{"job": "batch"})
			},
			check: func(t *testing.T, _ *testExporter, got []string, _ map[string]*dto.MetricFamily) {
				assert.Contains(t, got, "collide"+lbl("a_b=dash;dot;underscore")+" 1")
				assert.Contains(t, got, "collide_job{instance=i-1,job=batch;shop/api,otel_scope_name=lib,otel_scope_version=1.0} 1")
			},
		},
		{
			name: "an attribute key that cannot be a label name drops its point as invalid_name",
			bad: func(ms pmetric.MetricSlice) {
				dps := described(ms, "keyed", "").SetEmptyGauge().DataPoints()
				for _, key := range []string{"", "__", "ok"} {
					dp := dps.AppendEmpty()
					dp.SetIntValue(1)
					dp.Attributes().PutStr(key, "v")
				}
			},
			dropped: map[string]int64{"invalid_name": 2},
			check: func(t *testing.T, _ *testExporter, got []string, _ map[string]*dto.MetricFamily) {
				assert.Contains(t, got, "keyed"+lbl("ok=v")+" 1")
				assert.Len(t, filterPrefix(got, "keyed{"), 1)
			},
		},
		{
			name: "reserved label names are kept under exported_",
			bad: func(ms pmetric.MetricSlice) {
				// __name__ would make the whole scrape unparseable.
				describedGauge(ms, "reserved", 1, map[string]any{"__name__": "x"})
				histogramPoint(histogramPoints(ms, "reserved.hist", cumulative), "good", nil, nil, 1).Attributes().PutStr("le", "attr")
			},
			check: func(t *testing.T, _ *testExporter, got []string, _ map[string]*dto.MetricFamily) {
				assert.Contains(t, got, "reserved"+lbl("exported___name__=x")+" 1")
				assert.Contains(t, got, "reserved_hist_count"+pointLabels("good", "exported_le=attr")+" 1")
			},
		},
		{
			name: "resource attributes promoted to labels are renamed where the exposition owns the label",
			configure: func(c *Config) {
				c.ResourceConstantLabels.Included = []string{"le", "quantile", "__name__"}
			},
			bad: func(pmetric.MetricSlice) {},
			resource: func(md pmetric.Metrics) {
				rm := md.ResourceMetrics().AppendEmpty()
				_ = rm.Resource().Attributes().FromRaw(map[string]any{"service.name": "res", "service.instance.id": "i-4", "le": "r", "quantile": "q", "__name__": "n"})
				ms := rm.ScopeMetrics().AppendEmpty().Metrics()
				histogramPoint(histogramPoints(ms, "res.hist", cumulative), "good", nil, nil, 1)
				s := described(ms, "res.quantiles", "").SetEmptySummary().DataPoints().AppendEmpty()
				s.SetCount(1)
			},
			check: func(t *testing.T, _ *testExporter, got []string, _ map[string]*dto.MetricFamily) {
				assert.Contains(t, got, "res_hist_count{exported___name__=n,exported_le=r,instance=i-4,job=res,point=good,quantile=q} 1")
				assert.Contains(t, got, "res_quantiles_count{exported___name__=n,exported_quantile=q,instance=i-4,job=res,le=r} 1")
				assert.Contains(t, got, "target_info{exported___name__=n,instance=i-4,job=res,le=r,quantile=q} 1")
			},
			// Where they are no bucket or quantile, le and quantile are plain
			// labels, which promlint warns about: the agent's attribute names.
			lints: []string{
				`res_hist non-summary metrics should not have "quantile" label`,
				`res_quantiles non-histogram metrics should not have "le" label`,
				`target_info non-histogram metrics should not have "le" label`,
				`target_info non-summary metrics should not have "quantile" label`,
			},
		},
		{
			name: "label values are escaped and invalid UTF-8 is replaced, in every label and in HELP",
			bad: func(ms pmetric.MetricSlice) {
				values := []string{`say "hi"`, `C:\temp\`, "two\nlines", "ok\xffok", strings.Repeat("x", 64<<10), "}, # {"}
				m := described(ms, "escaped", "")
				m.SetDescription("Help with \\ and\nnewline and \xff.")
				dps := m.SetEmptyGauge().DataPoints()
				for i, v := range values {
					dp := dps.AppendEmpty()
					dp.SetIntValue(int64(i))
					dp.Attributes().PutStr("v", v)
				}
			},
			check: func(t *testing.T, _ *testExporter, got []string, proto map[string]*dto.MetricFamily) {
				for i, v := range []string{`say "hi"`, `C:\temp\`, "two\nlines", "ok\uFFFDok", strings.Repeat("x", 64<<10), "}, # {"} {
					assert.Contains(t, got, "escaped"+lbl("v="+v)+" "+fmt.Sprint(i))
				}
				assert.Equal(t, "Help with \\ and\nnewline and \uFFFD.", proto["escaped"].GetHelp())
			},
		},
		{
			name: "invalid UTF-8 in resource and scope attributes is replaced",
			bad:  func(pmetric.MetricSlice) {},
			resource: func(md pmetric.Metrics) {
				rm := md.ResourceMetrics().AppendEmpty()
				_ = rm.Resource().Attributes().FromRaw(map[string]any{"service.name": "bad\xffjob", "service.instance.id": "i\xff3", "host.name": "h\xff"})
				sm := rm.ScopeMetrics().AppendEmpty()
				sm.Scope().SetName("scope\xff")
				describedGauge(sm.Metrics(), "utf8.resource", 1, nil)
				// Raw, these two would be one agent: job and instance are
				// kept apart by a 0xff byte.
				for _, res := range []map[string]any{
					{"service.name": "a\xffb", "service.instance.id": "c"},
					{"service.name": "a", "service.instance.id": "b\xffc"},
				} {
					rm := md.ResourceMetrics().AppendEmpty()
					_ = rm.Resource().Attributes().FromRaw(res)
					describedGauge(rm.ScopeMetrics().AppendEmpty().Metrics(), "utf8.resource", 2, nil)
				}
			},
			check: func(t *testing.T, _ *testExporter, got []string, _ map[string]*dto.MetricFamily) {
				assert.Contains(t, got, "utf8_resource{instance=i\uFFFD3,job=bad\uFFFDjob,otel_scope_name=scope\uFFFD} 1")
				assert.Contains(t, got, "target_info{host_name=h\uFFFD,instance=i\uFFFD3,job=bad\uFFFDjob} 1")
				assert.Contains(t, got, "target_info{instance=c,job=a\uFFFDb} 1")
				assert.Contains(t, got, "target_info{instance=b\uFFFDc,job=a} 1")
			},
		},
		{
			name: "500 attributes on one point are 500 labels",
			bad: func(ms pmetric.MetricSlice) {
				attrs := map[string]any{}
				for i := range 500 {
					attrs[fmt.Sprintf("attr.%03d", i)] = i
				}
				describedGauge(ms, "wide", 1, attrs)
			},
			check: func(t *testing.T, _ *testExporter, got []string, proto map[string]*dto.MetricFamily) {
				require.Len(t, proto["wide"].GetMetric(), 1)
				labels := proto["wide"].GetMetric()[0].GetLabel()
				assert.Len(t, labels, 500+4)
				assert.Equal(t, "attr_000", labels[0].GetName())
				assert.Equal(t, "499", labels[499].GetValue())
			},
		},
		// Values.
		{
			name: "NaN and infinite gauges are exposed as they are",
			bad: func(ms pmetric.MetricSlice) {
				for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
					describedGauge(ms, "special", v, map[string]any{"v": fmt.Sprint(v)})
				}
			},
			check: func(t *testing.T, _ *testExporter, got []string, _ map[string]*dto.MetricFamily) {
				assert.Contains(t, got, "special"+lbl("v=NaN")+" NaN")
				assert.Contains(t, got, "special"+lbl("v=+Inf")+" +Inf")
				assert.Contains(t, got, "special"+lbl("v=-Inf")+" -Inf")
			},
		},
		{
			name: "a negative or NaN counter is dropped as invalid",
			bad: func(ms pmetric.MetricSlice) {
				dps := counter(ms, "signed", cumulative)
				for i, v := range []float64{-1, math.NaN(), math.Inf(-1), 5, math.Inf(1)} {
					dp := dps.AppendEmpty()
					dp.SetDoubleValue(v)
					dp.Attributes().PutInt("i", int64(i))
				}
				dp := dps.AppendEmpty()
				dp.SetIntValue(-3)
				dp.Attributes().PutStr("i", "int")
				d := counter(ms, "signed.delta", delta).AppendEmpty()
				d.SetIntValue(-2)
				d.SetStartTimestamp(ts(0))
				d.SetTimestamp(ts(time.Minute))
			},
			dropped: map[string]int64{"invalid": 5},
			check: func(t *testing.T, _ *testExporter, got []string, _ map[string]*dto.MetricFamily) {
				assert.Equal(t, []string{"signed_total" + lbl("i=3") + " 5", "signed_total" + lbl("i=4") + " +Inf"}, filterPrefix(got, "signed_total{"))
			},
		},
		// Histograms.
		{
			name: "a histogram whose buckets do not add up to its count is dropped as invalid",
			bad: func(ms pmetric.MetricSlice) {
				dps := histogramPoints(ms, "mismatch", cumulative)
				histogramPoint(dps, "over", []float64{1}, []uint64{3, 3}, 4)
				histogramPoint(dps, "under", []float64{1}, []uint64{1, 1}, 4)
				histogramPoint(dps, "short", []float64{1, 2}, []uint64{1, 1}, 2)
				histogramPoint(dps, "long", []float64{1}, []uint64{1, 1, 1}, 3)
				histogramPoint(dps, "overflow", []float64{1}, []uint64{math.MaxUint64, 2}, 1)
				histogramPoint(dps, "good", []float64{1}, []uint64{1, 1}, 2)
			},
			dropped: map[string]int64{"invalid": 5},
			check: func(t *testing.T, _ *testExporter, got []string, _ map[string]*dto.MetricFamily) {
				assert.Equal(t, []string{"mismatch_count" + pointLabels("good") + " 2"}, filterPrefix(got, "mismatch_count{"))
			},
		},
		{
			name: "histogram bounds out of order are sorted, and NaN and +Inf bounds left out",
			bad: func(ms pmetric.MetricSlice) {
				dps := histogramPoints(ms, "unordered", cumulative)
				// Each bound keeps the count at its first position.
				histogramPoint(dps, "shuffled", []float64{5, 1, 5, 2}, []uint64{4, 1, 9, 2, 3}, 19)
				histogramPoint(dps, "special", []float64{math.NaN(), 1, math.Inf(1)}, []uint64{2, 1, 3, 4}, 10)
			},
			check: func(t *testing.T, _ *testExporter, got []string, _ map[string]*dto.MetricFamily) {
				assert.Equal(t, []string{
					"unordered_bucket" + pointLabels("shuffled") + " le=+Inf 19",
					"unordered_bucket" + pointLabels("shuffled") + " le=1 1",
					"unordered_bucket" + pointLabels("shuffled") + " le=2 3",
					"unordered_bucket" + pointLabels("shuffled") + " le=5 7",
					"unordered_bucket" + pointLabels("special") + " le=+Inf 10",
					"unordered_bucket" + pointLabels("special") + " le=1 1",
				}, filterPrefix(got, "unordered_bucket{"))
			},
		},
		{
			name: "a histogram without bucket counts keeps its count and sum only",
			bad: func(ms pmetric.MetricSlice) {
				histogramPoint(histogramPoints(ms, "bare", cumulative), "good", []float64{1, 2}, nil, 5)
			},
			check: func(t *testing.T, _ *testExporter, got []string, _ map[string]*dto.MetricFamily) {
				assert.Equal(t, []string{
					"bare_bucket" + pointLabels("good") + " le=+Inf 5",
					"bare_count" + pointLabels("good") + " 5",
					"bare_sum" + pointLabels("good") + " 1.5",
				}, filterPrefix(got, "bare_"))
			},
		},
		{
			name: "an exponential histogram outside the native range or inconsistent is dropped as invalid",
			bad: func(ms pmetric.MetricSlice) {
				dps := exponentialPoints(ms, "expo", cumulative)
				exponentialPoint(dps, "coarse", -5, 0, []uint64{1}, 1)
				exponentialPoint(dps, "beyond-float64", 0, 5000, []uint64{1}, 1)
				exponentialPoint(dps, "int32-overflow", 30, math.MaxInt32, []uint64{1, 1}, 2)
				exponentialPoint(dps, "mismatch", 0, 0, []uint64{1, 1}, 3)
				exponentialPoint(dps, "negative-zero-threshold", 0, 0, []uint64{1}, 1).SetZeroThreshold(-1)
				exponentialPoint(dps, "nan-sum-over", 0, 0, []uint64{2}, 1).SetSum(math.NaN())
				exponentialPoint(dps, "nan-sum-under", 0, 0, []uint64{1}, 2).SetSum(math.NaN())
				exponentialPoint(dps, "fine", 12, 16, []uint64{1, 1}, 2)
				exponentialPoint(dps, "good", 3, -2, []uint64{1, 2, 3}, 6)
			},
			dropped: map[string]int64{"invalid": 6},
			check: func(t *testing.T, _ *testExporter, got []string, proto map[string]*dto.MetricFamily) {
				schemas := map[string]int32{}
				for _, m := range proto["expo"].GetMetric() {
					for _, l := range m.GetLabel() {
						if l.GetName() == "point" {
							schemas[l.GetValue()] = m.GetHistogram().GetSchema()
						}
					}
				}
				// Finer than native histograms allow: downscaled to 8.
				// A NaN sum allows fewer observations in the buckets than the count.
				assert.Equal(t, map[string]int32{"fine": 8, "good": 3, "nan-sum-under": 0}, schemas)
			},
		},
		{
			name: "exponential deltas with buckets far apart are merged at a coarser schema",
			earlier: func(te *testExporter) {
				md, ms := batch(agent)
				exponentialPoint(exponentialPoints(ms, "spread", delta), "good", 8, -200000, []uint64{1}, 1)
				te.consume(md)
			},
			bad: func(ms pmetric.MetricSlice) {
				dp := exponentialPoint(exponentialPoints(ms, "spread", delta), "good", 8, 200000, []uint64{1}, 1)
				dp.SetStartTimestamp(ts(time.Minute))
				dp.SetTimestamp(ts(2 * time.Minute))
			},
			check: func(t *testing.T, _ *testExporter, got []string, proto map[string]*dto.MetricFamily) {
				assert.Contains(t, got, "spread_count"+pointLabels("good")+" 2")
				require.Len(t, proto["spread"].GetMetric(), 1)
				h := proto["spread"].GetMetric()[0].GetHistogram()
				// 400000 scale-8 buckets apart: 3126 dense buckets at schema 1,
				// 6251 at schema 2, over the 4096 a merge may hold.
				assert.Equal(t, int32(1), h.GetSchema())
				assert.Equal(t, []int64{1, 0}, h.GetPositiveDelta())
				require.Len(t, h.GetPositiveSpan(), 2)
				assert.Equal(t, int32(-1562), h.GetPositiveSpan()[0].GetOffset())
				assert.Equal(t, int32(3124), h.GetPositiveSpan()[1].GetOffset())
			},
		},
		// Temporality and timestamps.
		{
			name: "a delta without a start time is dropped as invalid",
			bad: func(ms pmetric.MetricSlice) {
				c := counter(ms, "nostart", delta)
				c.AppendEmpty().SetIntValue(1)
				good := c.AppendEmpty()
				good.SetIntValue(2)
				good.SetStartTimestamp(ts(0))
				good.SetTimestamp(ts(time.Minute))
				good.Attributes().PutStr("point", "good")
				histogramPoint(histogramPoints(ms, "nostart.hist", delta), "bad", []float64{1}, []uint64{1, 0}, 1).SetStartTimestamp(0)
				exponentialPoint(exponentialPoints(ms, "nostart.encoder.Options", delta), "bad", 0, 0, []uint64{1}, 1).SetStartTimestamp(0)
			},
			dropped: map[string]int64{"invalid": 3},
			check: func(t *testing.T, _ *testExporter, got []string, _ map[string]*dto.MetricFamily) {
				assert.Equal(t, []string{"nostart_total" + pointLabels("good") + " 2"}, filterPrefix(got, "nostart"))
			},
		},
		{
			name: "a point older than the stored one is dropped as out_of_order",
			earlier: func(te *testExporter) {
				md, ms := batch(agent)
				describedGauge(ms, "ooo", 2, nil).SetTimestamp(ts(2 * time.Minute))
				te.consume(md)
			},
			bad: func(ms pmetric.MetricSlice) {
				describedGauge(ms, "ooo", 1, nil).SetTimestamp(ts(time.Minute))
				// Within one batch too: the second point is older.
				dps := described(ms, "ooo.batch", "").SetEmptyGauge().DataPoints()
				for _, at := range []time.Duration{2 * time.Minute, time.Minute} {
					dp := dps.AppendEmpty()
					dp.SetIntValue(int64(at / time.Minute))
					dp.SetTimestamp(ts(at))
				}
			},
			dropped: map[string]int64{"out_of_order": 2},
			check: func(t *testing.T, _ *testExporter, got []string, _ map[string]*dto.MetricFamily) {
				assert.Contains(t, got, "ooo"+lbl()+" 2")
				assert.Contains(t, got, "ooo_batch"+lbl()+" 2")
			},
		},
		{
			name: "a repeated timestamp replaces a cumulative point, and a repeated delta is dropped as out_of_order",
			earlier: func(te *testExporter) {
				md, ms := batch(agent)
				dp := counter(ms, "retried", delta).AppendEmpty()
				dp.SetIntValue(5)
				dp.SetStartTimestamp(ts(0))
				dp.SetTimestamp(ts(time.Minute))
				te.consume(md)
			},
			bad: func(ms pmetric.MetricSlice) {
				// The same delta again (a retried batch): counted once.
				dp := counter(ms, "retried", delta).AppendEmpty()
				dp.SetIntValue(5)
				dp.SetStartTimestamp(ts(0))
				dp.SetTimestamp(ts(time.Minute))
				dps := described(ms, "same.time", "").SetEmptyGauge().DataPoints()
				for _, v := range []int64{1, 2} {
					dp := dps.AppendEmpty()
					dp.SetIntValue(v)
					dp.SetTimestamp(ts(time.Minute))
				}
			},
			dropped: map[string]int64{"out_of_order": 1},
			check: func(t *testing.T, _ *testExporter, got []string, _ map[string]*dto.MetricFamily) {
				assert.Contains(t, got, "retried_total"+lbl()+" 5")
				assert.Contains(t, got, "same_time"+lbl()+" 2")
			},
		},
	}
}

func filterPrefix(got []string, prefix string) []string {
	var out []string
	for _, s := range got {
		if strings.HasPrefix(s, prefix) {
			out = append(out, s)
		}
	}
	return out
}

// TestNamespaceAndConstLabelsCannotBreakTheScrape: a namespace that is no
// valid name prefix, and const labels and resource attributes copied onto
// every series that the exposition owns, are repaired as agents' names and
// attributes are.
func TestNamespaceAndConstLabelsCannotBreakTheScrape(t *testing.T) {
	te := startExporter(t, func(c *Config) {
		c.EnableOpenMetrics = true
		c.Namespace = "my-gw"
		// A const label named __name__ now fails validate (config_test.go);
		// the reserved name from a resource attribute is renamed here.
		c.ConstLabels = map[string]string{"region": "eu"}
		c.ResourceToTelemetryConversion.Enabled = true
	})
	md, ms := batch(map[string]any{"service.name": "api", "service.instance.id": "i-1", "le": "x"})
	histogramPoint(histogramPoints(ms, "latency", pmetric.AggregationTemporalityCumulative), "good", nil, nil, 1)
	te.consume(md)
	got := samples(te.scrape())
	assert.Contains(t, got, "my_gw_latency_count{exported_le=x,instance=i-1,job=api,otel_scope_name=lib,otel_scope_version=1.0,point=good,region=eu,service_instance_id=i-1,service_name=api} 1")
	assert.Contains(t, got, "my_gw_target_info{instance=i-1,job=api,le=x} 1")
	// On target_info, a gauge, le is a plain label, which promlint warns
	// about: the agent's attribute name.
	_, linted := checkScrapes(t, te, []string{`my_gw_target_info non-histogram metrics should not have "le" label`})
	if !linted {
		t.Skip("promtool not in PATH: the scrapes parsed, but the text one was not linted")
	}
}
