package exposition // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/exposition"

import (
	"slices"
	"strings"
	"unsafe"

	"github.com/prometheus/common/model"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/prommodel"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/promtext"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
)

// pairReader reads the pairs of a series' label set (store.LabelSet) in
// order, without allocating. Names and values stay as stored, escaped as
// text-format label values (names are escaped alike when UTF-8 names are
// allowed, see convert); unescape them with promtext.AppendUnescaped for
// formats that carry raw strings. The strings it returns are the store's:
// memos may keep them.
type pairReader struct {
	values store.Cursor
	names  []string
}

func readSet(labels store.LabelSet) pairReader {
	return pairReader{values: labels.Cursor(), names: labels.Names.Names}
}

// next returns the next pair; ok is false at the end or on a malformed set,
// which ends the pairs rather than the scrape.
func (r *pairReader) next() (name, value string, ok bool) {
	if len(r.names) == 0 {
		return "", "", false
	}
	value, ok = r.values.Next()
	if !ok {
		r.names = nil
		return "", "", false
	}
	name, r.names = r.names[0], r.names[1:]
	return name, value, true
}

// labelSets renders the label sets of a scrape for its escaping scheme, as
// expfmt writes the label pairs that parseLabels reads out of the same set.
//
// A set whose names are all legacy label names is written as the text
// formats write it, in every scheme: that is every set of a store without
// UTF-8 names, and the store finds it out once per set of names
// (store.LabelNames.Plain). Any other set is written again, its names
// quoted or escaped, into a buffer of its own.
type labelSets struct {
	// set is the current series' label set as its lines write it, without
	// braces; it points into textBuf or buf.
	set     string
	textBuf []byte
	buf     []byte
	pairs   []prommodel.Pair // scratch of the sets that are rendered
	// recent is, per position in a set, the last name escaped there: the
	// series of a family have their names at the same positions, so the
	// memo is asked about a name once per run of series, not per series.
	// It holds one scheme's names: reset it when the scheme changes.
	recent []recentName
}

type recentName struct{ name, out string }

// series sets set to a series' labels. A set of plain names is written as
// the text formats write it; any other is read as pairs from the store, so
// that the names the memos keep are the store's, not a buffer's.
func (l *labelSets) series(labels store.LabelSet, scheme model.EscapingScheme, memo *nameMemo) {
	if labels.Names.Plain {
		l.textBuf = labels.AppendText(l.textBuf[:0])
		// A string over the buffer without a copy: it is not written again
		// before the next series replaces set.
		l.set = unsafe.String(unsafe.SliceData(l.textBuf), len(l.textBuf))
		return
	}
	l.buf = l.appendSet(l.buf[:0], readSet(labels), scheme, memo)
	l.set = unsafe.String(unsafe.SliceData(l.buf), len(l.buf))
}

// appendExemplar appends an exemplar's labels, which expfmt writes as
// they are in every scheme (model.EscapeMetricFamily leaves them alone).
func (l *labelSets) appendExemplar(b []byte, labels store.LabelSet) []byte {
	if labels.Names.Plain {
		return labels.AppendText(b)
	}
	return l.appendSet(b, readSet(labels), model.NoEscaping, nil)
}

// appendSet appends a label set rendered for scheme. A set is written in
// one pass, in the store's order, when that is the order it is written in;
// one whose names hold an escape (whose order may differ, see appendPairs),
// or whose names underscore escaping reorders or merges, is taken apart
// into pairs first.
func (l *labelSets) appendSet(b []byte, labels pairReader, scheme model.EscapingScheme, memo *nameMemo) []byte {
	var ok bool
	switch scheme {
	case model.NoEscaping:
		b, ok = appendQuoted(b, labels)
	case model.UnderscoreEscaping:
		b, ok = l.appendUnderscoredInOrder(b, labels, memo)
	}
	if ok {
		return b
	}
	return l.appendPairs(b, labels, scheme, memo)
}

// appendPairs is appendSet by way of pairs (pairsFor).
func (l *labelSets) appendPairs(b []byte, labels pairReader, scheme model.EscapingScheme, memo *nameMemo) []byte {
	ps := l.pairsFor(labels, scheme, memo)
	if scheme == model.UnderscoreEscaping {
		return prommodel.AppendUnderscored(b, ps)
	}
	for i, p := range ps {
		if i > 0 {
			b = append(b, `",`...)
		}
		if scheme == model.NoEscaping {
			b = appendQuotedName(b, p.Out)
		} else {
			b = append(b, p.Out...)
		}
		b = append(b, `="`...)
		b = append(b, p.Value...)
	}
	if len(ps) > 0 {
		b = append(b, '"')
	}
	return b
}

// pairsFor reads a set's pairs into l.pairs, in the order and under the
// names every format writes for scheme, for the sets that cannot be written
// as they are stored; the text formats and protobuf write them from here.
//
// Each pair's out is its name as scheme writes it, in the store's escaped
// form: the stored name under NoEscaping, a name of legacy characters
// otherwise. The store orders a set by its rendered names and expfmt by the
// names themselves, which differ where an escape sorts apart from the
// character it stands for: such sets are sorted again, as are sets out of
// order (which the converter never makes).
//
// Underscore escaping takes prommodel's underscore rule (Merged marks the
// pairs that join the one before); the tests' reference
// (reference_test.go) applies a copy of its own.
func (l *labelSets) pairsFor(labels pairReader, scheme model.EscapingScheme, memo *nameMemo) []prommodel.Pair {
	ps := l.pairs[:0]
	resort := false
	for r := labels; ; {
		n, v, ok := r.next()
		if !ok {
			break
		}
		resort = resort || strings.IndexByte(n, '\\') >= 0 || len(ps) > 0 && n < ps[len(ps)-1].Name
		ps = append(ps, prommodel.Pair{Name: n, Value: v, Out: n})
	}
	l.pairs = ps
	if resort {
		slices.SortStableFunc(ps, func(a, b prommodel.Pair) int { return promtext.CompareUnescaped(a.Name, b.Name) })
	}
	switch scheme {
	case model.NoEscaping:
	case model.UnderscoreEscaping:
		for i := range ps {
			if !promtext.IsLegacyLabelName(ps[i].Name) { // as UnderscoredName, without a lookup
				ps[i].Out = l.escaped(i, ps[i].Name, memo.underscored)
			}
		}
		prommodel.SortUnderscored(ps)
	default:
		// Dots and values: model.EscapeMetricFamily escapes each name that
		// is not a legacy metric name by the scheme's rule for metric names.
		for i := range ps {
			if !model.LegacyValidation.IsValidMetricName(ps[i].Name) {
				ps[i].Out = l.escaped(i, ps[i].Name, func(stored string) string { return memo.escape(promtext.Unescaped(stored), scheme) })
			}
		}
	}
	return ps
}

// appendQuoted appends a label set for escaping=allow-utf-8 in one pass;
// ok is false, and nothing appended, when a name holds an escape.
func appendQuoted(b []byte, labels pairReader) (out []byte, ok bool) {
	start := len(b)
	for r := labels; ; {
		n, v, more := r.next()
		if !more {
			return b, true
		}
		if len(b) > start {
			b = append(b, ',')
		}
		if model.LegacyValidation.IsValidMetricName(n) {
			b = append(b, n...)
		} else if strings.IndexByte(n, '\\') < 0 {
			b = append(append(append(b, '"'), n...), '"')
		} else {
			return b[:start], false
		}
		b = appendLabelValue(b, v)
	}
}

// appendUnderscoredInOrder appends a label set with underscore escaping in
// one pass; ok is false, and nothing appended, when the escaped names are
// out of order or coincide. Escaped names in strictly rising order are the
// order pairsFor sorts them in, whatever the order of the names
// they come from.
func (l *labelSets) appendUnderscoredInOrder(b []byte, labels pairReader, memo *nameMemo) (out []byte, ok bool) {
	start := len(b)
	prev := ""
	for i, r := 0, labels; ; i++ {
		n, v, more := r.next()
		if !more {
			return b, true
		}
		name := n
		if !promtext.IsLegacyLabelName(n) {
			name = l.escaped(i, n, memo.underscored)
		}
		if i > 0 {
			if name <= prev {
				return b[:start], false
			}
			b = append(b, ',')
		}
		prev = name
		b = append(b, name...)
		b = appendLabelValue(b, v)
	}
}

// appendQuotedName appends a stored label name as expfmt writes it with
// UTF-8 names allowed: quoted when it is not a legacy name. The stored name
// is escaped as a quoted string already.
func appendQuotedName(b []byte, name string) []byte {
	if model.LegacyValidation.IsValidMetricName(name) {
		return append(b, name...)
	}
	return append(append(append(b, '"'), name...), '"')
}

// escaped is escape applied to the stored name at position i.
func (l *labelSets) escaped(i int, name string, escape func(stored string) string) string {
	if i < len(l.recent) && l.recent[i].name == name {
		return l.recent[i].out
	}
	out := escape(name)
	for len(l.recent) <= i {
		l.recent = append(l.recent, recentName{})
	}
	l.recent[i] = recentName{name, out}
	return out
}

// appendLabelValue appends `="value"` for a stored value, which is escaped
// as the text formats escape it already.
func appendLabelValue(b []byte, value string) []byte {
	b = append(b, `="`...)
	b = append(b, value...)
	return append(b, '"')
}
