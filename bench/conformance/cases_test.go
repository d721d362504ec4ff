package conformance

import (
	"fmt"
	"maps"
	"math"
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric"
)

// expectation says how a case's two scrapes are judged.
type expectation int

const (
	// expectEqual: the normalised scrapes must be equal after the case's
	// differences hook.
	expectEqual expectation = iota
	// expectReferenceInvalid: contrib's output for the input is unusable
	// (not a valid exposition, or without the series); only ours must parse
	// and pass check.
	expectReferenceInvalid
	// expectNondeterministic: contrib picks its outcome at random; both must
	// parse and ours must pass check.
	expectNondeterministic
)

type testCase struct {
	name string
	// readme is the input column of the row of the exporter README's table
	// of bad input that the case covers, if any.
	readme string
	// config holds the exporter settings other than endpoint, in the YAML
	// vocabulary both exporters share.
	config map[string]any
	// oursOnly holds settings that only ours has, given to ours alone.
	oursOnly map[string]any
	// build returns the batches fed, in order, to each exporter.
	build func() []pmetric.Metrics
	// differences are the deliberate differences the case's input shows,
	// checked and taken out of the normalised scrapes of contrib and ours
	// before they are compared.
	differences []difference
	expect      expectation
	// check returns a failure message about ours, empty when it passes; it is
	// used by the expectations that do not compare.
	check func(ours *exposition) string
	// applied reports whether a text scrape shows every batch applied. Only
	// cases whose exporters apply batches after they were accepted (a
	// sending queue) set it; the harness polls each side until it holds.
	applied func(e *exposition) bool
}

// settingsFor returns the case's settings for tg: its config, and for ours
// the settings only ours has.
func (tc testCase) settingsFor(tg target) map[string]any {
	if !tg.ours || len(tc.oursOnly) == 0 {
		return tc.config
	}
	m := maps.Clone(tc.config)
	if m == nil {
		m = map[string]any{}
	}
	maps.Copy(m, tc.oursOnly)
	return m
}

// translationInput exercises every translation strategy on the same data: a
// dotted counter with a unit, a UTF-8 gauge name, a ratio gauge and dotted
// attribute names.
func translationInput(sm pmetric.ScopeMetrics) {
	intPoint(counter(sm, "http.server.request.count", "{request}", "Requests served."), 42,
		map[string]any{"http.request.method": "GET", "url.scheme": "https"})
	doublePoint(gauge(sm, "temperature.°C", "", "Temperature."), 21.5, map[string]any{"sensor.id": "s-1"})
	doublePoint(gauge(sm, "cpu.utilization", "1", "CPU use."), 0.25, nil)
	doublePoint(gauge(sm, "http.server.duration", "ms", "Server duration."), 12, map[string]any{"http.route": "/a"})
}

func translationCase(strategy string) testCase {
	tc := testCase{
		name:        "translation_strategy_" + strategy,
		config:      map[string]any{"translation_strategy": strategy},
		build:       single(translationInput),
		differences: differences(emptyLabelsLeftOut),
	}
	if utf8Names(tc.config) {
		tc.differences = append(tc.differences, utf8NamesEscapedInProtobuf)
	}
	return tc
}

// firstTypeWins checks that family has the given type and no sample of
// another type.
func firstTypeWins(family, typ string) func(*exposition) string {
	return func(e *exposition) string {
		got, ok := e.families()[family]
		if !ok {
			return fmt.Sprintf("family %s missing", family)
		}
		if got != typ {
			return fmt.Sprintf("family %s has type %s, want the first type seen, %s", family, got, typ)
		}
		return ""
	}
}

// hasFamily checks that the family is served with at least one sample.
func hasFamily(family string) func(*exposition) string {
	return func(e *exposition) string {
		if _, ok := e.families()[family]; !ok {
			return fmt.Sprintf("family %s missing", family)
		}
		return ""
	}
}

var cases = []testCase{
	{
		name: "gauge_int",
		build: single(func(sm pmetric.ScopeMetrics) {
			dps := gauge(sm, "queue.length", "", "Items waiting.")
			intPoint(dps, 7, map[string]any{"queue": "a"})
			intPoint(dps, -3, map[string]any{"queue": "b"})
		}),
		differences: differences(emptyLabelsLeftOut),
	},
	{
		name: "gauge_double",
		build: single(func(sm pmetric.ScopeMetrics) {
			dps := gauge(sm, "room.humidity", "", "Relative humidity.")
			doublePoint(dps, 0.4375, map[string]any{"room": "kitchen"})
			doublePoint(dps, 1e-9, map[string]any{"room": "cellar"})
			doublePoint(dps, 123456789.125, map[string]any{"room": "attic"})
		}),
		differences: differences(emptyLabelsLeftOut),
	},
	{
		name: "sum_monotonic_cumulative_is_counter_with_total",
		build: single(func(sm pmetric.ScopeMetrics) {
			dps := counter(sm, "jobs.done", "", "Jobs finished.")
			intPoint(dps, 10, map[string]any{"kind": "x"})
			doublePoint(dps, 2.5, map[string]any{"kind": "y"})
		}),
		differences: differences(emptyLabelsLeftOut),
	},
	{
		name: "sum_non_monotonic_cumulative_is_gauge",
		build: single(func(sm pmetric.ScopeMetrics) {
			dps := sum(sm, "connections.open", "", "Open connections.", false, pmetric.AggregationTemporalityCumulative)
			intPoint(dps, 12, nil)
		}),
		differences: differences(emptyLabelsLeftOut),
	},
	{
		name: "sum_non_monotonic_delta_is_dropped",
		build: single(func(sm pmetric.ScopeMetrics) {
			intPoint(sum(sm, "balance.change", "", "Dropped by contrib.", false, pmetric.AggregationTemporalityDelta), 5, nil)
			intPoint(gauge(sm, "keep.me", "", "Kept."), 1, nil)
		}),
		differences: differences(emptyLabelsLeftOut),
	},
	{
		// Aligned deltas (start = previous point's time) add up; a misaligned
		// one replaces the series' value.
		name: "sum_monotonic_delta_accumulates_across_batches",
		build: func() []pmetric.Metrics {
			batch := func(start, end time.Time, aligned, misaligned int64) pmetric.Metrics {
				md := pmetric.NewMetrics()
				dps := sum(addResource(md, defaultResource), "orders.placed", "", "Orders placed.", true, pmetric.AggregationTemporalityDelta)
				a := intPoint(dps, aligned, map[string]any{"series": "aligned"})
				a.SetStartTimestamp(ts(start))
				a.SetTimestamp(ts(end))
				m := intPoint(dps, misaligned, map[string]any{"series": "misaligned"})
				m.SetStartTimestamp(ts(start.Add(10 * time.Second)))
				m.SetTimestamp(ts(end))
				return md
			}
			return []pmetric.Metrics{batch(t0, t1, 5, 5), batch(t1, t2, 3, 3), batch(t2, t3, 4, 4)}
		},
		differences: differences(emptyLabelsLeftOut),
	},
	{
		name: "histogram_delta_accumulates_across_batches",
		build: func() []pmetric.Metrics {
			batch := func(start, end time.Time, counts []uint64, total float64) pmetric.Metrics {
				md := pmetric.NewMetrics()
				dps := histogram(addResource(md, defaultResource), "rpc.latency", "s", "RPC latency.", pmetric.AggregationTemporalityDelta)
				dp := histPoint(dps, []float64{0.1, 1}, counts, total, nil)
				dp.SetStartTimestamp(ts(start))
				dp.SetTimestamp(ts(end))
				return md
			}
			return []pmetric.Metrics{batch(t0, t1, []uint64{1, 2, 3}, 10), batch(t1, t2, []uint64{4, 0, 1}, 3.5)}
		},
		differences: differences(emptyLabelsLeftOut),
	},
	{
		name: "histogram_classic_10_bounds",
		build: single(func(sm pmetric.ScopeMetrics) {
			dps := histogram(sm, "http.client.duration", "ms", "Client call duration.", pmetric.AggregationTemporalityCumulative)
			histPoint(dps,
				[]float64{0, 5, 10, 25, 50, 75, 100, 250, 500, 1000},
				[]uint64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 12345.5,
				map[string]any{"peer": "db"})
		}),
		differences: differences(emptyLabelsLeftOut),
	},
	{
		name: "histogram_no_bounds",
		build: single(func(sm pmetric.ScopeMetrics) {
			histPoint(histogram(sm, "payload.size", "By", "Payload sizes.", pmetric.AggregationTemporalityCumulative),
				nil, []uint64{17}, 4096, nil)
		}),
		differences: differences(emptyLabelsLeftOut),
	},
	{
		name: "exponential_histogram_text",
		build: single(func(sm pmetric.ScopeMetrics) {
			m := newMetric(sm, "db.query.duration", "s", "Query duration.")
			eh := m.SetEmptyExponentialHistogram()
			eh.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
			dp := eh.DataPoints().AppendEmpty()
			dp.SetStartTimestamp(ts(t0))
			dp.SetTimestamp(ts(t1))
			dp.SetScale(2)
			dp.SetZeroCount(1)
			dp.Positive().SetOffset(-3)
			dp.Positive().BucketCounts().FromRaw([]uint64{1, 2, 3})
			dp.Negative().SetOffset(0)
			dp.Negative().BucketCounts().FromRaw([]uint64{1})
			dp.SetCount(8)
			dp.SetSum(3.25)
			dp.SetMin(-1)
			dp.SetMax(1.5)
			setAttrs(dp.Attributes(), map[string]any{"db.system": "postgresql"})
		}),
		differences: differences(emptyLabelsLeftOut),
	},
	{
		name: "summary_quantiles",
		build: single(func(sm pmetric.ScopeMetrics) {
			summaryPoint(summary(sm, "gc.pause", "s", "GC pauses."), 100, 2.5,
				[][2]float64{{0, 0.001}, {0.5, 0.02}, {0.9, 0.05}, {0.99, 0.1}, {1, 0.2}},
				map[string]any{"gen": "young"})
		}),
		differences: differences(emptyLabelsLeftOut),
	},
	{
		name: "units_to_suffixes",
		build: single(func(sm pmetric.ScopeMetrics) {
			// Names carry a letter, not the unit, so the suffix shows alone.
			units := []string{"s", "ms", "By", "1", "{request}", "%", "By/s", "m/s", "kBy", "1/s", "s{cpu}", "unknownunit"}
			for i, u := range units {
				name := "unit.gauge." + string(rune('a'+i))
				doublePoint(gauge(sm, name, u, "Unit "+u+"."), 1, nil)
				intPoint(counter(sm, "unit.counter."+string(rune('a'+i)), u, "Unit "+u+"."), 10, nil)
			}
			intPoint(counter(sm, "unit.counter.seconds_total", "s", "Already suffixed."), 10, nil)
			intPoint(gauge(sm, "unit.gauge.bytes", "By", "Unit already in the name."), 10, nil)
		}),
		differences: differences(emptyLabelsLeftOut),
	},
	{
		name: "metric_names_needing_sanitisation",
		build: single(func(sm pmetric.ScopeMetrics) {
			for _, n := range []string{"http.server.duration", "my-metric", "disk/io", "2xx.responses", "a..b", "trailing_", "__double", "MixedCase.Name"} {
				doublePoint(gauge(sm, n, "", "Name "+n+"."), 1, nil)
			}
		}),
		differences: differences(emptyLabelsLeftOut),
	},
	{
		name: "metric_name_utf8_default_strategy",
		build: single(func(sm pmetric.ScopeMetrics) {
			doublePoint(gauge(sm, "temperature.°C", "", "Temperature."), 21.5, nil)
			doublePoint(gauge(sm, "größe", "", "Size."), 3, nil)
		}),
		differences: differences(emptyLabelsLeftOut),
	},
	{
		name: "label_names_needing_sanitisation",
		build: single(func(sm pmetric.ScopeMetrics) {
			intPoint(gauge(sm, "labels.sanitised", "", "Label sanitisation."), 1, map[string]any{
				"http.method": "GET", "net-peer": "x", "1st": "y", "_private": "z",
				"Mixed.Case": "m", "label.ü": "u", "a..b": "v",
			})
		}),
		differences: differences(emptyLabelsLeftOut),
	},
	{
		// Contrib's label namer rejects a name that starts with "__", also
		// after sanitisation ("ü.label" becomes "__label"), and drops the
		// metric.
		name: "label_name_with_double_underscore",
		build: single(func(sm pmetric.ScopeMetrics) {
			intPoint(gauge(sm, "labels.reserved", "", "Reserved label."), 1, map[string]any{"__reserved": "r"})
			intPoint(gauge(sm, "labels.reserved.after", "", "Reserved after sanitisation."), 1, map[string]any{"ü.label": "u"})
			intPoint(gauge(sm, "labels.control", "", "Control."), 1, map[string]any{"ok": "x"})
		}),
		// Contrib drops a series with a label name starting with "__"; ours
		// serves it, and Prometheus drops such labels at ingestion.
		differences: differences(emptyLabelsLeftOut,
			onlyOurs(reservedLabel, labelIs("labels_reserved", "__reserved", "r"), labelIs("labels_reserved_after", "__label", "u"))),
	},
	{
		// Contrib drops the metric ("duplicate label names"); only on
		// target_info does it join colliding values with ";".
		name: "label_names_colliding_after_sanitisation",
		build: single(func(sm pmetric.ScopeMetrics) {
			intPoint(gauge(sm, "labels.colliding", "", "Colliding labels."), 1, map[string]any{"a.b": "dot", "a_b": "underscore"})
			intPoint(gauge(sm, "labels.not.colliding", "", "Control."), 1, map[string]any{"c": "d"})
		}),
		// Contrib drops a series whose attribute names collide after
		// sanitisation; ours keeps it with the values joined by ";" in
		// original-key order, as contrib itself does for target_info.
		differences: differences(emptyLabelsLeftOut,
			onlyOurs(collidingLabels, labelIs("labels_colliding", "a_b", "dot;underscore"))),
	},
	{
		name: "attribute_value_types",
		build: single(func(sm pmetric.ScopeMetrics) {
			dp := intPoint(gauge(sm, "attr.types", "", "Attribute types."), 1, map[string]any{
				"int": int64(-42), "double": 3.5, "bool": true,
				"slice": []any{"a", int64(1), true}, "map": map[string]any{"k": "v", "n": int64(2)},
				"empty": "", "quote": "say \"hi\"\nbye\\",
			})
			dp.Attributes().PutEmptyBytes("bytes").FromRaw([]byte{0x01, 0xff})
		}),
		differences: differences(emptyLabelsLeftOut),
	},
	{
		name: "resource_job_instance_and_target_info",
		build: func() []pmetric.Metrics {
			md := pmetric.NewMetrics()
			sm := addResource(md, map[string]any{
				"service.name": "checkout", "service.namespace": "shop", "service.instance.id": "pod-1",
				"host.name": "node-7", "k8s.pod.name": "checkout-abc", "deployment.environment": "prod",
				"process.pid": int64(1234),
			})
			intPoint(gauge(sm, "res.gauge", "", "With resource."), 1, nil)
			return []pmetric.Metrics{md}
		},
		differences: differences(emptyLabelsLeftOut),
	},
	{
		name: "resource_without_instance_id",
		build: func() []pmetric.Metrics {
			md := pmetric.NewMetrics()
			sm := addResource(md, map[string]any{"service.name": "checkout", "host.name": "node-7"})
			intPoint(gauge(sm, "res.gauge", "", "No instance id."), 1, nil)
			sm = addResource(md, map[string]any{"host.name": "node-8"})
			intPoint(gauge(sm, "res.gauge", "", "No instance id."), 2, map[string]any{"other": "x"})
			return []pmetric.Metrics{md}
		},
		differences: differences(emptyLabelsLeftOut),
	},
	{
		name: "resource_with_empty_instance_id_or_name",
		build: func() []pmetric.Metrics {
			md := pmetric.NewMetrics()
			sm := addResource(md, map[string]any{"service.name": "api", "service.instance.id": "", "host.name": "h1"})
			intPoint(gauge(sm, "res.gauge", "", "Empty instance id."), 1, nil)
			sm = addResource(md, map[string]any{"service.name": "", "service.instance.id": "pod-2", "host.name": "h2"})
			intPoint(gauge(sm, "res.gauge", "", "Empty instance id."), 2, map[string]any{"other": "x"})
			return []pmetric.Metrics{md}
		},
		differences: differences(emptyLabelsLeftOut),
	},
	{
		name: "resource_target_info_attribute_collision",
		build: func() []pmetric.Metrics {
			md := pmetric.NewMetrics()
			sm := addResource(md, map[string]any{"service.name": "checkout", "service.instance.id": "pod-1"})
			// Contrib joins the values in attribute order: set it explicitly.
			attrs := md.ResourceMetrics().At(0).Resource().Attributes()
			attrs.PutStr("k8s.pod", "a")
			attrs.PutStr("k8s_pod", "b")
			intPoint(gauge(sm, "res.gauge", "", "Target info collision."), 1, nil)
			return []pmetric.Metrics{md}
		},
		differences: differences(emptyLabelsLeftOut),
	},
	{
		name: "many_resources_same_families",
		build: func() []pmetric.Metrics {
			md := pmetric.NewMetrics()
			for i := range 50 {
				sm := addResource(md, map[string]any{
					"service.name": "worker", "service.instance.id": fmt.Sprintf("pod-%02d", i),
					"zone": fmt.Sprintf("z%d", i%3),
				})
				intPoint(gauge(sm, "worker.queue", "", "Queue length."), int64(i), nil)
				intPoint(counter(sm, "worker.processed", "", "Items processed."), int64(100+i), map[string]any{"kind": "a"})
			}
			return []pmetric.Metrics{md}
		},
		differences: differences(emptyLabelsLeftOut),
	},
	{
		name: "scope_name_version_attributes",
		build: func() []pmetric.Metrics {
			md := pmetric.NewMetrics()
			sm := addResource(md, defaultResource)
			sm.Scope().SetName("io.example/instrumentation")
			sm.Scope().SetVersion("2.3.4")
			sm.SetSchemaUrl("https://opentelemetry.io/schemas/1.26.0")
			setAttrs(sm.Scope().Attributes(), map[string]any{"lib.kind": "http", "name": "reserved-skipped"})
			intPoint(gauge(sm, "scoped.gauge", "", "Scoped."), 1, nil)
			// The same metric from another scope is another series.
			sm2 := md.ResourceMetrics().At(0).ScopeMetrics().AppendEmpty()
			sm2.Scope().SetName("other.scope")
			intPoint(gauge(sm2, "scoped.gauge", "", "Scoped."), 2, nil)
			return []pmetric.Metrics{md}
		},
		differences: differences(emptyLabelsLeftOut),
	},
	{
		name:   "without_scope_info",
		config: map[string]any{"without_scope_info": true},
		build: single(func(sm pmetric.ScopeMetrics) {
			setAttrs(sm.Scope().Attributes(), map[string]any{"lib.kind": "http"})
			intPoint(gauge(sm, "scoped.gauge", "", "Scoped."), 1, nil)
		}),
	},
	{
		name:   "namespace",
		config: map[string]any{"namespace": "myns"},
		build: single(func(sm pmetric.ScopeMetrics) {
			intPoint(gauge(sm, "ns.gauge", "", "Namespaced."), 1, nil)
			intPoint(counter(sm, "ns.counter", "By", "Namespaced counter."), 2, nil)
		}),
		differences: differences(emptyLabelsLeftOut),
	},
	{
		name:   "const_labels",
		config: map[string]any{"const_labels": map[string]any{"region": "eu-1", "cluster": "c9"}},
		build: single(func(sm pmetric.ScopeMetrics) {
			intPoint(gauge(sm, "const.gauge", "", "With const labels."), 1, map[string]any{"a": "b"})
		}),
		differences: differences(emptyLabelsLeftOut),
	},
	{
		name:   "resource_to_telemetry_conversion",
		config: map[string]any{"resource_to_telemetry_conversion": map[string]any{"enabled": true}},
		build: func() []pmetric.Metrics {
			md := pmetric.NewMetrics()
			sm := addResource(md, map[string]any{
				"service.name": "checkout", "service.instance.id": "pod-1",
				"host.name": "node-7", "cloud.region": "eu-1",
			})
			intPoint(gauge(sm, "r2t.gauge", "", "Resource to telemetry."), 1, map[string]any{"host.name": "point-wins?"})
			intPoint(counter(sm, "r2t.counter", "", "Resource to telemetry."), 2, nil)
			return []pmetric.Metrics{md}
		},
		differences: differences(emptyLabelsLeftOut),
	},
	{
		name:   "send_timestamps",
		config: map[string]any{"send_timestamps": true},
		build: single(func(sm pmetric.ScopeMetrics) {
			intPoint(gauge(sm, "ts.gauge", "", "Timestamped."), 1, nil)
			intPoint(counter(sm, "ts.counter", "", "Timestamped."), 2, nil)
			histPoint(histogram(sm, "ts.histogram", "", "Timestamped.", pmetric.AggregationTemporalityCumulative),
				[]float64{1}, []uint64{1, 1}, 3, nil)
			summaryPoint(summary(sm, "ts.summary", "", "Timestamped."), 2, 3, [][2]float64{{0.5, 1}}, nil)
		}),
		differences: differences(emptyLabelsLeftOut, targetInfoTimestamp),
	},
	{
		name:   "open_metrics_exemplars",
		config: map[string]any{"enable_open_metrics": true},
		build: single(func(sm pmetric.ScopeMetrics) {
			dp := histPoint(histogram(sm, "om.latency", "s", "With exemplars.", pmetric.AggregationTemporalityCumulative),
				[]float64{0.1, 1}, []uint64{1, 2, 0}, 1.25, nil)
			addExemplar(dp.Exemplars(), 0.05)
			addExemplar(dp.Exemplars(), 0.7)
			c := intPoint(counter(sm, "om.requests", "", "With exemplar."), 9, nil)
			addExemplar(c.Exemplars(), 1)
			intPoint(gauge(sm, "om.gauge", "By", "Gauge with unit."), 4, nil)
			summaryPoint(summary(sm, "om.summary", "s", "Summary."), 2, 3, [][2]float64{{0.5, 1}}, nil)
		}),
		differences: differences(emptyLabelsLeftOut),
	},
	{
		// enable_open_metrics_created_samples is ours alone: contrib writes
		// no _created samples, and neither does ours without it
		// (open_metrics_exemplars).
		name:     "open_metrics_created_samples",
		config:   map[string]any{"enable_open_metrics": true},
		oursOnly: map[string]any{"enable_open_metrics_created_samples": true},
		build: single(func(sm pmetric.ScopeMetrics) {
			intPoint(counter(sm, "created.requests", "", "Counter."), 9, nil)
			histPoint(histogram(sm, "created.latency", "s", "Histogram.", pmetric.AggregationTemporalityCumulative),
				[]float64{0.1, 1}, []uint64{1, 2, 0}, 1.25, nil)
			summaryPoint(summary(sm, "created.summary", "s", "Summary."), 2, 3, [][2]float64{{0.5, 1}}, nil)
			intPoint(gauge(sm, "created.gauge", "", "Gauge: no _created."), 4, nil)
		}),
		differences: differences(emptyLabelsLeftOut, createdSamples),
	},
	translationCase("UnderscoreEscapingWithSuffixes"),
	translationCase("UnderscoreEscapingWithoutSuffixes"),
	translationCase("NoUTF8EscapingWithSuffixes"),
	translationCase("NoTranslation"),
	{
		readme: "NaN or ±Inf gauge",
		name:   "gauge_nan_and_inf",
		build: single(func(sm pmetric.ScopeMetrics) {
			dps := gauge(sm, "special.values", "", "Special floats.")
			doublePoint(dps, math.NaN(), map[string]any{"v": "nan"})
			doublePoint(dps, math.Inf(1), map[string]any{"v": "+inf"})
			doublePoint(dps, math.Inf(-1), map[string]any{"v": "-inf"})
			doublePoint(dps, math.Copysign(0, -1), map[string]any{"v": "-0"})
		}),
		differences: differences(emptyLabelsLeftOut),
	},
	{
		// Contrib neither crashes nor serves anything for an empty name.
		name: "empty_metric_name",
		build: single(func(sm pmetric.ScopeMetrics) {
			intPoint(gauge(sm, "", "", "No name."), 1, nil)
			intPoint(gauge(sm, "named", "", "Control."), 1, nil)
		}),
		differences: differences(emptyLabelsLeftOut),
	},
	{
		name: "help_text_escaping",
		build: single(func(sm pmetric.ScopeMetrics) {
			intPoint(gauge(sm, "help.escaped", "", "Line one\nline \"two\" with \\ backslash."), 1, nil)
			intPoint(gauge(sm, "help.empty", "", ""), 1, nil)
		}),
		differences: differences(emptyLabelsLeftOut),
	},
	{
		// Within one batch the later timestamp wins; an older point arriving
		// later is ignored.
		name: "gauge_out_of_order_point_ignored",
		build: func() []pmetric.Metrics {
			batch := func(at time.Time, v int64) pmetric.Metrics {
				md := pmetric.NewMetrics()
				dp := intPoint(gauge(addResource(md, defaultResource), "ooo.gauge", "", "Out of order."), v, nil)
				dp.SetTimestamp(ts(at))
				return md
			}
			return []pmetric.Metrics{batch(t2, 2), batch(t1, 1)}
		},
		differences: differences(emptyLabelsLeftOut),
	},
	{
		// Contrib means to serve a gauge whose prometheus.type metadata is
		// "unknown" as untyped, but its accumulator does not keep metric
		// metadata, so it serves a gauge.
		name: "gauge_with_unknown_type_metadata",
		build: single(func(sm pmetric.ScopeMetrics) {
			m := newMetric(sm, "legacy.value", "", "Scraped as untyped.")
			m.Metadata().PutStr("prometheus.type", "unknown")
			intPoint(m.SetEmptyGauge().DataPoints(), 5, nil)
		}),
		differences: differences(emptyLabelsLeftOut),
	},
	{
		// A NoRecordedValue point removes only its own series. Contrib up to
		// v0.155.0 also dropped the points after it in the same metric.
		name: "no_recorded_value_on_one_of_three_points",
		build: single(func(sm pmetric.ScopeMetrics) {
			dps := gauge(sm, "nrv.gauge", "", "Stale marker.")
			intPoint(dps, 1, map[string]any{"point": "first"})
			intPoint(dps, 2, map[string]any{"point": "stale"}).SetFlags(pmetric.DefaultDataPointFlags.WithNoRecordedValue(true))
			intPoint(dps, 3, map[string]any{"point": "third"})
		}),
		differences: differences(emptyLabelsLeftOut),
	},
	{
		// Contrib serves the HELP of whichever series it converts first at
		// scrape time, at random; ours must serve one of the two.
		name:   "help_conflict_between_resources",
		expect: expectNondeterministic,
		build: func() []pmetric.Metrics {
			md := pmetric.NewMetrics()
			sm := addResource(md, map[string]any{"service.name": "a", "service.instance.id": "1"})
			intPoint(gauge(sm, "help.conflict", "", "First description."), 1, nil)
			sm = addResource(md, map[string]any{"service.name": "b", "service.instance.id": "2"})
			intPoint(gauge(sm, "help.conflict", "", "Second description."), 2, nil)
			return []pmetric.Metrics{md}
		},
		check: func(e *exposition) string {
			if h := e.help["help_conflict"]; h != "First description." && h != "Second description." {
				return fmt.Sprintf("HELP of help_conflict is %q, want one of the two descriptions", h)
			}
			return ""
		},
	},
	{
		// Deliberate difference (b): contrib writes the attribute and the
		// bucket bound as two `le` labels, which is not a valid exposition.
		readme: reservedLabelRow,
		name:   "histogram_attribute_named_le",
		expect: expectReferenceInvalid,
		build: single(func(sm pmetric.ScopeMetrics) {
			histPoint(histogram(sm, "le.histogram", "", "Attribute named le.", pmetric.AggregationTemporalityCumulative),
				[]float64{1}, []uint64{1, 1}, 3, map[string]any{"le": "attr"})
		}),
		check: hasFamily("le_histogram"),
	},
	{
		// Deliberate difference (b), for summaries and `quantile`: contrib's
		// registry rejects the series and drops the whole family.
		readme: reservedLabelRow,
		name:   "summary_attribute_named_quantile",
		expect: expectReferenceInvalid,
		build: single(func(sm pmetric.ScopeMetrics) {
			summaryPoint(summary(sm, "q.summary", "", "Attribute named quantile."), 2, 3,
				[][2]float64{{0.5, 1}}, map[string]any{"quantile": "attr"})
		}),
		check: hasFamily("q_summary"),
	},
	{
		// Deliberate difference (d): contrib keeps whichever type it happens
		// to convert first at scrape time; ours keeps the first type seen.
		readme: "the same family name with another type from another agent",
		name:   "type_conflict_between_resources",
		expect: expectNondeterministic,
		build: func() []pmetric.Metrics {
			md := pmetric.NewMetrics()
			sm := addResource(md, map[string]any{"service.name": "a", "service.instance.id": "1"})
			intPoint(gauge(sm, "conflict.metric", "", "Gauge first."), 1, nil)
			sm = addResource(md, map[string]any{"service.name": "b", "service.instance.id": "2"})
			histPoint(histogram(sm, "conflict.metric", "", "Histogram second.", pmetric.AggregationTemporalityCumulative),
				[]float64{1}, []uint64{1, 1}, 3, nil)
			return []pmetric.Metrics{md}
		},
		check: firstTypeWins("conflict_metric", "gauge"),
	},
}

// manyAttributesResource has attributes for every resource_constant_labels
// pattern of the cases: service.*, host.*, k8s.pod.*, and others.
var manyAttributesResource = map[string]any{
	"service.name": "checkout", "service.namespace": "shop", "service.instance.id": "pod-1",
	"service.version": "1.2.3",
	"host.name":       "node-7", "host.arch": "amd64",
	"k8s.pod.name": "checkout-abc", "k8s.pod.uid": "0a1b", "k8s.namespace.name": "prod",
	"cloud.region": "eu-1",
}

// resourceLabelsCase feeds a gauge and a counter of manyAttributesResource to
// an exporter with the given settings.
func resourceLabelsCase(name string, config map[string]any) testCase {
	return testCase{
		name:        name,
		config:      config,
		differences: differences(emptyLabelsLeftOut),
		build: func() []pmetric.Metrics {
			md := pmetric.NewMetrics()
			sm := addResource(md, manyAttributesResource)
			intPoint(gauge(sm, "res.labels.gauge", "", "Resource labels."), 1, map[string]any{"host.name": "point-value"})
			intPoint(counter(sm, "res.labels.counter", "", "Resource labels."), 2, map[string]any{"kind": "a"})
			return []pmetric.Metrics{md}
		},
	}
}

// queuedBatches is the number of batches of the sending_queue case.
const queuedBatches = 5

// Cases for the settings contrib v0.165.1 accepts beyond v0.155.0's, or that
// its docs show and the cases above do not.
var casesV0165 = []testCase{
	{
		// Deprecated; contrib ignores it while the beta gate
		// exporter.prometheusexporter.DisableAddMetricSuffixes is on (its
		// default): suffixes stay.
		name:        "add_metric_suffixes_false",
		config:      map[string]any{"add_metric_suffixes": false},
		build:       single(translationInput),
		differences: differences(emptyLabelsLeftOut),
	},
	{
		// Ignored also when translation_strategy is set.
		name:        "add_metric_suffixes_false_with_translation_strategy",
		config:      map[string]any{"add_metric_suffixes": false, "translation_strategy": "UnderscoreEscapingWithSuffixes"},
		build:       single(translationInput),
		differences: differences(emptyLabelsLeftOut),
	},
	resourceLabelsCase("resource_constant_labels_included",
		map[string]any{"resource_constant_labels": map[string]any{"included": []any{"service.name", "k8s.pod.*"}}}),
	resourceLabelsCase("resource_constant_labels_excluded",
		map[string]any{"resource_constant_labels": map[string]any{"excluded": []any{"service.*"}}}),
	resourceLabelsCase("resource_constant_labels_included_all_excluded_host",
		map[string]any{"resource_constant_labels": map[string]any{"included": []any{"*"}, "excluded": []any{"host.*"}}}),
	resourceLabelsCase("resource_to_telemetry_conversion_exclude_service_attributes",
		map[string]any{"resource_to_telemetry_conversion": map[string]any{"enabled": true, "exclude_service_attributes": true}}),
	{
		// From contrib's README: a label name with a space, valid as a UTF-8
		// name.
		name:        "const_labels_with_space",
		differences: differences(emptyLabelsLeftOut, utf8NamesEscapedInProtobuf),
		config:      map[string]any{"const_labels": map[string]any{"label1": "value1", "another label": "spaced value"}},
		build: single(func(sm pmetric.ScopeMetrics) {
			intPoint(gauge(sm, "const.spaced", "", "Const label with a space."), 1, map[string]any{"a": "b"})
		}),
	},
	{
		// The queue applies batches after OTLP/HTTP has answered, in any
		// order: each batch has series of its own, and all must appear.
		name:   "sending_queue_enabled",
		config: map[string]any{"sending_queue": map[string]any{"enabled": true}},
		build: func() []pmetric.Metrics {
			var out []pmetric.Metrics
			for i := range queuedBatches {
				md := pmetric.NewMetrics()
				sm := addResource(md, defaultResource)
				intPoint(gauge(sm, "queued.gauge", "", "Queued."), int64(i), map[string]any{"batch": fmt.Sprint(i)})
				intPoint(counter(sm, "queued.counter", "", "Queued."), int64(10+i), map[string]any{"batch": fmt.Sprint(i)})
				out = append(out, md)
			}
			return out
		},
		applied: func(e *exposition) bool {
			n := 0
			for _, s := range e.samples {
				if s.family == "queued_gauge" || s.family == "queued_counter_total" {
					n++
				}
			}
			return n == 2*queuedBatches
		},
		differences: differences(emptyLabelsLeftOut),
	},
}

func init() { cases = append(cases, casesV0165...) }
