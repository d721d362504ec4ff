package conformance

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// label is one label pair of a sample.
type label struct{ name, value string }

// sample is one exposed value, reduced to what the comparison looks at.
type sample struct {
	family string // family name as declared by # TYPE
	typ    string // family type, lower case
	name   string // sample name: family, family_bucket, family_total, ...
	labels []label
	value  float64
	// ts is the sample timestamp as written (ms in text, seconds in
	// OpenMetrics); empty when absent.
	ts string
	// exemplar is the OpenMetrics exemplar as written after '#', or a
	// protobuf scrape's, normalised; the text format has none.
	exemplar string
	// created is the created timestamp a protobuf scrape carries for the
	// sample's series; empty when absent (the text formats have no place
	// for it; OpenMetrics writes _created samples instead).
	created string
	// native is a native histogram as a protobuf scrape carries it: sum,
	// schema, zero bucket and the spans and counts of each side; empty for
	// every other sample.
	native string
}

// labelValue returns the value of the named label.
func (s sample) labelValue(name string) (string, bool) {
	for _, l := range s.labels {
		if l.name == name {
			return l.value, true
		}
	}
	return "", false
}

// key renders the sample as one comparable line. Floats use 'g' -1, so NaN
// renders as "NaN" on both sides and compares equal.
func (s sample) key(withTimestamps bool) string {
	var b strings.Builder
	b.WriteString(s.family)
	b.WriteString(" | ")
	b.WriteString(s.typ)
	b.WriteString(" | ")
	b.WriteString(s.name)
	b.WriteString(" | ")
	b.WriteString(renderLabels(s.labels))
	b.WriteString(" | ")
	b.WriteString(formatFloat(s.value))
	if withTimestamps {
		b.WriteString(" | ts=")
		b.WriteString(s.ts)
	}
	if s.created != "" {
		b.WriteString(" | created=")
		b.WriteString(s.created)
	}
	if s.native != "" {
		b.WriteString(" | native ")
		b.WriteString(s.native)
	}
	if s.exemplar != "" {
		b.WriteString(" | exemplar ")
		b.WriteString(s.exemplar)
	}
	return b.String()
}

func renderLabels(ls []label) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = strconv.Quote(l.name) + "=" + strconv.Quote(l.value)
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// sortLabels sorts labels. It keeps those with an empty value: Prometheus
// drops them when it ingests a scrape, so `l=""` and no `l` are one series
// there, but which exporter writes them is compared (the difference
// emptyLabelsLeftOut).
func sortLabels(ls []label) []label {
	sort.Slice(ls, func(i, j int) bool {
		if ls[i].name != ls[j].name {
			return ls[i].name < ls[j].name
		}
		return ls[i].value < ls[j].value
	})
	return ls
}

// exposition is one scrape, normalised.
type exposition struct {
	samples []sample
	help    map[string]string // family -> HELP text
	units   map[string]string // family -> UNIT (OpenMetrics only)
	raw     string
	// contentType is the scrape's, as mediaTypeAndVersion renders it.
	contentType string
}

func newExposition(raw string) *exposition {
	return &exposition{help: map[string]string{}, units: map[string]string{}, raw: raw}
}

// filter keeps the samples for which keep returns true.
func (e *exposition) filter(keep func(sample) bool) {
	e.samples = slices.DeleteFunc(e.samples, func(s sample) bool { return !keep(s) })
}

// families returns family name -> type.
func (e *exposition) families() map[string]string {
	out := map[string]string{}
	for _, s := range e.samples {
		out[s.family] = s.typ
	}
	return out
}

// parseText parses the Prometheus text format with the same parser a
// Prometheus client library offers; UTF-8 validation accepts quoted names.
// That parser takes a bucket le="NaN" or a quantile="NaN" for no bucket or
// quantile and drops its line, where a Prometheus server stores the sample:
// those lines are parsed here, and every sample line must give a sample.
func parseText(raw string) (*exposition, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(raw))
	if err != nil {
		return nil, err
	}
	e := newExposition(raw)
	for _, name := range slices.Sorted(maps.Keys(fams)) {
		if err := e.addFamily(fams[name], false); err != nil {
			return nil, err
		}
	}
	lines := 0
	family, typ := "", ""
	for line := range strings.Lines(raw) {
		line = strings.TrimSpace(line)
		if fields := strings.Fields(line); len(fields) == 4 && fields[0] == "#" && fields[1] == "TYPE" {
			family, typ = fields[2], fields[3]
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		lines++
		if strings.Contains(line, model.BucketLabel+`="NaN"`) || strings.Contains(line, model.QuantileLabel+`="NaN"`) {
			s, err := parseOpenMetricsSample(line)
			if err != nil {
				return nil, fmt.Errorf("a sample with a NaN bound: %w", err)
			}
			s.family, s.typ = family, typ
			e.samples = append(e.samples, s)
		}
	}
	if lines != len(e.samples) {
		return nil, fmt.Errorf("%d sample lines gave %d samples", lines, len(e.samples))
	}
	return e, nil
}

// parseProtobuf parses a delimited protobuf scrape with expfmt's decoder,
// which checks names by the scheme of format (the escaping the scrape asked
// for) and label values for UTF-8. A family name written twice is an error,
// as it is in the text format. The exposition's raw text is the families in
// protobuf text format, for failure messages.
func parseProtobuf(format expfmt.Format) func(string) (*exposition, error) {
	return func(raw string) (*exposition, error) {
		dec := expfmt.NewDecoder(strings.NewReader(raw), format)
		fams := map[string]*dto.MetricFamily{}
		var text strings.Builder
		for {
			mf := &dto.MetricFamily{}
			err := dec.Decode(mf)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("protobuf family %d: %w", len(fams)+1, err)
			}
			if _, ok := fams[mf.GetName()]; ok {
				return nil, fmt.Errorf("protobuf family %q written twice", mf.GetName())
			}
			fams[mf.GetName()] = mf
			writeFamilyText(&text, mf)
		}
		e := newExposition(text.String())
		for _, name := range slices.Sorted(maps.Keys(fams)) {
			if err := e.addFamily(fams[name], true); err != nil {
				return nil, err
			}
		}
		return e, nil
	}
}

// writeFamilyText writes a protobuf family in protobuf text format, its
// metadata on one line and each metric on a line of its own.
func writeFamilyText(b *strings.Builder, mf *dto.MetricFamily) {
	metrics := mf.Metric
	mf.Metric = nil
	b.WriteString(prototext.MarshalOptions{}.Format(mf))
	b.WriteString("\n")
	mf.Metric = metrics
	for _, m := range metrics {
		b.WriteString("  ")
		b.WriteString(prototext.MarshalOptions{}.Format(m))
		b.WriteString("\n")
	}
}

// addFamily appends the samples of a decoded family: one per sample a
// Prometheus server stores from a classic exposition, and one per native
// histogram, named as the family, whose value is its count. What only a
// protobuf scrape carries (created timestamps, native histograms,
// exemplars) is nil in families the text parser made, and compared as
// written when present.
func (e *exposition) addFamily(mf *dto.MetricFamily, protobuf bool) error {
	name := mf.GetName()
	if mf.Help != nil {
		e.help[name] = mf.GetHelp()
	}
	if mf.GetUnit() != "" {
		e.units[name] = mf.GetUnit()
	}
	typ := strings.ToLower(mf.GetType().String())
	for _, m := range mf.GetMetric() {
		base := make([]label, 0, len(m.GetLabel())+1)
		for _, lp := range m.GetLabel() {
			base = append(base, label{lp.GetName(), lp.GetValue()})
		}
		ts := ""
		if m.TimestampMs != nil {
			ts = strconv.FormatInt(m.GetTimestampMs(), 10)
		}
		created := ""
		add := func(sampleName string, extra []label, v float64, exemplar *dto.Exemplar) *sample {
			ls := append(slices.Clone(base), extra...)
			e.samples = append(e.samples, sample{
				family: name, typ: typ, name: sampleName,
				labels: sortLabels(ls), value: v, ts: ts,
				created: created, exemplar: renderExemplar(exemplar),
			})
			return &e.samples[len(e.samples)-1]
		}
		switch mf.GetType() {
		case dto.MetricType_COUNTER:
			created = renderTimestamp(m.GetCounter().GetCreatedTimestamp())
			add(name, nil, m.GetCounter().GetValue(), m.GetCounter().GetExemplar())
		case dto.MetricType_GAUGE:
			add(name, nil, m.GetGauge().GetValue(), nil)
		case dto.MetricType_UNTYPED:
			add(name, nil, m.GetUntyped().GetValue(), nil)
		case dto.MetricType_SUMMARY:
			s := m.GetSummary()
			created = renderTimestamp(s.GetCreatedTimestamp())
			for _, q := range s.GetQuantile() {
				add(name, []label{{model.QuantileLabel, formatFloat(q.GetQuantile())}}, q.GetValue(), nil)
			}
			add(name+"_sum", nil, s.GetSampleSum(), nil)
			add(name+"_count", nil, float64(s.GetSampleCount()), nil)
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			h := m.GetHistogram()
			created = renderTimestamp(h.GetCreatedTimestamp())
			c := float64(h.GetSampleCount())
			if h.SampleCountFloat != nil {
				c = h.GetSampleCountFloat()
			}
			native := renderNative(h)
			if native != "" {
				s := add(name, nil, c, nil)
				s.native = native
				var exemplars []string
				for _, ex := range h.GetExemplars() {
					exemplars = append(exemplars, renderExemplar(ex))
				}
				s.exemplar = strings.Join(exemplars, "; ")
				if len(h.GetBucket()) == 0 {
					// Only the native histogram: a Prometheus server stores
					// no _bucket, _sum or _count series for it.
					continue
				}
			}
			buckets := h.GetBucket()
			for _, b := range buckets {
				bc := float64(b.GetCumulativeCount())
				if b.CumulativeCountFloat != nil {
					bc = b.GetCumulativeCountFloat()
				}
				add(name+"_bucket", []label{{model.BucketLabel, formatFloat(b.GetUpperBound())}}, bc, b.GetExemplar())
			}
			if protobuf && !slices.ContainsFunc(buckets, func(b *dto.Bucket) bool { return math.IsInf(b.GetUpperBound(), 1) }) {
				// The +Inf bucket is implicit in protobuf: a Prometheus
				// server stores it with the count, and expfmt's text
				// writer writes it so when no bucket has that bound.
				add(name+"_bucket", []label{{model.BucketLabel, "+Inf"}}, c, nil)
			}
			add(name+"_sum", nil, h.GetSampleSum(), nil)
			add(name+"_count", nil, c, nil)
		default:
			return fmt.Errorf("family %q: unexpected type %s", name, mf.GetType())
		}
	}
	return nil
}

// renderTimestamp renders a protobuf timestamp to the nanosecond; empty when
// absent.
func renderTimestamp(ts *timestamppb.Timestamp) string {
	if ts == nil {
		return ""
	}
	return ts.AsTime().UTC().Format(time.RFC3339Nano)
}

// renderExemplar renders a protobuf exemplar as the OpenMetrics parser
// renders one: sorted labels, value, timestamp.
func renderExemplar(ex *dto.Exemplar) string {
	if ex == nil {
		return ""
	}
	ls := make([]label, 0, len(ex.GetLabel()))
	for _, lp := range ex.GetLabel() {
		ls = append(ls, label{lp.GetName(), lp.GetValue()})
	}
	out := renderLabels(sortLabels(ls)) + " " + formatFloat(ex.GetValue())
	if ex.GetTimestamp() != nil {
		out += " " + renderTimestamp(ex.GetTimestamp())
	}
	return out
}

// renderNative renders the native histogram fields of h as written: the
// sum, schema, zero threshold and count, and each side's spans
// (offset:length) with its absolute bucket counts (deltas added up). It
// returns "" for a classic histogram, which sets none of them.
func renderNative(h *dto.Histogram) string {
	if h.Schema == nil && h.ZeroThreshold == nil && h.ZeroCount == nil && h.ZeroCountFloat == nil &&
		len(h.GetPositiveSpan())+len(h.GetNegativeSpan()) == 0 {
		return ""
	}
	zeroCount := formatFloat(float64(h.GetZeroCount()))
	if h.ZeroCountFloat != nil {
		zeroCount = formatFloat(h.GetZeroCountFloat())
	}
	side := func(spans []*dto.BucketSpan, deltas []int64, counts []float64) string {
		parts := make([]string, 0, len(spans))
		for _, sp := range spans {
			parts = append(parts, fmt.Sprintf("%d:%d", sp.GetOffset(), sp.GetLength()))
		}
		var abs []string
		var c int64
		for _, d := range deltas {
			c += d
			abs = append(abs, strconv.FormatInt(c, 10))
		}
		for _, f := range counts {
			abs = append(abs, formatFloat(f))
		}
		return "[" + strings.Join(parts, " ") + "] {" + strings.Join(abs, " ") + "}"
	}
	return fmt.Sprintf("sum=%s schema=%d zero_threshold=%s zero_count=%s negative=%s positive=%s",
		formatFloat(h.GetSampleSum()), h.GetSchema(), formatFloat(h.GetZeroThreshold()), zeroCount,
		side(h.GetNegativeSpan(), h.GetNegativeDelta(), h.GetNegativeCount()),
		side(h.GetPositiveSpan(), h.GetPositiveDelta(), h.GetPositiveCount()))
}

// openMetricsSuffixes lists the sample name suffixes each OpenMetrics family
// type allows.
var openMetricsSuffixes = map[string][]string{
	"counter":        {"_total", "_created"},
	"gauge":          {""},
	"unknown":        {""},
	"info":           {"_info"},
	"stateset":       {""},
	"histogram":      {"_bucket", "_sum", "_count", "_created"},
	"gaugehistogram": {"_bucket", "_gsum", "_gcount"},
	"summary":        {"", "_sum", "_count", "_created"},
}

// parseOpenMetrics is a small line-based parser of OpenMetrics 1.0 text: the
// text-format parser of prometheus/common rejects exemplars and counters'
// _total samples under a family declared without the suffix. It checks what
// makes an exposition unusable (missing # EOF, samples outside their family,
// duplicate label names, bad values) and keeps exemplars for comparison.
func parseOpenMetrics(raw string) (*exposition, error) {
	e := newExposition(raw)
	if !strings.HasSuffix(raw, "# EOF\n") {
		return nil, errors.New("openmetrics: exposition does not end with # EOF")
	}
	lines := strings.Split(strings.TrimSuffix(raw, "# EOF\n"), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	family, typ := "", ""
	for i, line := range lines {
		fail := func(format string, args ...any) error {
			return fmt.Errorf("openmetrics line %d %q: %s", i+1, line, fmt.Sprintf(format, args...))
		}
		if strings.HasPrefix(line, "#") {
			fields := strings.SplitN(line, " ", 4)
			if len(fields) < 3 {
				return nil, fail("malformed metadata")
			}
			text := ""
			if len(fields) == 4 {
				text = fields[3]
			}
			switch fields[1] {
			case "TYPE":
				if _, ok := openMetricsSuffixes[text]; !ok {
					return nil, fail("unknown type %q", text)
				}
				family, typ = fields[2], text
			case "HELP":
				e.help[fields[2]] = unescapeHelp(text)
			case "UNIT":
				e.units[fields[2]] = text
			default:
				return nil, fail("unknown metadata keyword")
			}
			continue
		}
		s, err := parseOpenMetricsSample(line)
		if err != nil {
			return nil, fail("%v", err)
		}
		if typ == "" || !strings.HasPrefix(s.name, family) ||
			!slices.Contains(openMetricsSuffixes[typ], strings.TrimPrefix(s.name, family)) {
			return nil, fail("sample outside its family %q (%s)", family, typ)
		}
		s.family, s.typ = family, typ
		e.samples = append(e.samples, s)
	}
	return e, nil
}

func unescapeHelp(s string) string {
	return strings.NewReplacer(`\\`, `\`, `\n`, "\n", `\"`, `"`).Replace(s)
}

// parseOpenMetricsSample parses `name{l="v",...} value [ts] [# {l="v"} value [ts]]`.
func parseOpenMetricsSample(line string) (sample, error) {
	var s sample
	end := strings.IndexAny(line, "{ ")
	if end <= 0 {
		return s, errors.New("no metric name")
	}
	s.name = line[:end]
	if !model.LegacyValidation.IsValidMetricName(s.name) {
		return s, fmt.Errorf("invalid metric name %q", s.name)
	}
	rest := line[end:]
	if strings.HasPrefix(rest, "{") {
		ls, r, err := parseLabelSet(rest)
		if err != nil {
			return s, err
		}
		s.labels, rest = ls, r
	}
	if !strings.HasPrefix(rest, " ") {
		return s, errors.New("expected a space before the value")
	}
	rest = rest[1:]
	exemplar := ""
	if i := strings.Index(rest, " # "); i >= 0 {
		rest, exemplar = rest[:i], rest[i+3:]
	}
	fields := strings.Split(rest, " ")
	if len(fields) > 2 {
		return s, errors.New("too many fields")
	}
	v, err := parseValue(fields[0])
	if err != nil {
		return s, err
	}
	s.value = v
	if len(fields) == 2 {
		if _, err := strconv.ParseFloat(fields[1], 64); err != nil {
			return s, fmt.Errorf("bad timestamp: %w", err)
		}
		s.ts = fields[1]
	}
	if exemplar != "" {
		ls, r, err := parseLabelSet(exemplar)
		if err != nil {
			return s, fmt.Errorf("exemplar: %w", err)
		}
		ef := strings.Fields(r)
		if len(ef) < 1 || len(ef) > 2 {
			return s, errors.New("exemplar: expected value [timestamp]")
		}
		ev, err := parseValue(ef[0])
		if err != nil {
			return s, fmt.Errorf("exemplar: %w", err)
		}
		s.exemplar = renderLabels(ls) + " " + formatFloat(ev)
		if len(ef) == 2 {
			s.exemplar += " " + ef[1]
		}
	}
	return s, nil
}

func parseValue(v string) (float64, error) {
	switch v {
	case "+Inf", "Inf":
		return math.Inf(1), nil
	case "-Inf":
		return math.Inf(-1), nil
	case "NaN":
		return math.NaN(), nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0, fmt.Errorf("bad value %q", v)
	}
	return f, nil
}

// parseLabelSet parses `{name="value",...}` and returns the sorted labels and
// what follows the closing brace.
func parseLabelSet(in string) ([]label, string, error) {
	if !strings.HasPrefix(in, "{") {
		return nil, in, errors.New("expected '{'")
	}
	in = in[1:]
	var ls []label
	seen := map[string]bool{}
	for {
		if strings.HasPrefix(in, "}") {
			return sortLabels(ls), in[1:], nil
		}
		eq := strings.Index(in, "=")
		if eq <= 0 {
			return nil, in, errors.New("expected label name")
		}
		name := in[:eq]
		if !model.LegacyValidation.IsValidLabelName(name) {
			return nil, in, fmt.Errorf("invalid label name %q", name)
		}
		if seen[name] {
			return nil, in, fmt.Errorf("duplicate label name %q", name)
		}
		seen[name] = true
		in = in[eq+1:]
		if !strings.HasPrefix(in, `"`) {
			return nil, in, errors.New("expected '\"'")
		}
		var val strings.Builder
		i := 1
		for ; i < len(in) && in[i] != '"'; i++ {
			if in[i] == '\\' && i+1 < len(in) {
				i++
				switch in[i] {
				case 'n':
					val.WriteByte('\n')
				case '\\', '"':
					val.WriteByte(in[i])
				default:
					return nil, in, fmt.Errorf("bad escape \\%c", in[i])
				}
				continue
			}
			val.WriteByte(in[i])
		}
		if i >= len(in) {
			return nil, in, errors.New("unterminated label value")
		}
		ls = append(ls, label{name, val.String()})
		in = in[i+1:]
		in = strings.TrimPrefix(in, ",")
	}
}

// diff compares the expositions of a reference and of the exporter under
// test and returns a readable report, empty when they are equal. HELP and
// UNIT differences are reported on their own.
func diff(ref, got *exposition, refName, gotName string, withTimestamps bool) string {
	count := func(e *exposition) map[string]int {
		m := map[string]int{}
		for _, s := range e.samples {
			m[s.key(withTimestamps)]++
		}
		return m
	}
	c, o := count(ref), count(got)
	var onlyC, onlyO []string
	for k, n := range c {
		for range n - o[k] {
			onlyC = append(onlyC, k)
		}
	}
	for k, n := range o {
		for range n - c[k] {
			onlyO = append(onlyO, k)
		}
	}
	sort.Strings(onlyC)
	sort.Strings(onlyO)

	var b strings.Builder
	for _, k := range onlyC {
		fmt.Fprintf(&b, "  only in %-9s %s\n", refName+":", k)
	}
	for _, k := range onlyO {
		fmt.Fprintf(&b, "  only in %-9s %s\n", gotName+":", k)
	}
	// Metadata is compared for families present on both sides; a missing
	// family already shows in the samples.
	cf, of := ref.families(), got.families()
	for _, f := range slices.Sorted(maps.Keys(cf)) {
		if _, ok := of[f]; !ok {
			continue
		}
		ch, cok := ref.help[f]
		oh, ook := got.help[f]
		if ch != oh || cok != ook {
			fmt.Fprintf(&b, "  HELP of %s differs: %s %s, %s %s\n", f, refName, quoteIf(ch, cok), gotName, quoteIf(oh, ook))
		}
		cu, cok := ref.units[f]
		ou, ook := got.units[f]
		if cu != ou || cok != ook {
			fmt.Fprintf(&b, "  UNIT of %s differs: %s %s, %s %s\n", f, refName, quoteIf(cu, cok), gotName, quoteIf(ou, ook))
		}
	}
	return b.String()
}

func quoteIf(s string, ok bool) string {
	if !ok {
		return "(none)"
	}
	return strconv.Quote(s)
}
