package exposition // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/exposition"

import (
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/prommodel"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/promtext"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
)

// WriteReference writes every family with expfmt's encoder for format, from
// client_model families built here: the reference the writers are tested
// against (exported for the package's external tests). It is test code: no
// scrape takes this walk.
//
// As the reference, it keeps its own copy of the rules the direct writers
// take from prommodel (Created, CounterExemplar, BucketExemplars):
// were it to share them, a wrong rule would pass the equivalence tests.
// Families are encoded one at a time so that memory stays bounded by the
// largest family.
func WriteReference(w io.Writer, format expfmt.Format, st *store.Store, opts Options, encOpts ...expfmt.EncoderOption) error {
	enc := expfmt.NewEncoder(w, format, encOpts...)
	labels := parseLabels
	if format.ToEscapingScheme() == model.UnderscoreEscaping {
		labels = underscoredLabels
	}
	if infos := st.TargetInfos(); len(infos) > 0 {
		mf := &dto.MetricFamily{Name: &opts.TargetInfoName, Help: ptr(targetInfoHelp), Type: dto.MetricType_GAUGE.Enum()}
		for _, ti := range infos {
			m := &dto.Metric{Label: labels(ti.Labels.Text()), Gauge: &dto.Gauge{Value: ptr(1.0)}}
			if opts.SendTimestamps && ti.Updated != 0 {
				m.TimestampMs = ptr(ti.Updated / 1e6)
			}
			mf.Metric = append(mf.Metric, m)
		}
		if err := enc.Encode(mf); err != nil {
			return err
		}
	}
	for _, f := range st.Families() {
		mf := familyDTO(f, opts, labels)
		if len(mf.Metric) == 0 {
			continue
		}
		if err := enc.Encode(mf); err != nil {
			return err
		}
	}
	if c, ok := enc.(expfmt.Closer); ok {
		return c.Close()
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

func familyDTO(f *store.Family, opts Options, labels func(string) []*dto.LabelPair) *dto.MetricFamily {
	mf := &dto.MetricFamily{Name: ptr(f.Name), Help: ptr(f.Help)}
	switch f.Kind {
	case prommodel.KindCounter:
		mf.Type = dto.MetricType_COUNTER.Enum()
	case prommodel.KindHistogram:
		mf.Type = dto.MetricType_HISTOGRAM.Enum()
	case prommodel.KindSummary:
		mf.Type = dto.MetricType_SUMMARY.Enum()
	default:
		mf.Type = dto.MetricType_GAUGE.Enum()
	}
	f.Range(func(s *store.Series) {
		shown := s.Shown(opts.Release)
		if shown == store.ShowNothing {
			return
		}
		m := &dto.Metric{Label: labels(s.Labels.Text())}
		if shown == store.ShowZero {
			if opts.SendTimestamps {
				m.TimestampMs = ptr(s.HeldTimestamp() / 1e6)
			}
			mf.Metric = append(mf.Metric, heldDTO(f.Kind, s, m))
			return
		}
		if opts.SendTimestamps && s.Timestamp != 0 {
			m.TimestampMs = ptr(s.Timestamp / 1e6)
		}
		var created *timestamppb.Timestamp
		if s.Start > 0 && s.Start >= int64(time.Second) {
			created = timestamppb.New(time.Unix(0, s.Start))
		}
		switch f.Kind {
		case prommodel.KindCounter:
			m.Counter = &dto.Counter{Value: ptr(s.Value), CreatedTimestamp: created}
			if n := len(s.Exemplars()); n > 0 {
				// A counter carries one exemplar: the latest, as client_golang keeps.
				m.Counter.Exemplar = exemplarDTO(s.Exemplars()[n-1])
			}
		case prommodel.KindGauge:
			m.Gauge = &dto.Gauge{Value: ptr(s.Value)}
		case prommodel.KindSummary:
			m.Summary = &dto.Summary{SampleCount: ptr(s.Count), SampleSum: ptr(s.Value), CreatedTimestamp: created}
			for _, q := range s.Quantiles() {
				m.Summary.Quantile = append(m.Summary.Quantile, &dto.Quantile{Quantile: ptr(q.Quantile), Value: ptr(q.Value)})
			}
		case prommodel.KindHistogram:
			m.Histogram = histogramDTO(s, created)
		}
		mf.Metric = append(mf.Metric, m)
	})
	return mf
}

// heldDTO fills m with the zero of a held run: a counter or histogram with
// no observations yet, in the layout of the stored one.
func heldDTO(kind prommodel.Kind, s *store.Series, m *dto.Metric) *dto.Metric {
	created := timestamppb.New(time.Unix(0, s.Start))
	if kind == prommodel.KindCounter {
		m.Counter = &dto.Counter{Value: ptr(0.0), CreatedTimestamp: created}
		return m
	}
	h := &dto.Histogram{SampleCount: ptr(uint64(0)), SampleSum: ptr(0.0), CreatedTimestamp: created}
	if n := s.Native(); n != nil {
		h.Schema, h.ZeroThreshold, h.ZeroCount = ptr(n.Schema), ptr(n.ZeroThreshold), ptr(uint64(0))
		h.PositiveSpan = []*dto.BucketSpan{{Offset: ptr(int32(0)), Length: ptr(uint32(0))}}
	} else if s.Histogram != nil {
		for _, b := range s.Histogram.Bounds.Values {
			h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: ptr(b), CumulativeCount: ptr(uint64(0))})
		}
	}
	m.Histogram = h
	return m
}

func histogramDTO(s *store.Series, created *timestamppb.Timestamp) *dto.Histogram {
	h := &dto.Histogram{SampleCount: ptr(s.Count), SampleSum: ptr(s.Value), CreatedTimestamp: created}
	if n := s.Native(); n != nil {
		h.Schema = ptr(n.Schema)
		h.ZeroThreshold = ptr(n.ZeroThreshold)
		h.ZeroCount = ptr(n.ZeroCount)
		h.PositiveSpan, h.PositiveDelta = spansAndDeltas(n.Positive)
		h.NegativeSpan, h.NegativeDelta = spansAndDeltas(n.Negative)
		for _, e := range s.Exemplars() {
			h.Exemplars = append(h.Exemplars, exemplarDTO(e))
		}
		if len(h.PositiveSpan) == 0 && len(h.NegativeSpan) == 0 {
			// An empty span list would read as a classic histogram; one
			// empty span marks it native, as client_golang does.
			h.PositiveSpan = []*dto.BucketSpan{{Offset: ptr(int32(0)), Length: ptr(uint32(0))}}
		}
		return h
	}
	if s.Histogram == nil {
		return h
	}
	bounds := s.Histogram.Bounds.Values
	for i, c := range s.Histogram.Cumulative {
		h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: ptr(bounds[i]), CumulativeCount: ptr(c)})
	}
	// Each exemplar goes to the first bucket whose bound is not below it; one
	// above every bound needs an explicit +Inf bucket, as client_golang adds.
	for _, e := range s.Exemplars() {
		i := sort.SearchFloat64s(bounds, e.Value)
		if i == len(bounds) && len(h.Bucket) == len(bounds) {
			h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: ptr(posInf), CumulativeCount: ptr(s.Count)})
		}
		h.Bucket[i].Exemplar = exemplarDTO(e)
	}
	return h
}

var posInf = math.Inf(1)

// spansAndDeltas turns dense counts into native-histogram spans and deltas,
// splitting spans at runs of empty buckets.
func spansAndDeltas(b store.Buckets) ([]*dto.BucketSpan, []int64) {
	var spans []*dto.BucketSpan
	var deltas []int64
	var prev int64
	next := b.Offset // the index the current span would continue at
	for i, c := range b.Counts {
		if c == 0 {
			continue
		}
		idx := b.Offset + int32(i)
		if len(spans) == 0 || idx != next {
			offset := idx
			if len(spans) > 0 {
				offset = idx - next
			}
			spans = append(spans, &dto.BucketSpan{Offset: ptr(offset), Length: ptr(uint32(0))})
		}
		*spans[len(spans)-1].Length++
		deltas = append(deltas, int64(c)-prev)
		prev = int64(c)
		next = idx + 1
	}
	return spans, deltas
}

func exemplarDTO(e store.Exemplar) *dto.Exemplar {
	ex := &dto.Exemplar{Value: ptr(e.Value)}
	if e.Labels.Names != nil {
		ex.Label = parseLabels(e.Labels.Text())
	}
	if e.Timestamp != 0 {
		ex.Timestamp = timestamppb.New(time.Unix(0, e.Timestamp))
	}
	return ex
}

// parseLabels splits a rendered label set back into pairs, undoing the
// text-format escaping of values and of names (escaped alike when UTF-8
// names are allowed, see convert). A malformed set ends the pairs early
// rather than failing the scrape.
func parseLabels(s string) []*dto.LabelPair {
	var pairs []*dto.LabelPair
	for len(s) > 0 {
		// A name ends at the first unescaped quote, which follows its '='.
		name, rest, ok := unescapeToQuote(s)
		name, hasEq := strings.CutSuffix(name, "=")
		if !ok || !hasEq {
			break
		}
		value, rest, ok := unescapeToQuote(rest)
		if !ok {
			break
		}
		pairs = append(pairs, &dto.LabelPair{Name: ptr(name), Value: ptr(value)})
		s = strings.TrimPrefix(rest, ",")
	}
	slices.SortFunc(pairs, func(a, b *dto.LabelPair) int { return strings.Compare(a.GetName(), b.GetName()) })
	return pairs
}

// underscoredLabels are the pairs of a stored set with names escaped for a
// scraper that takes underscores. expfmt would escape each label name by
// the rules of metric names: "a.b" and "a_b" would become two labels named
// a_b (which does not parse) and "a:b" would stay (not a valid label name).
// The rule every format applies (labelSets.pairsFor) escapes by the rules of
// label names and makes names that become equal one label, their values
// joined by promtext.Separator in name order. As the reference the writers
// are tested against, this is built from Prometheus's escaping
// (model.EscapeName, whose metric-name rules differ from label names' only
// in ':') and shares no code with the writers'.
func underscoredLabels(s string) []*dto.LabelPair {
	pairs := parseLabels(s) // sorted by name
	for _, p := range pairs {
		if model.LegacyValidation.IsValidLabelName(p.GetName()) {
			continue
		}
		name := strings.ReplaceAll(model.EscapeName(p.GetName(), model.UnderscoreEscaping), ":", "_")
		if name == model.MetricNameLabel {
			name = promtext.ExportedNameLabel
		}
		p.Name = &name
	}
	slices.SortStableFunc(pairs, func(a, b *dto.LabelPair) int { return strings.Compare(a.GetName(), b.GetName()) })
	merged := pairs[:0]
	for _, p := range pairs {
		if n := len(merged); n > 0 && merged[n-1].GetName() == p.GetName() {
			merged[n-1].Value = ptr(merged[n-1].GetValue() + string(promtext.Separator) + p.GetValue())
			continue
		}
		merged = append(merged, p)
	}
	return merged
}

// unescapeToQuote returns s up to its first unescaped double quote,
// unescaped, and what follows the quote; ok is false without such a quote.
func unescapeToQuote(s string) (text, rest string, ok bool) {
	end := strings.IndexAny(s, `"\`)
	if end >= 0 && s[end] == '"' {
		return s[:end], s[end+1:], true // nothing escaped: no copy
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			return b.String(), s[i+1:], true
		case '\\':
			if i++; i < len(s) && s[i] == 'n' {
				b.WriteByte('\n')
			} else if i < len(s) {
				b.WriteByte(s[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", "", false
}
