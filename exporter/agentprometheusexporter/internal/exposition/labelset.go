package exposition // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/exposition"

import (
	"slices"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/prometheus/common/model"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/promtext"
)

// pairReader reads the pairs of a rendered label set (store.Series.Labels)
// in order, without allocating: `a="x",b="y\"z"`. Names and values stay as
// rendered, escaped as text-format label values (names are escaped alike
// when UTF-8 names are allowed, see convert); unescape them with
// promtext.AppendUnescaped for formats that carry raw strings.
type pairReader struct{ rest string }

func readPairs(labels string) pairReader { return pairReader{rest: labels} }

// next returns the next pair; ok is false at the end or on a malformed set,
// which ends the pairs rather than the scrape.
func (r *pairReader) next() (name, value string, ok bool) {
	s := r.rest
	i := promtext.ClosingQuote(s, 0)
	if i < 1 || s[i-1] != '=' {
		r.rest = ""
		return "", "", false
	}
	j := promtext.ClosingQuote(s, i+1)
	if j < 0 {
		r.rest = ""
		return "", "", false
	}
	name, value = s[:i-1], s[i+1:j]
	r.rest = strings.TrimPrefix(s[j+1:], ",")
	return name, value, true
}

// labelSets renders the label sets of a scrape for its escaping scheme, as
// expfmt writes the label pairs that parseLabels reads out of the same set.
//
// A set whose names are all legacy label names is written as stored, in
// every scheme: that is every set of a store without UTF-8 names, and the
// store finds it out once per series (store.Series.PlainNames). Any other
// set is taken apart and written again (quoted or escaped names), into a
// buffer of its own.
type labelSets struct {
	// set is the current series' label set as its lines write it, without
	// braces; it points into buf when it was rendered.
	set   string
	buf   []byte
	pairs []labelPair // scratch of the sets that are rendered
}

type labelPair struct {
	name, value string // as rendered in the store
	out         string // the name as written, when renaming merges labels
}

// series sets set to a series' labels; plain is store.Series.PlainNames.
func (l *labelSets) series(labels string, plain bool, scheme model.EscapingScheme, memo *nameMemo) {
	if plain {
		l.set = labels
		return
	}
	l.buf = l.appendSet(l.buf[:0], labels, scheme, memo)
	// A string over buf without a copy: buf is not written again before the
	// next series replaces set.
	l.set = unsafe.String(unsafe.SliceData(l.buf), len(l.buf))
}

// appendExemplar appends an exemplar's labels, which expfmt writes as
// they are in every scheme (model.EscapeMetricFamily leaves them alone).
func (l *labelSets) appendExemplar(b []byte, labels string) []byte {
	if promtext.PlainNames(labels) {
		return append(b, labels...)
	}
	return l.appendSet(b, labels, model.NoEscaping, nil)
}

// appendSet appends a label set rendered for scheme. The store orders a set
// by its rendered names and expfmt by the names themselves, which differ
// where an escape sorts apart from the character it stands for: the pairs
// are put in expfmt's order first.
func (l *labelSets) appendSet(b []byte, labels string, scheme model.EscapingScheme, memo *nameMemo) []byte {
	ps := l.pairs[:0]
	for r := readPairs(labels); ; {
		n, v, ok := r.next()
		if !ok {
			break
		}
		ps = append(ps, labelPair{name: n, value: v})
	}
	l.pairs = ps
	slices.SortStableFunc(ps, func(a, b labelPair) int { return promtext.CompareUnescaped(a.name, b.name) })
	switch scheme {
	case model.NoEscaping:
		// A name that is not a legacy one is quoted; the stored name is
		// escaped as a quoted string already.
		for i, p := range ps {
			if i > 0 {
				b = append(b, ',')
			}
			if model.IsValidLegacyMetricName(p.name) {
				b = append(b, p.name...)
			} else {
				b = append(append(append(b, '"'), p.name...), '"')
			}
			b = appendLabelValue(b, p.value)
		}
		return b
	case model.UnderscoreEscaping:
		return appendUnderscored(b, ps, memo)
	default:
		// Dots and values: model.EscapeMetricFamily escapes each name that
		// is not a legacy metric name by the scheme's rule for metric names.
		for i, p := range ps {
			if i > 0 {
				b = append(b, ',')
			}
			raw := promtext.Unescaped(p.name)
			if !model.IsValidLegacyMetricName(raw) {
				raw = memo.escape(raw, scheme)
			}
			b = append(b, raw...)
			b = appendLabelValue(b, p.value)
		}
		return b
	}
}

// appendUnderscored appends the pairs with underscore escaping. expfmt
// would escape each label name alone, by the rules of metric names: "a.b"
// and "a_b" would become two labels named a_b (which does not parse) and
// "a:b" would stay (not a valid label name). Names are escaped by the rules
// of label names instead, and names that become equal are one label with
// their values joined by promtext.Separator in name order, as the converter
// joins attribute names that sanitise alike. dto.go applies the same.
func appendUnderscored(b []byte, ps []labelPair, memo *nameMemo) []byte {
	for i := range ps {
		raw := promtext.Unescaped(ps[i].name)
		if promtext.IsLegacyLabelName(raw) {
			ps[i].out = raw
		} else {
			ps[i].out = memo.escapeLabel(raw)
		}
	}
	slices.SortStableFunc(ps, func(a, b labelPair) int { return strings.Compare(a.out, b.out) })
	for i, p := range ps {
		if i > 0 && p.out == ps[i-1].out {
			b = append(b, promtext.Separator)
			b = append(b, p.value...)
			continue
		}
		if i > 0 {
			b = append(b, `",`...)
		}
		b = append(b, p.out...)
		b = append(b, `="`...)
		b = append(b, p.value...)
	}
	if len(ps) > 0 {
		b = append(b, '"')
	}
	return b
}

// underscoreLabelName escapes a label name that is not a legacy one: each
// character that may not stand where it is becomes '_'.
func underscoreLabelName(raw string) string {
	escaped := make([]byte, 0, len(raw))
	for i, r := range raw {
		if r < utf8.RuneSelf && promtext.IsLegacyLabelByte(byte(r), i == 0) {
			escaped = append(escaped, byte(r))
		} else {
			escaped = append(escaped, '_')
		}
	}
	if s := string(escaped); s != model.MetricNameLabel {
		return s
	}
	return promtext.ExportedNameLabel
}

// appendLabelValue appends `="value"` for a stored value, which is escaped
// as the text formats escape it already.
func appendLabelValue(b []byte, value string) []byte {
	b = append(b, `="`...)
	b = append(b, value...)
	return append(b, '"')
}
