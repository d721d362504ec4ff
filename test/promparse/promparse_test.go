// Package promparse scrapes the agentprometheus exporter as Prometheus 3.16
// (v0.316.0) scrapes it — its Accept headers, gzip — and parses every body
// with Prometheus' own parsers (model/textparse): text, OpenMetrics and
// protobuf with native histograms and exemplars. Whatever random OTLP the
// exporter stored must parse without error and arrive whole: every series,
// value, exemplar and native histogram of the reference, which is the
// protobuf scrape read by expfmt's decoder.
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
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

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
	"google.golang.org/protobuf/proto"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter"
	"github.com/statsgate/statsgate/internal/otlprand"
)

// The Accept headers of Prometheus v0.316.0, as scrape.acceptHeader builds
// them from config.ScrapeProtocolsHeaders with its default
// metric_name_escaping_scheme, allow-utf-8.
const (
	// acceptDefault: config.DefaultScrapeProtocols, OpenMetrics first.
	acceptDefault = "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.7," +
		"application/openmetrics-text;version=0.0.1;q=0.6," +
		"text/plain;version=1.0.0;escaping=allow-utf-8;q=0.5," +
		"text/plain;version=0.0.4;q=0.4,*/*;q=0.3"
	// acceptProtoFirst: config.DefaultProtoFirstScrapeProtocols, which
	// scrape_native_histograms selects.
	acceptProtoFirst = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7," +
		"application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6," +
		"application/openmetrics-text;version=0.0.1;q=0.5," +
		"text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4," +
		"text/plain;version=0.0.4;q=0.3,*/*;q=0.2"
	// acceptEncoding: enable_compression, on by default.
	acceptEncoding = "gzip"
)

func TestPrometheusParsesEveryScrape(t *testing.T) {
	for _, strategy := range []agentprometheusexporter.TranslationStrategy{
		agentprometheusexporter.UnderscoreEscapingWithSuffixes, agentprometheusexporter.NoUTF8EscapingWithSuffixes,
	} {
		for _, openMetrics := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/enable_open_metrics=%v", strategy, openMetrics), func(t *testing.T) {
				exp, url := startExporter(t, strategy, openMetrics)
				for seed := range uint64(12) {
					// Each batch twice: cumulative points move on, aligned deltas accumulate.
					g := otlprand.New(seed)
					for i := range 2 {
						require.NoError(t, exp.ConsumeMetrics(context.Background(), g.Batch(i)))
					}
				}
				ref := settled(t, url)
				wantDefault := formatText
				if openMetrics {
					wantDefault = formatOpenMetrics
				}
				for _, c := range []struct {
					accept, mediaType string
				}{
					{acceptDefault, wantDefault},
					{acceptProtoFirst, formatProtobuf},
				} {
					body, contentType := scrape(t, url, c.accept)
					require.Equal(t, c.mediaType, formatOf(contentType), "the answer to %q", c.accept)
					got, err := parse(body, contentType)
					require.NoError(t, err, "Prometheus cannot parse the %s scrape", contentType)
					checkArrived(t, contentType, ref, got)
				}
				// Nothing moved while the formats were scraped.
				requireEqualFamilies(t, ref, decodeProtobuf(t, url))
			})
		}
	}
}

func startExporter(t *testing.T, strategy agentprometheusexporter.TranslationStrategy, openMetrics bool) (exporter.Metrics, string) {
	t.Helper()
	f := agentprometheusexporter.NewFactory()
	cfg := f.CreateDefaultConfig().(*agentprometheusexporter.Config)
	cfg.Server.NetAddr.Endpoint = freeEndpoint(t)
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

func freeEndpoint(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// client leaves Accept-Encoding to the request, as Prometheus does, and
// decompresses itself.
var client = &http.Client{Transport: &http.Transport{DisableCompression: true}, Timeout: 30 * time.Second}

// scrape fetches url as Prometheus would with accept.
func scrape(t *testing.T, url, accept string) (body []byte, contentType string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, http.NoBody)
	require.NoError(t, err)
	req.Header.Set("Accept", accept)
	req.Header.Set("Accept-Encoding", acceptEncoding)
	req.Header.Set("User-Agent", "Prometheus/3.16.0")
	req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", "10")
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "gzip", resp.Header.Get("Content-Encoding"))
	zr, err := gzip.NewReader(resp.Body)
	require.NoError(t, err)
	body, err = io.ReadAll(zr)
	require.NoError(t, err)
	return body, resp.Header.Get("Content-Type")
}

// settled scrapes protobuf until two scrapes in a row agree: new runs of
// deltas are shown to a scraper in steps (left out, as zeros, with values).
func settled(t *testing.T, url string) []*dto.MetricFamily {
	t.Helper()
	prev := decodeProtobuf(t, url)
	for range 10 {
		cur := decodeProtobuf(t, url)
		if equalFamilies(prev, cur) {
			return cur
		}
		prev = cur
	}
	t.Fatal("the scrapes do not settle")
	return nil
}

// decodeProtobuf scrapes with Prometheus' proto-first header and decodes
// the families with expfmt (names as negotiated: UTF-8 allowed).
func decodeProtobuf(t *testing.T, url string) []*dto.MetricFamily {
	t.Helper()
	body, contentType := scrape(t, url, acceptProtoFirst)
	format := expfmt.NewFormat(expfmt.TypeProtoDelim).WithEscapingScheme(model.NoEscaping)
	require.True(t, strings.HasPrefix(contentType, expfmt.ProtoType), contentType)
	dec := expfmt.NewDecoder(bytes.NewReader(body), format)
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

// parsed is what Prometheus' parser read from one scrape.
type parsed struct {
	samples   map[string]float64
	exemplars map[string][]float64 // values, by the key of their sample
	natives   map[string]*histogram.Histogram
}

// parse reads body as the scrape loop does, with native histograms on.
func parse(body []byte, contentType string) (parsed, error) {
	got := parsed{samples: map[string]float64{}, exemplars: map[string][]float64{}, natives: map[string]*histogram.Histogram{}}
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
			_, _, v := p.Series()
			p.Labels(&lset)
			k = keyOf(lset)
			if _, dup := got.samples[k]; dup {
				return got, fmt.Errorf("%s twice", k)
			}
			got.samples[k] = v
		case textparse.EntryHistogram:
			_, _, h, fh := p.Histogram()
			if fh != nil {
				return got, fmt.Errorf("a float histogram: %v", fh)
			}
			p.Labels(&lset)
			k = keyOf(lset)
			if _, dup := got.natives[k]; dup {
				return got, fmt.Errorf("%s twice", k)
			}
			got.natives[k] = h.Copy()
		default:
			continue
		}
		for p.Exemplar(&ex) {
			if ex.Labels.IsEmpty() && formatOf(contentType) == formatOpenMetrics {
				continue // see expected
			}
			got.exemplars[k] = append(got.exemplars[k], ex.Value)
		}
	}
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

func pairsOf(m *dto.Metric, extra ...string) [][2]string {
	var pairs [][2]string
	for _, l := range m.GetLabel() {
		pairs = append(pairs, [2]string{l.GetName(), l.GetValue()})
	}
	for i := 0; i < len(extra); i += 2 {
		pairs = append(pairs, [2]string{extra[i], extra[i+1]})
	}
	return pairs
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
	want := parsed{samples: map[string]float64{}, exemplars: map[string][]float64{}, natives: map[string]*histogram.Histogram{}}
	protobuf := format == formatProtobuf
	exemplar := func(k string, e *dto.Exemplar) {
		switch {
		case e == nil, format == formatText:
		case format == formatOpenMetrics && len(e.GetLabel()) == 0:
			// expfmt's OpenMetrics encoder leaves out exemplars without
			// labels: a writer may.
		default:
			want.exemplars[k] = append(want.exemplars[k], e.GetValue())
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
			base := key(name, pairsOf(m))
			switch mf.GetType() {
			case dto.MetricType_GAUGE:
				want.samples[base] = m.GetGauge().GetValue()
			case dto.MetricType_COUNTER:
				want.samples[base] = m.GetCounter().GetValue()
				exemplar(base, m.GetCounter().GetExemplar())
			case dto.MetricType_SUMMARY:
				s := m.GetSummary()
				for _, q := range s.GetQuantile() {
					want.samples[key(name, pairsOf(m, model.QuantileLabel, formatBound(q.GetQuantile())))] = q.GetValue()
				}
				want.samples[key(name+"_sum", pairsOf(m))] = s.GetSampleSum()
				want.samples[key(name+"_count", pairsOf(m))] = float64(s.GetSampleCount())
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				if h.Schema != nil && protobuf {
					want.natives[base] = nativeOf(h)
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
					k := key(name+"_bucket", pairsOf(m, model.BucketLabel, formatBound(b.GetUpperBound())))
					want.samples[k] = float64(b.GetCumulativeCount())
					exemplar(k, b.GetExemplar())
					inf = math.IsInf(b.GetUpperBound(), 1)
				}
				if !inf {
					want.samples[key(name+"_bucket", pairsOf(m, model.BucketLabel, "+Inf"))] = float64(h.GetSampleCount())
				}
				want.samples[key(name+"_sum", pairsOf(m))] = h.GetSampleSum()
				want.samples[key(name+"_count", pairsOf(m))] = float64(h.GetSampleCount())
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

// buckets expands spans and deltas into counts by bucket index, so that
// empty spans and how runs are split do not matter.
func buckets(spans []histogram.Span, deltas []int64) map[int32]int64 {
	out := map[int32]int64{}
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
			out[idx] = count
			idx++
		}
	}
	return out
}

func sameFloat(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }

// checkArrived checks that every sample, exemplar and native histogram of
// the reference arrived. Text and protobuf hold nothing else; OpenMetrics
// may add the _created samples of counters, summaries and histograms.
func checkArrived(t *testing.T, contentType string, ref []*dto.MetricFamily, got parsed) {
	t.Helper()
	format := formatOf(contentType)
	openMetrics := format == formatOpenMetrics
	want := expected(ref, format)
	require.NotEmpty(t, want.samples)
	exemplars := 0
	for _, v := range want.exemplars {
		exemplars += len(v)
	}
	t.Logf("%s: %d samples, %d exemplars, %d native histograms", format, len(want.samples), exemplars, len(want.natives))
	for k, v := range want.samples {
		g, ok := got.samples[k]
		require.True(t, ok, "%s: %s is missing", contentType, k)
		require.True(t, sameFloat(v, g), "%s: %s is %v, want %v", contentType, k, g, v)
	}
	for k := range got.samples {
		if _, ok := want.samples[k]; !ok && !(openMetrics && isCreated(k)) {
			t.Fatalf("%s: %s is not in the reference", contentType, k)
		}
	}
	for k, v := range got.exemplars {
		require.Contains(t, want.exemplars, k, "%s: %s has exemplars %v, the reference none", contentType, k, v)
	}
	for k, v := range want.exemplars {
		require.Equal(t, len(v), len(got.exemplars[k]), "%s: exemplars of %s", contentType, k)
		for i := range v {
			require.True(t, sameFloat(v[i], got.exemplars[k][i]), "%s: exemplar %d of %s is %v, want %v", contentType, i, k, got.exemplars[k][i], v[i])
		}
	}
	require.Len(t, got.natives, len(want.natives), contentType)
	for k, w := range want.natives {
		g := got.natives[k]
		require.NotNil(t, g, "%s: native histogram %s is missing", contentType, k)
		require.Equal(t, w.Schema, g.Schema, k)
		require.Equal(t, w.Count, g.Count, k)
		require.True(t, sameFloat(w.Sum, g.Sum), "%s: sum %v, want %v", k, g.Sum, w.Sum)
		require.Equal(t, w.ZeroThreshold, g.ZeroThreshold, k)
		require.Equal(t, w.ZeroCount, g.ZeroCount, k)
		require.Equal(t, buckets(w.PositiveSpans, w.PositiveBuckets), buckets(g.PositiveSpans, g.PositiveBuckets), "%s: positive buckets", k)
		require.Equal(t, buckets(w.NegativeSpans, w.NegativeBuckets), buckets(g.NegativeSpans, g.NegativeBuckets), "%s: negative buckets", k)
	}
}

// isCreated reports whether a sample key is of a _created sample.
func isCreated(k string) bool {
	name, _, _ := strings.Cut(k, ",")
	unquoted, err := strconv.Unquote(name)
	return err == nil && strings.HasSuffix(unquoted, "_created")
}
