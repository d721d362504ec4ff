package agentprometheusexporter

import (
	"bytes"
	"context"
	"math"
	"net/http"
	"testing"
	"time"

	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/metadata"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/scrape"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/storetest"
)

// FuzzIngestScrape stores arbitrary OTLP metrics and scrapes them in every
// format: whatever the input, ingestion must not panic and every scrape
// must parse with expfmt, pass checkFamilies and hold the same series as
// the text scrape. Each input is consumed twice, so that updates (delta
// accumulation, out-of-order checks, position hints) run too, with the
// default strategy and with UTF-8 names allowed.
func FuzzIngestScrape(f *testing.F) {
	// The rows with a 64 KiB value or 500 attributes would make every
	// mutation and minimisation slow; the table covers them.
	storetest.AddSeeds(f, 8<<10, fuzzSeeds()...)
	f.Fuzz(func(t *testing.T, data []byte) {
		md, err := (&pmetric.ProtoUnmarshaler{}).UnmarshalMetrics(data)
		if err != nil {
			t.Skip("not OTLP")
		}
		for _, strategy := range []TranslationStrategy{UnderscoreEscapingWithSuffixes, NoUTF8EscapingWithSuffixes} {
			cfg := createDefaultConfig().(*Config)
			cfg.TranslationStrategy = strategy
			e, err := newAgentPrometheusExporter(exportertest.NewNopSettings(metadata.Type), cfg, wallClock)
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if err := e.consumeMetrics(context.Background(), md); err != nil {
					t.Fatal(err)
				}
			}
			accepts := []string{acceptText, acceptOpenMetrics, acceptProtobuf}
			if strategy == NoUTF8EscapingWithSuffixes {
				accepts = append(accepts, acceptText+";escaping=allow-utf-8", acceptProtobuf+";escaping=allow-utf-8")
			}
			var series int
			for i, accept := range accepts {
				body, contentType := fuzzScrape(t, e, accept)
				families, err := decodeExposition(body, contentType)
				if err != nil {
					t.Fatalf("%s, %s scrape: %v\n%s", strategy, accept, err, body)
				}
				n := 0
				for _, mf := range families {
					n += len(mf.GetMetric())
				}
				if i == 0 {
					series = n
				} else if n != series {
					t.Fatalf("%s: the %s scrape holds %d series, the text one %d", strategy, accept, n, series)
				}
			}
		}
	})
}

// fuzzScrape writes the scrape the handler would, without HTTP: negotiated
// from accept as the handler negotiates it, written by the exporter's encoder.
func fuzzScrape(t *testing.T, e *agentPrometheusExporter, accept string) ([]byte, string) {
	t.Helper()
	format := scrape.Negotiate(http.Header{"Accept": []string{accept}}, true)
	var buf bytes.Buffer
	if err := e.encoder.For(format, scrape.EncodingIdentity)(&buf, 0); err != nil {
		t.Fatalf("%s scrape failed: %v", accept, err)
	}
	return buf.Bytes(), string(format.ContentType)
}

// fuzzSeeds are a batch of every metric type with exemplars, start times
// and deltas, and the batches of the bad-input rows.
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
	seeds := []pmetric.Metrics{md}

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
