package conformance

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// badInputCases are the rows of the exporter README's table of bad input,
// each a case named after its row (readme) with the differences from
// contrib the row's input shows. Rows that cases elsewhere cover in whole
// are named there. TestBadInputRowsAreCases checks that every row of the
// table has a case.
var badInputCases = []testCase{
	{
		readme: "an empty metric name, or one without a character Prometheus allows (`!!!`, all Cyrillic)",
		name:   "bad_input_metric_name_without_a_valid_character",
		build: single(func(sm pmetric.ScopeMetrics) {
			for _, n := range []string{"", "!!!", "запросы.всего"} {
				intPoint(gauge(sm, n, "", "No valid character."), 1, nil)
			}
			intPoint(gauge(sm, "named", "", "Control."), 1, nil)
		}),
		differences: differences(emptyLabelsLeftOut),
	},
	{
		readme: "other characters Prometheus does not allow, a leading digit, invalid UTF-8 in a name",
		name:   "bad_input_metric_name_repaired",
		build: single(func(sm pmetric.ScopeMetrics) {
			for i, n := range []string{"1st-stage/load avg", "café.requests", "bad\xffbyte"} {
				intPoint(gauge(sm, n, "", "Repaired."), int64(i), nil)
			}
		}),
		differences: differences(emptyLabelsLeftOut),
	},
	{
		readme: utf8NamesRow,
		name:   "bad_input_utf8_names_under_a_utf8_strategy",
		config: map[string]any{"translation_strategy": "NoUTF8EscapingWithSuffixes"},
		build: single(func(sm pmetric.ScopeMetrics) {
			intPoint(gauge(sm, "café.requests", "", "UTF-8."), 2, map[string]any{"clé.é": "v", `quote"key`: "q"})
			intPoint(gauge(sm, "bad\xffbyte", "", "Invalid UTF-8."), 3, nil)
		}),
		// Contrib drops a name with invalid UTF-8.
		differences: differences(emptyLabelsLeftOut,
			onlyOurs(utf8NamesRow, familyIs("bad_byte", "bad\uFFFDbyte")),
			utf8NamesEscapedInProtobuf),
	},
	{
		// Contrib writes a:b unquoted in the text format, which no parser
		// takes: the scrape is lost.
		readme: utf8NamesRow,
		name:   "bad_input_colon_in_a_label_name_under_a_utf8_strategy",
		config: map[string]any{"translation_strategy": "NoUTF8EscapingWithSuffixes"},
		expect: expectReferenceInvalid,
		build: single(func(sm pmetric.ScopeMetrics) {
			intPoint(gauge(sm, "colon_label", "", "A colon in a label name."), 1, map[string]any{"a:b": "colon"})
			intPoint(gauge(sm, "underscores_only", "", "A label name of underscores once escaped."), 2, map[string]any{"_:": "x"})
		}),
		check: func(e *exposition) string {
			if !slices.ContainsFunc(e.samples, labelIs("colon_label", "a_b", "colon").match) {
				return "colon_label{a_b=\"colon\"} missing"
			}
			if slices.ContainsFunc(e.samples, familyIs("underscores_only").match) {
				return "underscores_only served: a label name _: is dropped as invalid_name"
			}
			return ""
		},
	},
	{
		readme: "under a UTF-8 `translation_strategy`, a new series that differs from another of its family only in label names that escape alike, which a scraper that does not ask for UTF-8 names (Prometheus 2, Prometheus 3's protobuf scrape) would get as the same series twice: `{a.b=\"x\"}` next to `{a_b=\"x\"}` or `{a-b=\"x\"}`, `{a_b=\"y;x\"}` next to `{a-b=\"y\",a.b=\"x\"}`",
		name:   "bad_input_label_names_that_escape_alike",
		config: map[string]any{"translation_strategy": "NoUTF8EscapingWithSuffixes"},
		build: single(func(sm pmetric.ScopeMetrics) {
			dps := gauge(sm, "clash", "", "Label names that escape alike.")
			for i, attrs := range []map[string]any{{"a.b": "x"}, {"a-b": "x"}, {"a_b": "x"}, {"a.b": "y"}} {
				intPoint(dps, int64(i+1), attrs)
			}
		}),
		// Contrib serves all four: three are one series to a scraper that
		// does not ask for UTF-8 names.
		differences: differences(emptyLabelsLeftOut,
			onlyContrib(labelClash, valueIs("clash", 2), valueIs("clash", 3)),
			utf8NamesEscapedInProtobuf),
	},
	{
		readme: familyTakenRow,
		name:   "bad_input_family_name_taken",
		build: single(func(sm pmetric.ScopeMetrics) {
			intPoint(gauge(sm, "target_info", "", "Takes target_info."), 5, nil)
			intPoint(counter(sm, "jobs", "", "Counter."), 3, nil)
			intPoint(gauge(sm, "jobs", "", "Gauge named as the counter's family, served without OpenMetrics."), 9, nil)
		}),
		differences: differences(emptyLabelsLeftOut),
	},
	{
		readme: familyTakenRow,
		name:   "bad_input_family_name_taken_by_a_histogram_series",
		// Contrib serves whichever of the two families it collects first,
		// from scrape to scrape.
		expect: expectNondeterministic,
		build: single(func(sm pmetric.ScopeMetrics) {
			histPoint(histogram(sm, "job.duration", "", "Histogram first.", pmetric.AggregationTemporalityCumulative),
				[]float64{1}, []uint64{1, 1}, 3, nil)
			intPoint(gauge(sm, "job.duration.count", "", "Takes the histogram's _count."), 9, nil)
		}),
		check: func(e *exposition) string {
			if !slices.ContainsFunc(e.samples, typedFamilyIs("job_duration", "histogram").match) {
				return "the histogram job_duration, first seen, is missing"
			}
			if slices.ContainsFunc(e.samples, typedFamilyIs("job_duration_count", "gauge").match) {
				return "the gauge job_duration_count is served"
			}
			return ""
		},
	},
	{
		readme:   familyTakenRow,
		name:     "bad_input_family_name_taken_in_open_metrics",
		config:   map[string]any{"enable_open_metrics": true},
		oursOnly: map[string]any{"enable_open_metrics_created_samples": true},
		build: single(func(sm pmetric.ScopeMetrics) {
			intPoint(counter(sm, "jobs", "", "Counter."), 3, nil)
			intPoint(gauge(sm, "jobs", "", "Gauge named as the counter's OpenMetrics family."), 9, nil)
			intPoint(counter(sm, "runs", "", "Counter."), 4, nil)
			intPoint(gauge(sm, "runs.created", "", "Gauge named as the counter's _created."), 9, nil)
		}),
		// Ours drops both gauges from every format; contrib serves them.
		differences: differences(emptyLabelsLeftOut,
			onlyContrib(familyTaken, typedFamilyIs("jobs", "gauge"), typedFamilyIs("runs_created", "gauge")),
			createdSamples),
	},
	{
		readme: familyTakenRow,
		name:   "bad_input_family_name_taken_by_a_utf8_name",
		config: map[string]any{"translation_strategy": "NoUTF8EscapingWithSuffixes"},
		// Contrib writes the family disk_used twice where names are
		// escaped, which the text parsers refuse.
		expect: expectReferenceInvalid,
		build: single(func(sm pmetric.ScopeMetrics) {
			intPoint(gauge(sm, "disk.used", "", "Disk used."), 1, nil)
			intPoint(gauge(sm, "disk_used", "", "Disk used, escaped alike."), 2, map[string]any{"point": "second"})
		}),
		check: func(e *exposition) string {
			if !slices.ContainsFunc(e.samples, valueIs("disk_used", 1).match) && !slices.ContainsFunc(e.samples, valueIs("disk.used", 1).match) {
				return "the first family, disk.used, is missing"
			}
			if slices.ContainsFunc(e.samples, func(s sample) bool { _, ok := s.labelValue("point"); return ok }) {
				return "the second family, disk_used, is served"
			}
			return ""
		},
	},
	{
		readme: "the same name with other units",
		name:   "bad_input_same_name_other_units",
		build: func() []pmetric.Metrics {
			md := pmetric.NewMetrics()
			sm := addResource(md, map[string]any{"service.name": "a", "service.instance.id": "1"})
			intPoint(gauge(sm, "payload.size", "By", "Payload size."), 2048, nil)
			intPoint(gauge(sm, "payload.sent", "{packet}", "Payload sent."), 20, nil)
			sm = addResource(md, map[string]any{"service.name": "b", "service.instance.id": "2"})
			intPoint(gauge(sm, "payload.size", "KiBy", "Payload size."), 2, nil)
			intPoint(gauge(sm, "payload.sent", "{datagram}", "Payload sent."), 2, nil)
			return []pmetric.Metrics{md}
		},
		differences: differences(emptyLabelsLeftOut),
	},
	{
		readme: "attribute names that sanitise alike (`a.b`, `a_b`, `a-b`), or a point attribute named like a resource label (`job`)",
		name:   "bad_input_attribute_names_that_sanitise_alike",
		build: single(func(sm pmetric.ScopeMetrics) {
			intPoint(gauge(sm, "collide", "", "Colliding."), 1, map[string]any{"a.b": "dot", "a_b": "underscore", "a-b": "dash"})
			intPoint(gauge(sm, "collide.job", "", "Named like a resource label."), 1, map[string]any{"job": "batch"})
			intPoint(gauge(sm, "collide.control", "", "Control."), 1, nil)
		}),
		// Contrib drops both series (duplicate label names).
		differences: differences(emptyLabelsLeftOut,
			onlyOurs(collidingLabels, labelIs("collide", "a_b", "dash;dot;underscore")),
			onlyOurs(sanitiseAlike, labelIs("collide_job", "job", "batch;shop/checkout"))),
	},
	{
		readme: "an attribute key that cannot be a label name (empty, only underscores)",
		name:   "bad_input_attribute_key_that_cannot_be_a_label_name",
		build: single(func(sm pmetric.ScopeMetrics) {
			dps := gauge(sm, "keyed", "", "Keys.")
			for i, key := range []string{"", "__", "ok"} {
				intPoint(dps, int64(i), map[string]any{key: "v"})
			}
		}),
		differences: differences(emptyLabelsLeftOut),
	},
	{
		readme: reservedLabelRow,
		name:   "bad_input_label_name___name__",
		config: map[string]any{"resource_constant_labels": map[string]any{"included": []any{"__name__"}}},
		build: func() []pmetric.Metrics {
			md := pmetric.NewMetrics()
			sm := addResource(md, defaultResource)
			intPoint(gauge(sm, "reserved", "", "Attribute __name__."), 1, map[string]any{"__name__": "x"})
			intPoint(gauge(sm, "reserved.control", "", "Control."), 1, nil)
			sm = addResource(md, map[string]any{"service.name": "res", "service.instance.id": "i-4", "__name__": "n"})
			intPoint(gauge(sm, "reserved.resource", "", "Resource attribute __name__."), 1, nil)
			return []pmetric.Metrics{md}
		},
		// Contrib drops every series with __name__, target_info included.
		differences: differences(emptyLabelsLeftOut,
			onlyOurs(reservedLabel, labelIs("reserved", "exported___name__", "x"),
				labelIs("reserved_resource", "exported___name__", "n"), labelIs("target_info", "exported___name__", "n"))),
	},
	{
		// The attributes of a point are in histogram_attribute_named_le and
		// summary_attribute_named_quantile.
		readme: reservedLabelRow,
		name:   "bad_input_label_names_le_and_quantile_from_the_resource",
		config: map[string]any{"resource_to_telemetry_conversion": map[string]any{"enabled": true}},
		expect: expectReferenceInvalid,
		build: func() []pmetric.Metrics {
			md := pmetric.NewMetrics()
			sm := addResource(md, map[string]any{"service.name": "res", "service.instance.id": "i-4", "le": "r", "quantile": "q"})
			histPoint(histogram(sm, "res.hist", "", "Resource le.", pmetric.AggregationTemporalityCumulative), []float64{1}, []uint64{1, 0}, 1, nil)
			summaryPoint(summary(sm, "res.quantiles", "", "Resource quantile."), 1, 1, [][2]float64{{0.5, 1}}, nil)
			return []pmetric.Metrics{md}
		},
		check: func(e *exposition) string {
			for _, sel := range []selector{labelIs("res_hist", "exported_le", "r"), labelIs("res_quantiles", "exported_quantile", "q")} {
				if !slices.ContainsFunc(e.samples, sel.match) {
					return sel.what + " missing"
				}
			}
			return ""
		},
	},
	{
		readme: "label values with quotes, backslashes, newlines; 64 KiB values; 500 attributes",
		name:   "bad_input_label_values_escaped_and_kept_whole",
		build: single(func(sm pmetric.ScopeMetrics) {
			dps := gauge(sm, "escaped", "", "Escaped values.")
			for i, v := range []string{`say "hi"`, `C:\temp\`, "two\nlines", strings.Repeat("x", 64<<10), "}, # {"} {
				intPoint(dps, int64(i), map[string]any{"v": v})
			}
			attrs := map[string]any{}
			for i := range 500 {
				attrs[fmt.Sprintf("attr.%03d", i)] = int64(i)
			}
			intPoint(gauge(sm, "wide", "", "500 attributes."), 1, attrs)
		}),
		differences: differences(emptyLabelsLeftOut),
	},
	{
		readme: "invalid UTF-8 in label values, `job`, `instance`, scope, target_info or HELP",
		name:   "bad_input_invalid_utf8_in_values",
		build: func() []pmetric.Metrics {
			md := pmetric.NewMetrics()
			sm := addResource(md, defaultResource)
			intPoint(gauge(sm, "utf8.value", "", "Invalid UTF-8 in a value."), 1, map[string]any{"v": "ok\xffok"})
			intPoint(gauge(sm, "utf8.help", "", "Help with \xff."), 1, nil)
			intPoint(gauge(sm, "utf8.control", "", "Control."), 1, map[string]any{"v": "ok"})
			sm = addResource(md, map[string]any{"service.name": "bad\xffjob", "service.instance.id": "i\xff3", "host.name": "h\xff"})
			sm.Scope().SetName("scope\xff")
			intPoint(gauge(sm, "utf8.resource", "", "Invalid UTF-8 in the resource and scope."), 2, nil)
			return []pmetric.Metrics{md}
		},
		// Contrib drops every series with invalid UTF-8 in a label value, and
		// writes HELP as sent.
		differences: differences(emptyLabelsLeftOut,
			onlyOurs(invalidUTF8Values, labelIs("utf8_value", "v", "ok\uFFFDok"),
				labelIs("utf8_resource", "job", "bad\uFFFDjob"), labelIs("target_info", "job", "bad\uFFFDjob")),
			helpDiffers(invalidUTF8, "utf8_help", "Help with \xff.", "Help with \uFFFD.")),
	},
	{
		readme: "a counter (monotonic sum) or a delta of one that is negative or NaN (OpenMetrics forbids both)",
		name:   "bad_input_negative_or_nan_counter",
		build: single(func(sm pmetric.ScopeMetrics) {
			dps := counter(sm, "signed", "", "Cumulative.")
			for _, v := range []float64{-1, math.NaN(), math.Inf(-1), 5, math.Inf(1)} {
				doublePoint(dps, v, map[string]any{"v": formatFloat(v)})
			}
			intPoint(dps, -3, map[string]any{"v": "int"})
			d := sum(sm, "signed.delta", "", "Delta.", true, pmetric.AggregationTemporalityDelta)
			intPoint(d, -2, map[string]any{"v": "-2"})
			doublePoint(d, math.NaN(), map[string]any{"v": "NaN"})
			intPoint(d, 2, map[string]any{"v": "2"})
		}),
		differences: differences(emptyLabelsLeftOut,
			onlyContrib("a negative or NaN counter",
				labelIs("signed_total", "v", "-1"), labelIs("signed_total", "v", "NaN"), labelIs("signed_total", "v", "-Inf"),
				labelIs("signed_total", "v", "int"), labelIs("signed_delta_total", "v", "-2"), labelIs("signed_delta_total", "v", "NaN"))),
	},
	{
		readme: "a histogram whose bucket counts do not add up to its count, or are not one per bound plus one",
		name:   "bad_input_inconsistent_histogram",
		build: single(func(sm pmetric.ScopeMetrics) {
			dps := histogram(sm, "mismatch", "", "Inconsistent.", pmetric.AggregationTemporalityCumulative)
			histPoint(dps, []float64{1}, []uint64{3, 3}, 1, map[string]any{"point": "over"}).SetCount(4)
			histPoint(dps, []float64{1}, []uint64{1, 1}, 1, map[string]any{"point": "under"}).SetCount(4)
			histPoint(dps, []float64{1, 2}, []uint64{1, 1}, 1, map[string]any{"point": "short"})
			histPoint(dps, []float64{1}, []uint64{1, 1, 1}, 1, map[string]any{"point": "long"})
			histPoint(dps, []float64{1}, []uint64{1, 1}, 1, map[string]any{"point": "good"})
		}),
		// Contrib writes them as sent.
		differences: differences(emptyLabelsLeftOut,
			onlyContrib("a histogram whose bucket counts do not add up to its count",
				labelIs("mismatch", "point", "over"), labelIs("mismatch", "point", "under"),
				labelIs("mismatch", "point", "short"), labelIs("mismatch", "point", "long"))),
	},
	{
		readme: "a histogram without bucket counts",
		name:   "bad_input_histogram_without_bucket_counts",
		build: single(func(sm pmetric.ScopeMetrics) {
			histPoint(histogram(sm, "bare", "", "No bucket counts.", pmetric.AggregationTemporalityCumulative),
				[]float64{1, 2}, nil, 1.5, nil).SetCount(5)
		}),
		// Contrib writes an empty bucket for each bound.
		differences: differences(emptyLabelsLeftOut,
			servedDifferently("a histogram without bucket counts", "bare",
				[]string{"bare_bucket{le=1} 0", "bare_bucket{le=2} 0", "bare_bucket{le=+Inf} 5", "bare_sum{} 1.5", "bare_count{} 5"},
				[]string{"bare_bucket{le=+Inf} 5", "bare_sum{} 1.5", "bare_count{} 5"})),
	},
	{
		readme: "histogram bounds out of order or repeated",
		name:   "bad_input_histogram_bounds_out_of_order",
		build: single(func(sm pmetric.ScopeMetrics) {
			histPoint(histogram(sm, "unordered", "", "Bounds out of order.", pmetric.AggregationTemporalityCumulative),
				[]float64{5, 1, 5, 2}, []uint64{4, 1, 9, 2, 3}, 20, nil)
		}),
		differences: differences(emptyLabelsLeftOut),
	},
	{
		readme: "NaN or +Inf explicit bounds",
		name:   "bad_input_histogram_nan_and_inf_bounds",
		build: single(func(sm pmetric.ScopeMetrics) {
			histPoint(histogram(sm, "special.bounds", "", "NaN and +Inf bounds.", pmetric.AggregationTemporalityCumulative),
				[]float64{math.NaN(), 1, math.Inf(1)}, []uint64{2, 1, 3, 4}, 20, nil)
		}),
		// Contrib sorts NaN first and writes +Inf as a bound: a NaN bucket,
		// every bucket counting the NaN one's observations, and a +Inf
		// bucket short of the count.
		differences: differences(emptyLabelsLeftOut,
			servedDifferently("NaN or +Inf explicit bounds", "special_bounds",
				[]string{"special_bounds_bucket{le=NaN} 2", "special_bounds_bucket{le=1} 3", "special_bounds_bucket{le=+Inf} 6",
					"special_bounds_sum{} 20", "special_bounds_count{} 10"},
				[]string{"special_bounds_bucket{le=1} 1", "special_bounds_bucket{le=+Inf} 10", "special_bounds_sum{} 20", "special_bounds_count{} 10"})),
	},
	{
		readme: "an exponential histogram with a scale above 8",
		name:   "bad_input_exponential_histogram_scale_above_8",
		build: single(func(sm pmetric.ScopeMetrics) {
			expPoint(sm, "fine", 12, 16, []uint64{1, 1}, 2, nil)
		}),
		differences: differences(emptyLabelsLeftOut),
	},
	{
		readme: "an exponential histogram with a scale below -4, buckets beyond the float64 range, buckets that do not add up to its count (exceed it, when the sum is NaN), or a zero threshold that is negative, infinite or NaN — what Prometheus refuses in a native histogram",
		name:   "bad_input_exponential_histogram_outside_the_native_range",
		build: single(func(sm pmetric.ScopeMetrics) {
			expPoint(sm, "expo", -5, 0, []uint64{1}, 1, map[string]any{"point": "coarse"})
			expPoint(sm, "expo", 0, 5000, []uint64{1}, 1, map[string]any{"point": "beyond-float64"})
			expPoint(sm, "expo", 0, 0, []uint64{1, 1}, 3, map[string]any{"point": "mismatch"})
			expPoint(sm, "expo", 0, 0, []uint64{1}, 1, map[string]any{"point": "negative-zero-threshold"}).SetZeroThreshold(-1)
			expPoint(sm, "expo", 0, 0, []uint64{1}, 1, map[string]any{"point": "inf-zero-threshold"}).SetZeroThreshold(math.Inf(1))
			expPoint(sm, "expo", 0, 0, []uint64{2}, 1, map[string]any{"point": "nan-sum-over"}).SetSum(math.NaN())
			expPoint(sm, "expo", 0, 0, []uint64{1}, 2, map[string]any{"point": "nan-sum-under"}).SetSum(math.NaN())
			expPoint(sm, "expo", 3, -2, []uint64{1, 2, 3}, 6, map[string]any{"point": "good"})
		}),
		// Both drop a scale below -4 and buckets that exceed the count;
		// contrib serves the others.
		differences: differences(emptyLabelsLeftOut,
			onlyContrib(outsideNativeRange, labelIs("expo", "point", "beyond-float64"),
				labelIs("expo", "point", "negative-zero-threshold"), labelIs("expo", "point", "inf-zero-threshold"))),
	},
	{
		readme: "a delta (sum or histogram) without a start time",
		name:   "bad_input_delta_without_a_start_time",
		build: single(func(sm pmetric.ScopeMetrics) {
			c := sum(sm, "nostart", "", "Delta without a start.", true, pmetric.AggregationTemporalityDelta)
			intPoint(c, 1, map[string]any{"point": "bad"}).SetStartTimestamp(0)
			intPoint(c, 2, map[string]any{"point": "good"})
			histPoint(histogram(sm, "nostart.hist", "", "Delta histogram without a start.", pmetric.AggregationTemporalityDelta),
				[]float64{1}, []uint64{1, 0}, 1, map[string]any{"point": "bad"}).SetStartTimestamp(0)
		}),
		// Contrib writes them as cumulative values.
		differences: differences(emptyLabelsLeftOut,
			onlyContrib("a delta without a start time", labelIs("nostart_total", "point", "bad"), labelIs("nostart_hist", "point", "bad"))),
	},
	{
		readme: "a point whose time or start time is past the year 2262 (beyond int64 nanoseconds)",
		name:   "bad_input_time_past_int64",
		build: single(func(sm pmetric.ScopeMetrics) {
			g := gauge(sm, "far.future", "", "A time past 2262.")
			intPoint(g, 1, map[string]any{"point": "bad"}).SetTimestamp(pcommon.Timestamp(uint64(math.MaxInt64) + 1e9))
			intPoint(g, 2, map[string]any{"point": "good"})
			c := sum(sm, "far.start", "", "A start time past 2262.", true, pmetric.AggregationTemporalityCumulative)
			intPoint(c, 3, map[string]any{"point": "bad"}).SetStartTimestamp(pcommon.Timestamp(uint64(math.MaxInt64) + 1e9))
			intPoint(c, 4, map[string]any{"point": "good"})
		}),
		// Contrib serves them.
		differences: differences(emptyLabelsLeftOut,
			onlyContrib("a point whose time or start time is past the year 2262 (beyond int64 nanoseconds)", labelIs("far_future", "point", "bad"), labelIs("far_start_total", "point", "bad"))),
	},
	{
		readme: "unspecified temporality, a non-monotonic delta sum",
		name:   "bad_input_unsupported_temporality",
		build: single(func(sm pmetric.ScopeMetrics) {
			intPoint(sum(sm, "unspecified", "", "Unspecified temporality.", true, pmetric.AggregationTemporalityUnspecified), 1, nil)
			histPoint(histogram(sm, "unspecified.hist", "", "Unspecified temporality.", pmetric.AggregationTemporalityUnspecified),
				[]float64{1}, []uint64{1, 0}, 1, nil)
			intPoint(sum(sm, "balance.change", "", "Non-monotonic delta.", false, pmetric.AggregationTemporalityDelta), 5, nil)
			intPoint(gauge(sm, "keep.me", "", "Control."), 1, nil)
		}),
		// Contrib drops the sum and serves the histogram.
		differences: differences(emptyLabelsLeftOut,
			onlyContrib("unspecified temporality, a non-monotonic delta sum", familyIs("unspecified_hist"))),
	},
	{
		readme: "a point older than the stored one; a delta as old as the stored one (a retried batch)",
		name:   "bad_input_older_point_and_retried_delta",
		build: func() []pmetric.Metrics {
			batch := func(gaugeAt time.Time, v int64) pmetric.Metrics {
				md := pmetric.NewMetrics()
				sm := addResource(md, defaultResource)
				dp := intPoint(gauge(sm, "ooo.gauge", "", "Out of order."), v, nil)
				dp.SetTimestamp(ts(gaugeAt))
				intPoint(sum(sm, "retried", "", "Retried delta.", true, pmetric.AggregationTemporalityDelta), 5, nil)
				return md
			}
			return []pmetric.Metrics{batch(t2, 2), batch(t1, 1)}
		},
		differences: differences(emptyLabelsLeftOut),
	},
	{
		readme: "a gauge or cumulative point with the stored point's timestamp",
		name:   "bad_input_same_timestamp_replaces",
		build: func() []pmetric.Metrics {
			batch := func(v int64) pmetric.Metrics {
				md := pmetric.NewMetrics()
				sm := addResource(md, defaultResource)
				intPoint(gauge(sm, "same.time", "", "Same timestamp."), v, nil)
				intPoint(counter(sm, "same.time.counter", "", "Same timestamp."), 10*v, nil)
				return md
			}
			return []pmetric.Metrics{batch(1), batch(2)}
		},
		differences: differences(emptyLabelsLeftOut),
	},
}

// The rows of the bad-input table that several cases cover.
const (
	utf8NamesRow     = "UTF-8 names under a UTF-8 `translation_strategy`"
	familyTakenRow   = "a family whose name, or a series name it writes, is already taken: a gauge `x_count` next to a histogram `x`, with `enable_open_metrics` a gauge `x` next to a counter `x_total` (OpenMetrics types that counter `x`; without OpenMetrics both are served, as contrib does) and with `enable_open_metrics_created_samples` an `x_created`, `target_info`, or two UTF-8 names that escape alike (`disk.used`, `disk_used`)"
	reservedLabelRow = "a label `__name__` (which no parser accepts in a label set); `le` on a histogram; `quantile` on a summary — from a point attribute, a resource attribute promoted by `resource_constant_labels` or `resource_to_telemetry_conversion` (a `const_labels` entry with such a name fails `validate`)"
)

// The README's names of differences of bad input: the differences table's
// where it has a row, the bad-input table's otherwise.
const (
	familyTaken        = "a family whose name, or a series name it writes, is already taken"
	labelClash         = "under a UTF-8 `translation_strategy`, a new series that differs from another of its family only in label names that escape alike"
	sanitiseAlike      = "attribute names that sanitise alike (`a.b`, `a_b`, `a-b`), or a point attribute named like a resource label (`job`)"
	invalidUTF8Values  = "label values with invalid UTF-8"
	invalidUTF8        = "invalid UTF-8 in label values, `job`, `instance`, scope, target_info or HELP"
	outsideNativeRange = "an exponential histogram with a scale below -4, buckets beyond the float64 range, buckets that do not add up to its count (exceed it, when the sum is NaN), or a zero threshold that is negative, infinite or NaN"
)

// expPoint appends a cumulative exponential histogram point covering
// [t0, t1] whose positive buckets start at offset, with a sum of 2.
func expPoint(sm pmetric.ScopeMetrics, name string, scale, offset int32, counts []uint64, count uint64, attrs map[string]any) pmetric.ExponentialHistogramDataPoint {
	m := newMetric(sm, name, "", "Exponential histogram.")
	eh := m.SetEmptyExponentialHistogram()
	eh.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	dp := eh.DataPoints().AppendEmpty()
	dp.SetStartTimestamp(ts(t0))
	dp.SetTimestamp(ts(t1))
	dp.SetScale(scale)
	dp.Positive().SetOffset(offset)
	dp.Positive().BucketCounts().FromRaw(counts)
	dp.SetCount(count)
	dp.SetSum(2)
	setAttrs(dp.Attributes(), attrs)
	return dp
}

func init() { cases = append(cases, badInputCases...) }

// exporterREADME is the exporter's README, whose tables the cases name.
const exporterREADME = "../../exporter/agentprometheusexporter/README.md"

// readmeSection returns the lines of the README's section headed heading.
func readmeSection(t *testing.T, heading string) []string {
	t.Helper()
	b, err := os.ReadFile(exporterREADME)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("%s has no section %q", exporterREADME, heading)
	}
	section, _, _ := strings.Cut(rest, "\n## ")
	return strings.Split(section, "\n")
}

// tableInputs returns the first column of the rows of the tables in lines,
// without their header rows.
func tableInputs(lines []string) []string {
	var inputs []string
	for i, line := range lines {
		if !strings.HasPrefix(line, "| ") || i+1 < len(lines) && strings.HasPrefix(lines[i+1], "|---") {
			continue
		}
		input, _, _ := strings.Cut(strings.TrimPrefix(line, "| "), " | ")
		inputs = append(inputs, input)
	}
	return inputs
}

// TestBadInputRowsAreCases: every row of the README's table of bad input is
// a case, and every case that names a row names one of the table.
func TestBadInputRowsAreCases(t *testing.T) {
	rows := tableInputs(readmeSection(t, "## Bad input"))
	if len(rows) < 20 {
		t.Fatalf("read %d rows of bad input from %s", len(rows), exporterREADME)
	}
	covered := map[string][]string{}
	for _, tc := range cases {
		if tc.readme == "" {
			continue
		}
		if !slices.Contains(rows, tc.readme) {
			t.Errorf("case %s names a row the table of bad input does not have: %q", tc.name, tc.readme)
		}
		covered[tc.readme] = append(covered[tc.readme], tc.name)
	}
	for _, row := range rows {
		if len(covered[row]) == 0 {
			t.Errorf("no case for the bad input %q", row)
		}
	}
}

// TestDifferencesAreInTheREADME: the input every difference names is in a
// row of the README's table of differences from contrib or of bad input.
func TestDifferencesAreInTheREADME(t *testing.T) {
	var rows []string
	for _, heading := range []string{"## Differences from contrib's `prometheusexporter`", "## Bad input"} {
		rows = append(rows, tableInputs(readmeSection(t, heading))...)
	}
	for _, tc := range cases {
		for _, d := range tc.differences {
			if !slices.ContainsFunc(rows, func(row string) bool { return strings.HasPrefix(row, d.readme) }) {
				t.Errorf("case %s: no row of the README's tables begins with %q", tc.name, d.readme)
			}
		}
	}
}
