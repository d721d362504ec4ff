// Package promparse scrapes the agentprometheus exporter as Prometheus
// scrapes it and parses every body with Prometheus' own parsers
// (model/textparse of v0.316.0, 3.16): text, OpenMetrics and protobuf with
// native histograms and exemplars.
//
// The scrapes send every Accept header Prometheus 2.42 to 3.16 sends
// (accept_test.go): 3.16's as its own scrape manager sends them, for each
// scrape protocol alone and the default lists, with each
// metric_name_escaping_scheme, and the earlier releases' built from their
// sources. Each answer must be in the format and name escaping the header
// negotiates (wantNegotiated), and with an escaping other than allow-utf-8
// hold no name such a scraper refuses.
//
// What is compared with what:
//
//   - Every scrape with what was sent (otlp_test.go): each seed of random
//     OTLP (internal/otlprand) goes to an exporter of its own, and the
//     series the OTLP predicts — names and labels by otlptranslator and
//     model's escaping for the negotiated scheme, gauge and counter values,
//     cumulative and accumulated delta sums, explicit-bucket histograms'
//     buckets, count and sum, exponential histograms as native histograms
//     (protobuf) or their count and sum (text formats), summaries, the
//     exemplars the format carries, sample timestamps, target_info — must
//     each be in the parsed scrape. Families whose outcome the OTLP alone
//     does not settle (a type conflict, names another family takes) are
//     left out of that check. fixed_test.go sends a batch of every kind and
//     states its whole exposition: nothing more, nothing less.
//   - Every scrape with the exporter's protobuf scrape of the same escaping,
//     decoded by expfmt: whatever random OTLP the exporter stored (every seed
//     in one store, type conflicts and all) must parse without error and
//     arrive whole in every format — every series, value, timestamp,
//     exemplar and native histogram.
//
// It is a module of its own (cd test/promparse && go test ./...) so that
// Prometheus and its dependencies stay out of the distro's go.mod.
package promparse

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/klauspost/compress/zstd"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"google.golang.org/protobuf/proto"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter"
	"github.com/statsgate/statsgate/internal/otlprand"
	"github.com/statsgate/statsgate/internal/testnet"
)

var strategies = []agentprometheusexporter.TranslationStrategy{
	agentprometheusexporter.UnderscoreEscapingWithSuffixes,
	agentprometheusexporter.UnderscoreEscapingWithoutSuffixes,
	agentprometheusexporter.NoUTF8EscapingWithSuffixes,
	agentprometheusexporter.NoTranslation,
}

const seeds = 12

func TestPrometheusParsesEveryScrape(t *testing.T) {
	scrapers := prometheusScrapers(t)
	for _, strategy := range strategies {
		for _, openMetrics := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/enable_open_metrics=%v", strategy, openMetrics), func(t *testing.T) {
				// Every seed in one store: whatever it holds parses, whole.
				exp, url := startExporter(t, strategy, openMetrics)
				for seed := range uint64(seeds) {
					for _, b := range batches(seed) {
						require.NoError(t, exp.ConsumeMetrics(context.Background(), b))
					}
				}
				checkScrapes(t, url, scrapers, openMetrics, nil)

				// Each seed alone: the series its OTLP predicts are there.
				var st otlpStats
				for seed := range uint64(seeds) {
					exp, url := startExporter(t, strategy, openMetrics)
					for _, b := range batches(seed) {
						require.NoError(t, exp.ConsumeMetrics(context.Background(), b))
					}
					want := expectOTLP(strategy, false, batches(seed)...)
					checkScrapes(t, url, scrapers, openMetrics, want)
					st.add(want.stats())
				}
				t.Logf("%d scrapers; of the OTLP sent, %d families (%d left out) and %d series checked in every format",
					len(scrapers), st.families, st.left, st.series)
				require.NotZero(t, st.series)
			})
		}
	}
}

// batches are a seed's two batches: cumulative points move on, aligned
// deltas accumulate. Batch(i) is the same for the same seed, every time.
func batches(seed uint64) []pmetric.Metrics {
	g := otlprand.New(seed)
	return []pmetric.Metrics{g.Batch(0), g.Batch(1)}
}

func startExporter(t *testing.T, strategy agentprometheusexporter.TranslationStrategy, openMetrics bool) (exporter.Metrics, string) {
	t.Helper()
	f := agentprometheusexporter.NewFactory()
	cfg := f.CreateDefaultConfig().(*agentprometheusexporter.Config)
	cfg.Server.NetAddr.Endpoint = testnet.FreeEndpoint(t)
	cfg.TranslationStrategy = strategy
	cfg.EnableOpenMetrics = openMetrics
	cfg.Scrape.DrainTimeout = 0
	require.NoError(t, cfg.Validate())
	exp, err := f.CreateMetrics(context.Background(), exportertest.NewNopSettings(f.Type()), cfg)
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, exp.Shutdown(context.Background())) })
	return exp, "http://" + cfg.Server.NetAddr.Endpoint + "/metrics"
}

// checkScrapes scrapes url as each scraper and checks every answer: the
// format it negotiates, that Prometheus parses it, that it holds the
// exporter's protobuf scrape of the same escaping whole, that its names are
// ones the scraper takes and, with want, that it holds what the OTLP sent
// predicts.
func checkScrapes(t *testing.T, url string, scrapers []scraper, openMetrics bool, want *otlpWant) {
	t.Helper()
	refs := references(t, url)
	for _, s := range scrapers {
		neg := wantNegotiated(s.accept, openMetrics)
		what := fmt.Sprintf("%s (Accept: %s)", s.name, s.accept)
		body, contentType := scrape(t, url, s)
		checkContentType(t, what, neg, contentType)
		what += " answered " + contentType
		got, err := parse(body, contentType)
		require.NoError(t, err, "%s: Prometheus cannot parse it", what)
		checkArrived(t, what, refs[neg.escaping], got, neg.mediaType)
		if neg.escaping != model.NoEscaping {
			require.Empty(t, got.utf8Names, "%s: names a scraper without allow-utf-8 refuses", what)
		}
		if want != nil {
			checkOTLP(t, what, want, neg, got)
		}
	}
	// Nothing moved while the formats were scraped.
	requireEqualFamilies(t, refs[model.NoEscaping], decodeProtobuf(t, url, model.NoEscaping))
}

// checkContentType checks that a scrape is answered in the negotiated
// format.
func checkContentType(t *testing.T, what string, want negotiated, contentType string) {
	t.Helper()
	mediaType, params, err := mime.ParseMediaType(contentType)
	require.NoError(t, err, what)
	got := negotiated{mediaType: mediaType, version: params["version"]}
	got.escaping, err = model.ToEscapingScheme(params[model.EscapingKey])
	require.NoError(t, err, "%s: answered %s", what, contentType)
	require.Equal(t, want, got, "%s: answered %s", what, contentType)
	if mediaType == formatProtobuf {
		require.Equal(t, "io.prometheus.client.MetricFamily", params["proto"], what)
		require.Equal(t, "delimited", params["encoding"], what)
	}
}

// client leaves Accept-Encoding to the request, as Prometheus does, and
// decompresses itself.
var client = &http.Client{Transport: &http.Transport{DisableCompression: true}, Timeout: 30 * time.Second}

// scrape fetches url with s's headers and decompresses the body as its
// Content-Encoding says, which must be one s accepts.
func scrape(t *testing.T, url string, s scraper) (body []byte, contentType string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, http.NoBody)
	require.NoError(t, err)
	req.Header.Set("Accept", s.accept)
	req.Header.Set("Accept-Encoding", s.encoding)
	req.Header.Set("User-Agent", "Prometheus/3.16.0")
	req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", "10")
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var r io.Reader = resp.Body
	switch enc := resp.Header.Get("Content-Encoding"); enc {
	case "":
		require.True(t, s.encoding == "identity" || !strings.Contains(s.encoding, "gzip"), "%s: uncompressed for Accept-Encoding %q", s.name, s.encoding)
	case "gzip":
		require.Contains(t, strings.Split(s.encoding, ","), "gzip", s.name)
		zr, err := gzip.NewReader(resp.Body)
		require.NoError(t, err)
		r = zr
	case "zstd":
		require.Contains(t, strings.Split(s.encoding, ","), "zstd", s.name)
		zr, err := zstd.NewReader(resp.Body)
		require.NoError(t, err)
		defer zr.Close()
		r = zr
	default:
		t.Fatalf("%s: Content-Encoding %q", s.name, enc)
	}
	body, err = io.ReadAll(r)
	require.NoError(t, err)
	return body, resp.Header.Get("Content-Type")
}

// allSchemes are the escaping schemes a scraper can ask for.
var allSchemes = []model.EscapingScheme{model.NoEscaping, model.UnderscoreEscaping, model.DotsEscaping, model.ValueEncodingEscaping}

// references are the exporter's protobuf scrapes in each escaping scheme,
// once they settle: new runs of deltas are shown to a scraper in steps
// (left out, as zeros, with values).
func references(t *testing.T, url string) map[model.EscapingScheme][]*dto.MetricFamily {
	t.Helper()
	refs := map[model.EscapingScheme][]*dto.MetricFamily{}
	prev := decodeProtobuf(t, url, model.NoEscaping)
	for range 10 {
		cur := decodeProtobuf(t, url, model.NoEscaping)
		if equalFamilies(prev, cur) {
			refs[model.NoEscaping] = cur
			break
		}
		prev = cur
	}
	require.NotNil(t, refs[model.NoEscaping], "the scrapes do not settle")
	for _, s := range allSchemes[1:] {
		refs[s] = decodeProtobuf(t, url, s)
	}
	return refs
}

// decodeProtobuf scrapes delimited protobuf with names escaped by scheme
// and decodes the families with expfmt.
func decodeProtobuf(t *testing.T, url string, scheme model.EscapingScheme) []*dto.MetricFamily {
	t.Helper()
	s := scraper{name: "reference", accept: protoHeader + ";" + model.EscapingKey + "=" + scheme.String(), encoding: "gzip"}
	body, contentType := scrape(t, url, s)
	require.True(t, strings.HasPrefix(contentType, expfmt.ProtoType), contentType)
	dec := expfmt.NewDecoder(bytes.NewReader(body), expfmt.NewFormat(expfmt.TypeProtoDelim).WithEscapingScheme(model.NoEscaping))
	var out []*dto.MetricFamily
	for {
		mf := &dto.MetricFamily{}
		err := dec.Decode(mf)
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		out = append(out, mf)
	}
}

func equalFamilies(a, b []*dto.MetricFamily) bool {
	return slices.EqualFunc(a, b, func(x, y *dto.MetricFamily) bool { return proto.Equal(x, y) })
}

func requireEqualFamilies(t *testing.T, want, got []*dto.MetricFamily) {
	t.Helper()
	require.True(t, equalFamilies(want, got), "the exposition changed between scrapes")
}

// exemplarValue is an exemplar as the parsers return it, or as the OTLP
// sent predicts it.
type exemplarValue struct {
	value  float64
	labels string // name="value" pairs sorted by name, comma-separated
	ts     int64  // milliseconds
	hasTs  bool
}

// native is a native histogram's buckets: the counts of the non-empty ones
// by Prometheus' bucket index (an exponential histogram's OTLP index plus
// one) at schema.
type native struct {
	schema        int32
	zeroThreshold float64
	zeroCount     uint64
	pos, neg      map[int32]uint64
}

// sample is a float sample; hasTs says whether it has a timestamp, in
// milliseconds.
type sample struct {
	v     float64
	ts    int64
	hasTs bool
}

// nativeSeen is a native histogram as a scrape holds it, its buckets by
// index (so that how spans are split does not matter).
type nativeSeen struct {
	h     *native
	count uint64
	sum   float64
	ts    int64
	hasTs bool
}

// parsed is what Prometheus' parser read from one scrape.
type parsed struct {
	samples   map[string]sample
	exemplars map[string][]exemplarValue // by the key of their sample
	natives   map[string]nativeSeen
	// utf8Names are the metric and label names read that are not legacy
	// names.
	utf8Names []string
}

// parse reads body as the scrape loop does, with native histograms on.
func parse(body []byte, contentType string) (parsed, error) {
	got := parsed{samples: map[string]sample{}, exemplars: map[string][]exemplarValue{}, natives: map[string]nativeSeen{}}
	p, err := textparse.New(body, contentType, labels.NewSymbolTable(), textparse.ParserOptions{})
	if err != nil {
		return got, fmt.Errorf("content type %q: %w", contentType, err)
	}
	var lset labels.Labels
	var ex exemplar.Exemplar
	for {
		entry, err := p.Next()
		if errors.Is(err, io.EOF) {
			return got, nil
		}
		if err != nil {
			return got, err
		}
		var k string
		switch entry {
		case textparse.EntrySeries:
			_, ts, v := p.Series()
			p.Labels(&lset)
			k = keyOf(lset)
			if _, dup := got.samples[k]; dup {
				return got, fmt.Errorf("%s twice", k)
			}
			s := sample{v: v}
			if ts != nil {
				s.ts, s.hasTs = *ts, true
			}
			got.samples[k] = s
		case textparse.EntryHistogram:
			_, ts, h, fh := p.Histogram()
			if fh != nil {
				return got, fmt.Errorf("a float histogram: %v", fh)
			}
			p.Labels(&lset)
			k = keyOf(lset)
			if _, dup := got.natives[k]; dup {
				return got, fmt.Errorf("%s twice", k)
			}
			n := nativeSeenOf(h)
			if ts != nil {
				n.ts, n.hasTs = *ts, true
			}
			got.natives[k] = n
		default:
			continue
		}
		lset.Range(func(l labels.Label) {
			if !isLegacy(l.Name, false) || l.Name == model.MetricNameLabel && !isLegacy(l.Value, true) {
				got.utf8Names = append(got.utf8Names, l.Name+"="+l.Value)
			}
		})
		// The parser sets what an exemplar has: start each from zero, as
		// the scrape loop does.
		for ex = (exemplar.Exemplar{}); p.Exemplar(&ex); ex = (exemplar.Exemplar{}) {
			if ex.Labels.IsEmpty() && formatOf(contentType) == formatOpenMetrics {
				continue // see expected
			}
			got.exemplars[k] = append(got.exemplars[k], exemplarValue{
				value: ex.Value, labels: exemplarLabels(ex.Labels), ts: ex.Ts, hasTs: ex.HasTs,
			})
		}
	}
}

// isLegacy reports whether a parsed name is one a scraper without
// escaping=allow-utf-8 takes.
func isLegacy(name string, metric bool) bool {
	if metric {
		return model.LegacyValidation.IsValidMetricName(name)
	}
	return model.LegacyValidation.IsValidLabelName(name) && utf8.ValidString(name)
}

func exemplarLabels(ls labels.Labels) string {
	var pairs []string
	ls.Range(func(l labels.Label) { pairs = append(pairs, l.Name+"="+strconv.Quote(l.Value)) })
	slices.Sort(pairs)
	return strings.Join(pairs, ",")
}

func keyOf(lset labels.Labels) string {
	var pairs [][2]string
	lset.Range(func(l labels.Label) {
		if l.Name != model.MetricNameLabel {
			pairs = append(pairs, [2]string{l.Name, l.Value})
		}
	})
	return key(lset.Get(model.MetricNameLabel), pairs)
}

// key identifies a sample: its name and sorted labels, with the numbers of
// le and quantile labels in one spelling (formats write 1, 1.0 or 1e+00;
// expfmt writes a bound of -0 as 0 in the text formats, -0 in protobuf).
func key(name string, pairs [][2]string) string {
	slices.SortFunc(pairs, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	var b strings.Builder
	b.WriteString(strconv.Quote(name))
	for _, p := range pairs {
		v := p[1]
		if p[0] == model.BucketLabel || p[0] == model.QuantileLabel {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				v = formatBound(f)
			}
		}
		b.WriteString("," + strconv.Quote(p[0]) + "=" + strconv.Quote(v))
	}
	return b.String()
}

func dtoPairs(m *dto.Metric, extra ...string) [][2]string {
	var pairs [][2]string
	for _, l := range m.GetLabel() {
		pairs = append(pairs, [2]string{l.GetName(), l.GetValue()})
	}
	return append(pairs, pairsOf(extra)...)
}

func pairsOf(kv []string) [][2]string {
	var out [][2]string
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, [2]string{kv[i], kv[i+1]})
	}
	return out
}

func formatBound(f float64) string {
	if f == 0 {
		f = 0 // -0 too
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// expected is what a parser must read from a scrape of the reference
// families in format: native histograms as histograms (protobuf) or as
// their classic +Inf bucket, sum and count (the text formats carry no
// native buckets), and the exemplars the format carries.
func expected(ref []*dto.MetricFamily, format string) parsed {
	want := parsed{samples: map[string]sample{}, exemplars: map[string][]exemplarValue{}, natives: map[string]nativeSeen{}}
	protobuf := format == formatProtobuf
	exemplar := func(k string, e *dto.Exemplar) {
		switch {
		case e == nil, format == formatText:
		case format == formatOpenMetrics && len(e.GetLabel()) == 0:
			// expfmt's OpenMetrics encoder leaves out exemplars without
			// labels: a writer may.
		default:
			x := exemplarValue{value: e.GetValue()}
			var pairs []string
			for _, l := range e.GetLabel() {
				pairs = append(pairs, l.GetName()+"="+strconv.Quote(l.GetValue()))
			}
			slices.Sort(pairs)
			x.labels = strings.Join(pairs, ",")
			if ts := e.GetTimestamp(); ts != nil {
				x.ts, x.hasTs = ts.GetSeconds()*1000+int64(ts.GetNanos()/1e6), true
			}
			want.exemplars[k] = append(want.exemplars[k], x)
		}
	}
	for _, mf := range ref {
		name := mf.GetName()
		// Where Prometheus' protobuf parser starts reading a native
		// histogram's exemplars. v0.316.0 resets it at a family's start and
		// after a classic histogram, not between two native histograms: a
		// native histogram's exemplars before as many as the previous one
		// had are not read.
		exemplarPos := 0
		for _, m := range mf.GetMetric() {
			base := key(name, dtoPairs(m))
			put := func(k string, v float64) {
				want.samples[k] = sample{v: v, ts: m.GetTimestampMs(), hasTs: m.TimestampMs != nil}
			}
			switch mf.GetType() {
			case dto.MetricType_GAUGE:
				put(base, m.GetGauge().GetValue())
			case dto.MetricType_COUNTER:
				put(base, m.GetCounter().GetValue())
				exemplar(base, m.GetCounter().GetExemplar())
			case dto.MetricType_SUMMARY:
				s := m.GetSummary()
				for _, q := range s.GetQuantile() {
					put(key(name, dtoPairs(m, model.QuantileLabel, formatBound(q.GetQuantile()))), q.GetValue())
				}
				put(key(name+"_sum", dtoPairs(m)), s.GetSampleSum())
				put(key(name+"_count", dtoPairs(m)), float64(s.GetSampleCount()))
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				if h.Schema != nil && protobuf {
					n := nativeSeenOf(nativeOf(h))
					n.ts, n.hasTs = m.GetTimestampMs(), m.TimestampMs != nil
					want.natives[base] = n
					exs := h.GetExemplars()
					for _, e := range exs[min(exemplarPos, len(exs)):] {
						if e.GetTimestamp() != nil { // Prometheus keeps only these
							exemplar(base, e)
						}
					}
					if len(exs) > 0 {
						exemplarPos = max(exemplarPos, len(exs))
					}
					continue
				}
				exemplarPos = 0
				inf := false
				for _, b := range h.GetBucket() {
					k := key(name+"_bucket", dtoPairs(m, model.BucketLabel, formatBound(b.GetUpperBound())))
					put(k, float64(b.GetCumulativeCount()))
					exemplar(k, b.GetExemplar())
					inf = math.IsInf(b.GetUpperBound(), 1)
				}
				if !inf {
					put(key(name+"_bucket", dtoPairs(m, model.BucketLabel, "+Inf")), float64(h.GetSampleCount()))
				}
				put(key(name+"_sum", dtoPairs(m)), h.GetSampleSum())
				put(key(name+"_count", dtoPairs(m)), float64(h.GetSampleCount()))
			}
		}
	}
	return want
}

// The formats, by their media types.
const (
	formatText        = "text/plain"
	formatOpenMetrics = expfmt.OpenMetricsType
	formatProtobuf    = expfmt.ProtoType
)

func formatOf(contentType string) string {
	mediaType, _, _ := strings.Cut(contentType, ";")
	return strings.TrimSpace(mediaType)
}

func nativeOf(h *dto.Histogram) *histogram.Histogram {
	spans := func(ss []*dto.BucketSpan) []histogram.Span {
		var out []histogram.Span
		for _, s := range ss {
			out = append(out, histogram.Span{Offset: s.GetOffset(), Length: s.GetLength()})
		}
		return out
	}
	return &histogram.Histogram{
		Schema: h.GetSchema(), ZeroThreshold: h.GetZeroThreshold(), ZeroCount: h.GetZeroCount(),
		Count: h.GetSampleCount(), Sum: h.GetSampleSum(),
		PositiveSpans: spans(h.GetPositiveSpan()), PositiveBuckets: h.GetPositiveDelta(),
		NegativeSpans: spans(h.GetNegativeSpan()), NegativeBuckets: h.GetNegativeDelta(),
	}
}

func nativeSeenOf(h *histogram.Histogram) nativeSeen {
	return nativeSeen{
		h: &native{
			schema: h.Schema, zeroThreshold: h.ZeroThreshold, zeroCount: h.ZeroCount,
			pos: buckets(h.PositiveSpans, h.PositiveBuckets), neg: buckets(h.NegativeSpans, h.NegativeBuckets),
		},
		count: h.Count, sum: h.Sum,
	}
}

// buckets expands spans and deltas into counts by bucket index, empty
// buckets left out, so that empty spans and how runs are split do not
// matter.
func buckets(spans []histogram.Span, deltas []int64) map[int32]uint64 {
	out := map[int32]uint64{}
	var idx int32
	var count int64
	d := 0
	for i, s := range spans {
		if i == 0 {
			idx = s.Offset
		} else {
			idx += s.Offset
		}
		for range s.Length {
			count += deltas[d]
			d++
			if count != 0 {
				out[idx] = uint64(count)
			}
			idx++
		}
	}
	return out
}

func sameFloat(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }

// sameTime compares timestamps in milliseconds. OpenMetrics writes seconds,
// which Prometheus' parser reads back truncated: .123 can come back as .122.
func sameTime(want, got int64, format string) bool {
	if format == formatOpenMetrics {
		return got == want || got == want-1
	}
	return got == want
}

func sameExemplar(want, got exemplarValue, format string) bool {
	return sameFloat(want.value, got.value) && want.labels == got.labels && want.hasTs == got.hasTs &&
		(!want.hasTs || sameTime(want.ts, got.ts, format))
}

func checkNative(t *testing.T, what, k string, want, got nativeSeen) {
	t.Helper()
	require.Equal(t, want.h.schema, got.h.schema, "%s: schema of %s", what, k)
	require.Equal(t, want.count, got.count, "%s: count of %s", what, k)
	require.True(t, sameFloat(want.sum, got.sum), "%s: sum of %s is %v, want %v", what, k, got.sum, want.sum)
	require.Equal(t, want.h.zeroThreshold, got.h.zeroThreshold, "%s: zero threshold of %s", what, k)
	require.Equal(t, want.h.zeroCount, got.h.zeroCount, "%s: zero count of %s", what, k)
	require.Equal(t, want.h.pos, got.h.pos, "%s: positive buckets of %s", what, k)
	require.Equal(t, want.h.neg, got.h.neg, "%s: negative buckets of %s", what, k)
	require.Equal(t, want.hasTs, got.hasTs, "%s: timestamp of %s", what, k)
	require.Equal(t, want.ts, got.ts, "%s: timestamp of %s", what, k)
}

// checkArrived checks that every sample, timestamp, exemplar and native
// histogram of the reference arrived. Text and protobuf hold nothing else;
// OpenMetrics may add the _created samples of counters, summaries and
// histograms.
func checkArrived(t *testing.T, what string, ref []*dto.MetricFamily, got parsed, format string) {
	t.Helper()
	openMetrics := format == formatOpenMetrics
	want := expected(ref, format)
	require.NotEmpty(t, want.samples, what)
	for k, v := range want.samples {
		g, ok := got.samples[k]
		require.True(t, ok, "%s: %s is missing", what, k)
		require.True(t, sameFloat(v.v, g.v), "%s: %s is %v, want %v", what, k, g.v, v.v)
		require.Equal(t, v.hasTs, g.hasTs, "%s: timestamp of %s", what, k)
		require.True(t, sameTime(v.ts, g.ts, format), "%s: %s at %d, want %d", what, k, g.ts, v.ts)
	}
	for k := range got.samples {
		if _, ok := want.samples[k]; !ok && !(openMetrics && isCreated(k)) {
			t.Fatalf("%s: %s is not in the reference", what, k)
		}
	}
	for k, v := range got.exemplars {
		require.Contains(t, want.exemplars, k, "%s: %s has exemplars %v, the reference none", what, k, v)
	}
	for k, v := range want.exemplars {
		require.Len(t, got.exemplars[k], len(v), "%s: exemplars of %s", what, k)
		for i := range v {
			require.True(t, sameExemplar(v[i], got.exemplars[k][i], format), "%s: exemplar %d of %s is %+v, want %+v", what, i, k, got.exemplars[k][i], v[i])
		}
	}
	require.Len(t, got.natives, len(want.natives), what)
	for k, w := range want.natives {
		g, ok := got.natives[k]
		require.True(t, ok, "%s: native histogram %s is missing", what, k)
		checkNative(t, what, k, w, g)
	}
}

// isCreated reports whether a sample key is of a _created sample.
func isCreated(k string) bool {
	name, _, _ := strings.Cut(k, ",")
	unquoted, err := strconv.Unquote(name)
	return err == nil && strings.HasSuffix(unquoted, "_created")
}
