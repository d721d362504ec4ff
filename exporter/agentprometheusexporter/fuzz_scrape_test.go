package agentprometheusexporter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/metadata"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/storetest"
)

// fuzzConfig is one configuration every fuzz input is served with.
type fuzzConfig struct {
	strategy TranslationStrategy
	// created turns on enable_open_metrics_created_samples, so that the
	// OpenMetrics _created samples can be compared with protobuf's created
	// timestamps.
	created bool
}

func (fc fuzzConfig) String() string {
	return fmt.Sprintf("%s,created=%v", fc.strategy, fc.created)
}

// utf8Names reports whether the strategy stores UTF-8 names, as
// otlptranslator reads the strategy.
func (fc fuzzConfig) utf8Names() bool {
	return !otlptranslatorStrategy(fc.strategy).ShouldEscape()
}

// fuzzConfigs: each translation strategy once, OpenMetrics on in all of
// them (it adds name clashes of its own), created samples in half.
var fuzzConfigs = []fuzzConfig{
	{strategy: UnderscoreEscapingWithSuffixes, created: true},
	{strategy: NoUTF8EscapingWithSuffixes},
	{strategy: UnderscoreEscapingWithoutSuffixes},
	{strategy: NoTranslation, created: true},
}

// A scrape asks for one format with one escaping; a scraper that asks for
// UTF-8 names in one format asks in the others too, as Prometheus 3 does.
type fuzzAccept struct {
	format string // "text", "openmetrics", "protobuf"
	utf8   bool
	accept string
}

func fuzzAccepts(utf8Names bool) []fuzzAccept {
	out := []fuzzAccept{
		{"text", false, acceptText},
		{"openmetrics", false, acceptOpenMetrics},
		{"protobuf", false, acceptProtobuf},
	}
	if utf8Names {
		out = append(out,
			fuzzAccept{"text", true, "text/plain;version=1.0.0;escaping=allow-utf-8"},
			fuzzAccept{"openmetrics", true, acceptOpenMetrics + ";escaping=allow-utf-8"},
			fuzzAccept{"protobuf", true, acceptProtobuf + ";escaping=allow-utf-8"},
		)
	}
	return out
}

// servedExporter is an exporter made by the factory, started, and served on
// a loopback port the kernel chose.
type servedExporter struct {
	exp       exporter.Metrics
	url       string
	transport *http.Transport
}

// serveForFuzz creates and starts an exporter of fc through the factory.
// The address comes from the exporter's "Serving metrics" log line: a port
// picked before the start could be taken by then, and fuzzing starts more
// exporters than a test run can hand out ports to.
func serveForFuzz(t *testing.T, fc fuzzConfig) *servedExporter {
	t.Helper()
	cfg := createDefaultConfig().(*Config)
	cfg.Server.NetAddr.Endpoint = "127.0.0.1:0"
	cfg.TranslationStrategy = fc.strategy
	cfg.EnableOpenMetrics = true
	cfg.EnableOpenMetricsCreatedSamples = fc.created
	// Nothing is waited for at shutdown: the input is thrown away.
	cfg.Scrape.DrainTimeout = 0
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zapcore.InfoLevel)
	set := exportertest.NewNopSettings(metadata.Type)
	set.Logger = zap.New(core)
	exp, err := NewFactory().CreateMetrics(context.Background(), set, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := exp.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	s := &servedExporter{exp: exp, transport: &http.Transport{}}
	t.Cleanup(func() {
		s.transport.CloseIdleConnections()
		if err := exp.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})
	for _, entry := range logs.FilterMessage("Serving metrics").All() {
		if endpoint, ok := entry.ContextMap()["endpoint"].(string); ok {
			s.url = "http://" + endpoint + metricsPath
		}
	}
	if s.url == "" {
		t.Fatal(`the exporter did not log "Serving metrics" with its endpoint`)
	}
	return s
}

func (s *servedExporter) consume(t *testing.T, md pmetric.Metrics) {
	t.Helper()
	if err := s.exp.ConsumeMetrics(context.Background(), md); err != nil {
		t.Fatal(err)
	}
}

// scrape GETs /metrics with accept. gzip is asked for by Go's transport
// and undone by it, unless identity is true.
func (s *servedExporter) scrape(t *testing.T, accept string, identity bool) (body []byte, contentType string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", accept)
	if identity {
		req.Header.Set("Accept-Encoding", "identity")
	}
	resp, err := s.transport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err = io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s scrape: %v", accept, err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s scrape: %s\n%s", accept, resp.Status, body)
	}
	if identity && resp.Header.Get("Content-Encoding") != "" {
		t.Fatalf("%s scrape: Content-Encoding %q for identity", accept, resp.Header.Get("Content-Encoding"))
	}
	return body, resp.Header.Get("Content-Type")
}

// exposed is a scrape reduced to what every format states alike: its
// samples, one per line of the text format, keyed by name and label set
// (sampleKey), each with its value and timestamp (sampleValue); the type
// of each family that has samples, named as the text format names it; and
// what only some formats carry: created timestamps in seconds
// (OpenMetrics' _created samples, protobuf's fields) by family and labels,
// and native histograms (protobuf).
type exposed struct {
	samples map[string]exposedSample
	types   map[string]string
	created map[string]exposedSample
	natives map[string]exposedNative
}

type exposedSample struct {
	name   string
	labels map[string]string
	value  string
}

type exposedNative struct {
	name   string
	labels map[string]string
	native nativeHistogram
	// anyZeroThreshold: the input left the zero threshold to the exporter.
	anyZeroThreshold bool
}

func newExposed() *exposed {
	return &exposed{
		samples: map[string]exposedSample{}, types: map[string]string{},
		created: map[string]exposedSample{}, natives: map[string]exposedNative{},
	}
}

// nativeHistogram is a native histogram with its buckets by index, zero
// counts left out: spans may or may not cover empty buckets.
type nativeHistogram struct {
	schema        int32
	zeroThreshold float64
	zeroCount     float64
	positive      map[int64]float64
	negative      map[int64]float64
}

func (n nativeHistogram) String() string {
	return fmt.Sprintf("schema=%d zero_threshold=%s zero_count=%s positive=%s negative=%s",
		n.schema, formatSampleValue(n.zeroThreshold), formatSampleValue(n.zeroCount), bucketString(n.positive), bucketString(n.negative))
}

func bucketString(b map[int64]float64) string {
	idx := make([]int64, 0, len(b))
	for i := range b {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	parts := make([]string, len(idx))
	for j, i := range idx {
		parts[j] = fmt.Sprintf("%d:%s", i, formatSampleValue(b[i]))
	}
	return "{" + strings.Join(parts, " ") + "}"
}

// add records one sample of a scrape; a second sample with the same name
// and labels is an error in any format.
func (e *exposed) add(name string, labels map[string]string, value float64, ts *int64) error {
	key := sampleKey(name, labels)
	if _, dup := e.samples[key]; dup {
		return fmt.Errorf("sample %s is written twice", key)
	}
	e.addSample(name, labels, value, ts)
	return nil
}

func (e *exposed) addSample(name string, labels map[string]string, value float64, ts *int64) {
	e.samples[sampleKey(name, labels)] = exposedSample{name: name, labels: labels, value: sampleValue(value, ts)}
}

func (e *exposed) setType(family, typ string) error {
	if old, ok := e.types[family]; ok && old != typ {
		return fmt.Errorf("family %q typed %s and %s", family, old, typ)
	}
	e.types[family] = typ
	return nil
}

// sampleKey is name{label="value",...} with the labels sorted by name;
// names that are not legacy ones are quoted.
func sampleKey(name string, labels map[string]string) string {
	names := make([]string, 0, len(labels))
	for n := range labels {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString(quoteName(name))
	b.WriteByte('{')
	for i, n := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(quoteName(n))
		b.WriteByte('=')
		b.WriteString(strconv.Quote(labels[n]))
	}
	b.WriteByte('}')
	return b.String()
}

func quoteName(n string) string {
	if model.LegacyValidation.IsValidMetricName(n) {
		return n
	}
	return strconv.Quote(n)
}

func sampleValue(v float64, ts *int64) string {
	if ts == nil {
		return formatSampleValue(v)
	}
	return formatSampleValue(v) + " @" + strconv.FormatInt(*ts, 10)
}

// formatSampleValue writes every NaN alike, and -0 as 0: the text formats
// keep neither a NaN's payload nor the sign of a zero (expfmt writes -0 as
// 0), protobuf keeps both.
func formatSampleValue(v float64) string {
	switch {
	case v == 0:
		return "0"
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// parseExposition parses a scrape by its Content-Type: text and protobuf
// with expfmt (text validating names by the escaping negotiated), then
// storetest.CheckFamilies; OpenMetrics with parseOpenMetrics, since expfmt
// has no OpenMetrics parser.
func parseExposition(body []byte, contentType string, utf8Names bool) (*exposed, error) {
	format := expfmt.Format(contentType)
	validation := model.LegacyValidation
	if utf8Names {
		validation = model.UTF8Validation
	}
	var families map[string]*dto.MetricFamily
	switch format.FormatType() {
	case expfmt.TypeOpenMetrics:
		return parseOpenMetrics(body, validation)
	case expfmt.TypeTextPlain:
		p := expfmt.NewTextParser(validation)
		var err error
		if families, err = p.TextToMetricFamilies(bytes.NewReader(body)); err != nil {
			return nil, err
		}
	case expfmt.TypeProtoDelim:
		var err error
		if families, err = decodeFamilies(expfmt.NewDecoder(bytes.NewReader(body), format)); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("unexpected Content-Type %q", contentType)
	}
	if err := storetest.CheckFamilies(families); err != nil {
		return nil, err
	}
	return flattenFamilies(families, format.FormatType() == expfmt.TypeProtoDelim)
}

// flattenFamilies writes families as the text format's samples. A protobuf
// histogram's +Inf bucket is implicit (its count), and a native histogram
// has no classic buckets: the text formats write its count as the +Inf
// bucket.
func flattenFamilies(families map[string]*dto.MetricFamily, protobuf bool) (*exposed, error) {
	e := newExposed()
	for name, mf := range families {
		if len(mf.GetMetric()) == 0 {
			continue
		}
		if err := e.setType(name, strings.ToLower(mf.GetType().String())); err != nil {
			return nil, err
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			ts := m.TimestampMs
			var err error
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				err = e.add(name, labels, m.GetCounter().GetValue(), ts)
				e.addCreated(name, labels, m.GetCounter().GetCreatedTimestamp().GetSeconds(), m.GetCounter().GetCreatedTimestamp().GetNanos(), m.GetCounter().GetCreatedTimestamp() != nil)
			case dto.MetricType_GAUGE:
				err = e.add(name, labels, m.GetGauge().GetValue(), ts)
			case dto.MetricType_UNTYPED:
				err = e.add(name, labels, m.GetUntyped().GetValue(), ts)
			case dto.MetricType_SUMMARY:
				s := m.GetSummary()
				for _, q := range s.GetQuantile() {
					err = errors.Join(err, e.add(name, withLabel(labels, "quantile", formatSampleValue(q.GetQuantile())), q.GetValue(), ts))
				}
				err = errors.Join(err,
					e.add(name+"_sum", labels, s.GetSampleSum(), ts),
					e.add(name+"_count", labels, float64(s.GetSampleCount()), ts))
				e.addCreated(name, labels, s.GetCreatedTimestamp().GetSeconds(), s.GetCreatedTimestamp().GetNanos(), s.GetCreatedTimestamp() != nil)
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				count := float64(h.GetSampleCount())
				if h.SampleCountFloat != nil {
					count = h.GetSampleCountFloat()
				}
				inf := false
				for _, b := range h.GetBucket() {
					c := float64(b.GetCumulativeCount())
					if b.CumulativeCountFloat != nil {
						c = b.GetCumulativeCountFloat()
					}
					inf = inf || math.IsInf(b.GetUpperBound(), 1)
					err = errors.Join(err, e.add(name+"_bucket", withLabel(labels, "le", formatSampleValue(b.GetUpperBound())), c, ts))
				}
				if protobuf && !inf {
					err = errors.Join(err, e.add(name+"_bucket", withLabel(labels, "le", "+Inf"), count, ts))
				}
				err = errors.Join(err,
					e.add(name+"_sum", labels, h.GetSampleSum(), ts),
					e.add(name+"_count", labels, count, ts))
				e.addCreated(name, labels, h.GetCreatedTimestamp().GetSeconds(), h.GetCreatedTimestamp().GetNanos(), h.GetCreatedTimestamp() != nil)
				if h.Schema != nil {
					e.natives[sampleKey(name, labels)] = exposedNative{name: name, labels: labels, native: nativeFromDTO(h)}
				}
			default:
				err = fmt.Errorf("family %q has type %s", name, mf.GetType())
			}
			if err != nil {
				return nil, err
			}
		}
	}
	return e, nil
}

func (e *exposed) addCreated(family string, labels map[string]string, seconds int64, nanos int32, ok bool) {
	if ok {
		e.created[sampleKey(family, labels)] = exposedSample{name: family, labels: labels, value: formatSampleValue(float64(seconds*1e9+int64(nanos)) / 1e9)}
	}
}

func nativeFromDTO(h *dto.Histogram) nativeHistogram {
	n := nativeHistogram{
		schema:        h.GetSchema(),
		zeroThreshold: h.GetZeroThreshold(),
		zeroCount:     float64(h.GetZeroCount()),
		positive:      spansToBuckets(h.GetPositiveSpan(), h.GetPositiveDelta(), h.GetPositiveCount()),
		negative:      spansToBuckets(h.GetNegativeSpan(), h.GetNegativeDelta(), h.GetNegativeCount()),
	}
	if h.ZeroCountFloat != nil {
		n.zeroCount = h.GetZeroCountFloat()
	}
	return n
}

// spansToBuckets reads spans with their integer deltas (or float counts)
// into counts by bucket index, leaving out empty buckets.
func spansToBuckets(spans []*dto.BucketSpan, deltas []int64, counts []float64) map[int64]float64 {
	out := map[int64]float64{}
	var idx, running int64
	k := 0
	for i, s := range spans {
		if i == 0 {
			idx = int64(s.GetOffset())
		} else {
			idx += int64(s.GetOffset())
		}
		for range s.GetLength() {
			var c float64
			switch {
			case k < len(deltas):
				running += deltas[k]
				c = float64(running)
			case k < len(counts):
				c = counts[k]
			}
			if c != 0 {
				out[idx] = c
			}
			idx++
			k++
		}
	}
	return out
}

// parseOpenMetrics parses an OpenMetrics 1.0 text scrape into the text
// format's samples, checking what its grammar requires of this exposition:
// a final "# EOF", HELP and TYPE lines naming the family whose samples
// follow, each sample's name being its family's name or one of the
// suffixes of its type, label names and values well formed, values and
// timestamps as floats. A counter family F is named F_total as in the text
// format; _created samples go to created, exemplars are left out;
// timestamps are seconds and become milliseconds.
func parseOpenMetrics(body []byte, validation model.ValidationScheme) (*exposed, error) {
	text := string(body)
	if !strings.HasSuffix(text, "# EOF\n") {
		return nil, errors.New("openmetrics: does not end with # EOF")
	}
	text = strings.TrimSuffix(text, "# EOF\n")
	if text != "" && !strings.HasSuffix(text, "\n") {
		return nil, errors.New("openmetrics: # EOF is not a line of its own")
	}
	lines := strings.Split(text, "\n")
	lines = lines[:len(lines)-1] // after the last newline
	e := newExposed()
	var family, typ string
	seen := map[string]bool{}
	for i, line := range lines {
		fail := func(format string, args ...any) error {
			return fmt.Errorf("openmetrics line %d %q: %s", i+1, line, fmt.Sprintf(format, args...))
		}
		if rest, ok := strings.CutPrefix(line, "# "); ok {
			keyword, rest, _ := strings.Cut(rest, " ")
			name, rest, err := omName(rest)
			if err != nil {
				return nil, fail("%v", err)
			}
			if !validation.IsValidMetricName(name) {
				return nil, fail("invalid family name")
			}
			switch keyword {
			case "HELP":
				if name != family && seen[name] {
					return nil, fail("family written twice")
				}
				family, typ = name, ""
				seen[name] = true
			case "TYPE":
				if family != name && seen[name] {
					return nil, fail("family written twice")
				}
				family, typ = name, strings.TrimPrefix(rest, " ")
				seen[name] = true
				switch typ {
				case "counter", "gauge", "histogram", "summary", "unknown":
				default:
					return nil, fail("type %q", typ)
				}
			default:
				return nil, fail("unexpected comment")
			}
			continue
		}
		if typ == "" {
			return nil, fail("sample before its family's TYPE")
		}
		name, labels, rest, err := omSample(line, validation)
		if err != nil {
			return nil, fail("%v", err)
		}
		if j := strings.Index(rest, " # "); j >= 0 {
			rest = rest[:j] // an exemplar
		}
		fields := strings.Fields(rest)
		if len(fields) < 1 || len(fields) > 2 || !strings.HasPrefix(rest, " ") {
			return nil, fail("value and timestamp")
		}
		value, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return nil, fail("value: %v", err)
		}
		var ts *int64
		if len(fields) == 2 {
			secs, err := strconv.ParseFloat(fields[1], 64)
			if err != nil {
				return nil, fail("timestamp: %v", err)
			}
			ms := int64(math.Round(secs * 1000))
			ts = &ms
		}
		suffix, ok := strings.CutPrefix(name, family)
		if !ok {
			return nil, fail("sample of another family than %q", family)
		}
		textFamily := family
		switch {
		case typ == "counter" && suffix == "_total":
			textFamily = family + "_total"
		case (typ == "counter" || typ == "histogram" || typ == "summary" || typ == "unknown") && suffix == "_created":
			// A counter without _total is typed unknown, and keeps its
			// _created sample, as expfmt writes it.
			if typ == "counter" {
				textFamily = family + "_total"
			}
			e.created[sampleKey(textFamily, labels)] = exposedSample{name: textFamily, labels: labels, value: formatSampleValue(value)}
			continue
		case typ == "histogram" && (suffix == "_bucket" || suffix == "_sum" || suffix == "_count"):
		case typ == "summary" && (suffix == "" || suffix == "_sum" || suffix == "_count"):
		case (typ == "gauge" || typ == "unknown") && suffix == "":
		default:
			return nil, fail("suffix %q in a %s family", suffix, typ)
		}
		// Bounds and quantiles are compared as numbers: the formats write
		// them as strings (text, OpenMetrics) or floats (protobuf).
		bound := ""
		switch {
		case typ == "histogram" && suffix == "_bucket":
			bound = "le"
		case typ == "summary" && suffix == "":
			bound = "quantile"
		}
		if bound != "" {
			f, err := strconv.ParseFloat(labels[bound], 64)
			if err != nil {
				return nil, fail("%s=%q", bound, labels[bound])
			}
			labels[bound] = formatSampleValue(f)
		}
		if err := e.setType(textFamily, typ); err != nil {
			return nil, fail("%v", err)
		}
		if err := e.add(name, labels, value, ts); err != nil {
			return nil, fail("%v", err)
		}
	}
	return e, nil
}

// omToken reads a quoted string, or a bare token up to one of stops.
func omToken(s, stops string) (token, rest string, quoted bool, err error) {
	if strings.HasPrefix(s, `"`) {
		token, rest, err = omQuoted(s)
		return token, rest, true, err
	}
	end := strings.IndexAny(s, stops)
	if end < 0 {
		end = len(s)
	}
	if end == 0 {
		return "", "", false, errors.New("no name")
	}
	return s[:end], s[end:], false, nil
}

// omName reads the name of a HELP or TYPE line.
func omName(s string) (name, rest string, err error) {
	name, rest, _, err = omToken(s, " ")
	return name, rest, err
}

// omQuoted reads a quoted string with OpenMetrics' escapes (\\, \", \n).
func omQuoted(s string) (value, rest string, err error) {
	if !strings.HasPrefix(s, `"`) {
		return "", "", errors.New("no opening quote")
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			if !utf8.ValidString(b.String()) {
				return "", "", errors.New("invalid UTF-8")
			}
			return b.String(), s[i+1:], nil
		case '\n':
			return "", "", errors.New("newline in a quoted string")
		case '\\':
			i++
			if i == len(s) {
				return "", "", errors.New("escape at the end")
			}
			switch s[i] {
			case '\\', '"':
				b.WriteByte(s[i])
			case 'n':
				b.WriteByte('\n')
			default:
				return "", "", fmt.Errorf("escape \\%c", s[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", "", errors.New("no closing quote")
}

// omSample reads a sample's name and label set: the name bare before the
// braces or, when it is not a legacy name, quoted first inside them; label
// names bare when they are legacy names, else quoted.
func omSample(line string, validation model.ValidationScheme) (name string, labels map[string]string, rest string, err error) {
	labels = map[string]string{}
	rest = line
	if !strings.HasPrefix(rest, "{") {
		if name, rest, _, err = omToken(rest, " {"); err != nil {
			return "", nil, "", err
		}
		if !model.LegacyValidation.IsValidMetricName(name) {
			return "", nil, "", fmt.Errorf("bare name %q", name)
		}
	}
	if !strings.HasPrefix(rest, "{") {
		return name, labels, rest, nil
	}
	rest = rest[1:]
	for i := 0; !strings.HasPrefix(rest, "}"); i++ {
		if i > 0 {
			if !strings.HasPrefix(rest, ",") {
				return "", nil, "", errors.New("no comma between labels")
			}
			rest = rest[1:]
		}
		label, after, quoted, err := omToken(rest, "=,}")
		if err != nil {
			return "", nil, "", err
		}
		rest = after
		if i == 0 && name == "" && quoted && !strings.HasPrefix(rest, "=") {
			name = label // the quoted metric name
			continue
		}
		if !quoted && !model.LegacyValidation.IsValidLabelName(label) || !validation.IsValidLabelName(label) {
			return "", nil, "", fmt.Errorf("invalid label name %q", label)
		}
		if !strings.HasPrefix(rest, "=") {
			return "", nil, "", fmt.Errorf("label %q without a value", label)
		}
		var value string
		if value, rest, err = omQuoted(rest[1:]); err != nil {
			return "", nil, "", err
		}
		if _, dup := labels[label]; dup {
			return "", nil, "", fmt.Errorf("label %q twice", label)
		}
		labels[label] = value
	}
	if name == "" || !validation.IsValidMetricName(name) {
		return "", nil, "", fmt.Errorf("invalid metric name %q", name)
	}
	return name, labels, rest[1:], nil
}
