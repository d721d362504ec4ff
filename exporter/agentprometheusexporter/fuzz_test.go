package agentprometheusexporter

import (
	"bytes"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/storetest"
)

// FuzzIngestScrape stores arbitrary OTLP metrics in an exporter made by
// the factory, once with each of fuzzConfigs, and scrapes it over HTTP in
// every format. Whatever the input, ingestion must not panic and every
// scrape must parse (expfmt for text and protobuf, parseOpenMetrics for
// OpenMetrics) and pass storetest.CheckFamilies; then:
//
//   - every format states the same samples (name, labels, value,
//     timestamp) and types, once their known differences are normalised
//     (flattenFamilies, parseOpenMetrics): OpenMetrics names a counter's
//     family without _total and types one without it unknown; _created
//     samples, in OpenMetrics only with created samples on, are protobuf's
//     created timestamps; protobuf leaves a histogram's +Inf bucket
//     implicit and carries exponential histograms as native histograms,
//     which the text formats write as their count; text keeps neither the
//     sign of a zero nor a NaN's payload; and the scrape without UTF-8
//     names is the UTF-8 one escaped (escapeExposed); the text scrape with
//     gzip, written by parts, is the identity one byte for byte;
//   - what they state is what fuzzReference computes from the input
//     through pdata and otlptranslator, unless the input is out of its
//     scope, which is logged and counted (TestFuzzSeedsAreCompared).
//
// Each input is consumed twice, so that updates (delta accumulation,
// out-of-order checks, position hints) run too.
func FuzzIngestScrape(f *testing.F) {
	// The rows with a 64 KiB value or 500 attributes would make every
	// mutation and minimisation slow; the table covers them.
	storetest.AddSeeds(f, 8<<10, fuzzSeeds()...)
	f.Fuzz(func(t *testing.T, data []byte) {
		md, err := (&pmetric.ProtoUnmarshaler{}).UnmarshalMetrics(data)
		if err != nil {
			t.Skip("not OTLP")
		}
		for _, fc := range fuzzConfigs {
			if skip := checkIngestScrape(t, md, fc); skip != "" {
				t.Logf("%s: not compared with the reference: %s", fc, skip)
			}
		}
	})
}

// checkIngestScrape serves md with fc and checks every scrape as
// FuzzIngestScrape says; it returns why the input was not compared with
// the reference, or "".
func checkIngestScrape(t *testing.T, md pmetric.Metrics, fc fuzzConfig) (skip string) {
	t.Helper()
	s := serveForFuzz(t, fc)
	s.consume(t, md)
	s.consume(t, md)
	// A new run of deltas is left out of a scraper's first scrape and shown
	// as its zero in the second; from the third on, scrapes show values.
	for range 2 {
		s.scrape(t, acceptText, true)
	}
	// scrapes[utf8][format]
	scrapes := map[bool]map[string]*exposed{false: {}, true: {}}
	for _, a := range fuzzAccepts(fc.utf8Names()) {
		body, contentType := s.scrape(t, a.accept, false)
		format := expfmt.Format(contentType)
		wantType := map[string]expfmt.FormatType{"text": expfmt.TypeTextPlain, "openmetrics": expfmt.TypeOpenMetrics, "protobuf": expfmt.TypeProtoDelim}[a.format]
		wantEscaping := model.UnderscoreEscaping
		if a.utf8 {
			wantEscaping = model.NoEscaping
		}
		if format.FormatType() != wantType || format.ToEscapingScheme() != wantEscaping {
			t.Fatalf("%s: Accept %s answered with Content-Type %s", fc, a.accept, contentType)
		}
		if a.format == "text" && !a.utf8 {
			// gzip is written by parts, identity in one go: the same text.
			if plain, _ := s.scrape(t, a.accept, true); !bytes.Equal(plain, body) {
				t.Fatalf("%s: the gzip and identity text scrapes differ: %s", fc, storetest.FirstDifference(body, plain))
			}
		}
		e, err := parseExposition(body, contentType, a.utf8)
		if err == nil && a.format == "openmetrics" && !a.utf8 {
			// Also as the other tests read OpenMetrics: rewritten into
			// text, parsed by expfmt.
			_, err = decodeExposition(body, contentType)
		}
		if err != nil {
			t.Fatalf("%s, %s scrape: %v\n%s", fc, a.accept, err, body)
		}
		scrapes[a.utf8][a.format] = e
	}

	// The formats against each other.
	for _, utf8 := range []bool{false, true} {
		got := scrapes[utf8]
		if len(got) == 0 {
			continue
		}
		text, om, pb := got["text"], got["openmetrics"], got["protobuf"]
		what := fmt.Sprintf("%s, utf8=%v", fc, utf8)
		requireSame(t, what+": samples, OpenMetrics against text", sampleValues(om.samples), sampleValues(text.samples))
		requireSame(t, what+": samples, protobuf against text", sampleValues(pb.samples), sampleValues(text.samples))
		requireSame(t, what+": types, OpenMetrics against text", openMetricsTypes(om.types, text.types), text.types)
		requireSame(t, what+": types, protobuf against text", pb.types, text.types)
		if fc.created {
			requireSame(t, what+": OpenMetrics _created samples against protobuf's created timestamps", sampleValues(om.created), sampleValues(pb.created))
		} else {
			requireSame(t, what+": OpenMetrics _created samples with created samples off", sampleValues(om.created), nil)
		}
		if len(text.natives)+len(om.natives) > 0 {
			t.Fatalf("%s: native histograms in a text format", what)
		}
	}
	if fc.utf8Names() {
		what := fmt.Sprintf("%s: the scrapes without UTF-8 names against the UTF-8 ones escaped", fc)
		text, pb := escapeExposed(t, scrapes[true]["text"]), escapeExposed(t, scrapes[true]["protobuf"])
		requireSame(t, what+", samples", sampleValues(scrapes[false]["text"].samples), sampleValues(text.samples))
		requireSame(t, what+", types", scrapes[false]["text"].types, text.types)
		requireSame(t, what+", created timestamps", sampleValues(scrapes[false]["protobuf"].created), sampleValues(pb.created))
		requireSame(t, what+", native histograms", nativeValues(scrapes[false]["protobuf"].natives, nil), nativeValues(pb.natives, nil))
	}

	// The formats against the input.
	want, skip := fuzzReference(md, fc)
	if skip != "" {
		return skip
	}
	got := scrapes[fc.utf8Names()]
	what := fmt.Sprintf("%s: against the input", fc)
	requireSame(t, what+", samples", referenceValues(got["text"].samples), sampleValues(want.samples))
	requireSame(t, what+", types", got["text"].types, want.types)
	requireSame(t, what+", created timestamps", sampleValues(got["protobuf"].created), sampleValues(want.created))
	requireSame(t, what+", native histograms", nativeValues(got["protobuf"].natives, want.natives), nativeValues(want.natives, nil))
	return ""
}

// sampleValues maps sample keys to values.
func sampleValues(samples map[string]exposedSample) map[string]string {
	out := make(map[string]string, len(samples))
	for k, s := range samples {
		out[k] = s.value
	}
	return out
}

// referenceValues is sampleValues without target_info's timestamps, which
// are the times of batches, not of points: the reference cannot know them.
func referenceValues(samples map[string]exposedSample) map[string]string {
	out := sampleValues(samples)
	for k, s := range samples {
		if s.name == "target_info" {
			out[k], _, _ = strings.Cut(s.value, " @")
		}
	}
	return out
}

// nativeValues writes native histograms as strings, leaving out the zero
// threshold where the input left it to the exporter (anyZeroThreshold, in
// natives or in like).
func nativeValues(natives, like map[string]exposedNative) map[string]string {
	out := make(map[string]string, len(natives))
	for k, n := range natives {
		if like[k].anyZeroThreshold || n.anyZeroThreshold {
			n.native.zeroThreshold = math.NaN()
		}
		out[k] = n.native.String()
	}
	return out
}

// openMetricsTypes are OpenMetrics' types as the text format states them:
// a counter whose name does not end with _total is unknown in OpenMetrics.
func openMetricsTypes(om, text map[string]string) map[string]string {
	out := make(map[string]string, len(om))
	for f, typ := range om {
		if typ == "unknown" && text[f] == "counter" && !strings.HasSuffix(f, "_total") {
			typ = "counter"
		}
		out[f] = typ
	}
	return out
}

// escapeExposed is what a scrape with UTF-8 names states for a scraper that
// does not take them, by the README's rules (escapeMetricName,
// escapeLabels).
func escapeExposed(t *testing.T, e *exposed) *exposed {
	t.Helper()
	out := newExposed()
	for _, s := range e.samples {
		name, labels := escapeMetricName(s.name), escapeLabels(s.labels)
		key := sampleKey(name, labels)
		if _, dup := out.samples[key]; dup {
			t.Fatalf("two UTF-8 samples escape to %s", key)
		}
		out.samples[key] = exposedSample{name: name, labels: labels, value: s.value}
	}
	for f, typ := range e.types {
		out.types[escapeMetricName(f)] = typ
	}
	for _, s := range e.created {
		name, labels := escapeMetricName(s.name), escapeLabels(s.labels)
		out.created[sampleKey(name, labels)] = exposedSample{name: name, labels: labels, value: s.value}
	}
	for _, n := range e.natives {
		name, labels := escapeMetricName(n.name), escapeLabels(n.labels)
		out.natives[sampleKey(name, labels)] = exposedNative{name: name, labels: labels, native: n.native, anyZeroThreshold: n.anyZeroThreshold}
	}
	return out
}

// requireSame fails with the differences between got and want, sorted.
func requireSame(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	var diff []string
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			diff = append(diff, "missing:    "+k+" "+w)
		case g != w:
			diff = append(diff, "different:  "+k+" "+g+", want "+w)
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			diff = append(diff, "unexpected: "+k+" "+g)
		}
	}
	if len(diff) == 0 {
		return
	}
	sort.Strings(diff)
	if len(diff) > 20 {
		diff = append(diff[:20], fmt.Sprintf("... and %d more", len(diff)-20))
	}
	t.Fatalf("%s:\n%s", what, strings.Join(diff, "\n"))
}

// fuzzSeeds are a batch of every metric type with exemplars, start times
// and deltas, one of what the reference compares (wideSeed), and the
// batches of the bad-input rows.
func fuzzSeeds() []pmetric.Metrics {
	md, ms := batch(agent)
	addGood(ms)
	g := describedGauge(ms, "seed.gauge", math.NaN(), map[string]any{"k": "v", "n": 3, "b": true, "d": 1.5})
	g.Exemplars().AppendEmpty().SetDoubleValue(1)
	c := counter(ms, "seed.delta", pmetric.AggregationTemporalityDelta).AppendEmpty()
	c.SetIntValue(2)
	c.SetStartTimestamp(ts(0))
	c.SetTimestamp(ts(time.Minute))
	e := c.Exemplars().AppendEmpty()
	e.SetIntValue(1)
	e.SetTraceID(pcommon.TraceID{1})
	e.SetSpanID(pcommon.SpanID{2})
	h := histogramPoint(histogramPoints(ms, "seed.histogram", pmetric.AggregationTemporalityDelta), "p", []float64{0.5, 1, 5}, []uint64{1, 2, 3, 4}, 10)
	h.Exemplars().AppendEmpty().SetDoubleValue(7)
	x := exponentialPoint(exponentialPoints(ms, "seed.exponential", pmetric.AggregationTemporalityDelta), "p", 10, -3, []uint64{1, 0, 2}, 5)
	x.SetZeroCount(1)
	x.Negative().SetOffset(2)
	x.Negative().BucketCounts().FromRaw([]uint64{1})
	s := described(ms, "seed.summary", "s").SetEmptySummary().DataPoints().AppendEmpty()
	s.SetCount(4)
	s.SetSum(2)
	q := s.QuantileValues().AppendEmpty()
	q.SetQuantile(0.9)
	q.SetValue(1)
	seeds := []pmetric.Metrics{md, wideSeed()}

	for _, row := range badInputRows() {
		md, ms := batch(agent)
		addGood(ms)
		row.bad(ms)
		if row.resource != nil {
			row.resource(md)
		}
		seeds = append(seeds, md)
	}
	return seeds
}

// wideSeed is a batch of what fuzzReference models, for mutations to start
// from: scope attributes and a schema URL, a resource without a job,
// attribute keys that are no label names as they are, every value type,
// non-monotonic sums, delta histograms with bounds out of order and -Inf,
// summaries of several quantiles, exponential histograms with negative
// buckets, a zero threshold and a NaN sum.
func wideSeed() pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	_ = rm.Resource().Attributes().FromRaw(map[string]any{
		"service.name": "checkout", "service.instance.id": "c-1", "k8s.pod.name": "checkout-7f9", "cloud.region": "eu-west-1",
	})
	sm := rm.ScopeMetrics().AppendEmpty()
	sm.SetSchemaUrl("https://opentelemetry.io/schemas/1.24.0")
	sm.Scope().SetName("io.opentelemetry.sdk")
	sm.Scope().SetVersion("2.1")
	sm.Scope().Attributes().PutStr("library.kind", "auto")
	ms := sm.Metrics()

	sum := described(ms, "queue.size", "{item}").SetEmptySum()
	sum.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	dp := sum.DataPoints().AppendEmpty()
	dp.SetIntValue(-3)
	dp.SetStartTimestamp(ts(0))
	dp.SetTimestamp(ts(time.Minute))
	_ = dp.Attributes().FromRaw(map[string]any{"queue.name": "orders", "1st": "x", "a:b": "colon", "http.route": "/a/{id}"})

	g := describedGauge(ms, "cpu.usage", 0.25, map[string]any{"cpu": 0, "state": "idle", "ratio": 0.5, "on": false})
	g.Attributes().PutEmptySlice("tags").AppendEmpty().SetStr("x")
	g.Attributes().PutEmptyBytes("raw").FromRaw([]byte{1, 2})
	describedGauge(ms, "cpu.usage", math.Copysign(0, -1), map[string]any{"cpu": 1, "state": "user"})

	c := counter(ms, "bytes.sent", pmetric.AggregationTemporalityCumulative).AppendEmpty()
	c.SetDoubleValue(1e21)
	c.SetStartTimestamp(ts(0))
	c.SetTimestamp(ts(time.Minute))
	ms.At(ms.Len() - 1).SetUnit("By")

	hps := histogramPoints(ms, "request.duration", pmetric.AggregationTemporalityDelta)
	ms.At(ms.Len() - 1).SetUnit("ms")
	histogramPoint(hps, "shuffled", []float64{2, math.Inf(-1), 0.5}, []uint64{3, 1, 2, 4}, 10)
	histogramPoint(hps, "empty", nil, nil, 0)

	s := described(ms, "rpc.latency", "ms").SetEmptySummary().DataPoints().AppendEmpty()
	s.SetCount(100)
	s.SetSum(1234.5)
	s.SetStartTimestamp(ts(0))
	s.SetTimestamp(ts(time.Minute))
	for _, q := range [][2]float64{{0, 1}, {0.5, 10}, {0.99, 99.5}, {1, 200}} {
		qv := s.QuantileValues().AppendEmpty()
		qv.SetQuantile(q[0])
		qv.SetValue(q[1])
	}

	xps := exponentialPoints(ms, "payload.size", pmetric.AggregationTemporalityCumulative)
	ms.At(ms.Len() - 1).SetUnit("By")
	x := exponentialPoint(xps, "wide", 2, -5, []uint64{1, 0, 0, 4, 2}, 12)
	x.SetZeroCount(2)
	x.SetZeroThreshold(0.001)
	x.Negative().SetOffset(-1)
	x.Negative().BucketCounts().FromRaw([]uint64{3})
	exponentialPoint(xps, "nan-sum", 0, 3, []uint64{1}, 2).SetSum(math.NaN())

	// A resource with an instance but no job: no target_info.
	rm = md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("service.instance.id", "lonely")
	describedGauge(rm.ScopeMetrics().AppendEmpty().Metrics(), "lonely.gauge", 1, nil)
	return md
}
