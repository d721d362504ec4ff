package prommodel // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/prommodel"

import (
	"slices"
	"strings"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/promtext"
)

// The underscore rule: a scraper that does not take UTF-8 names gets each
// label name that is not a legacy one escaped by the rules of label names
// (promtext.UnderscoreLabelName), and names that escape alike become one
// label, their values joined by promtext.Separator in the order of the
// names: as the converter joins attribute names that sanitise alike. The
// writers write label sets by it, and the store refuses a series that
// another of its family would be written as (store's label_clash).
//
// expfmt would escape each label name alone, by the rules of metric names:
// "a.b" and "a_b" would become two labels named a_b (which does not parse)
// and "a:b" would stay (not a valid label name).

// UnderscoredName is a label name as stored (escaped as the text formats
// escape label values) as the underscore rule writes it.
func UnderscoredName(stored string) string {
	if promtext.IsLegacyLabelName(stored) {
		return stored
	}
	return promtext.UnderscoreLabelName(promtext.Unescaped(stored))
}

// Pair is a label of a set being written: Name and Value as stored, Out the
// name as written. Merged marks a pair that joins the one before it: one
// label, their values joined.
type Pair struct {
	Name, Value, Out string
	Merged           bool
}

// SortUnderscored orders the pairs of a set as the underscore rule writes
// them, given each its Out (UnderscoredName) and the pairs in the order of
// their names unescaped: by Out, pairs of one Out in the order of their
// names; and marks the pairs that join the one before.
func SortUnderscored(ps []Pair) {
	if !slices.IsSortedFunc(ps, comparePairs) {
		slices.SortStableFunc(ps, comparePairs)
	}
	for i := range ps {
		ps[i].Merged = i > 0 && ps[i].Out == ps[i-1].Out
	}
}

func comparePairs(a, b Pair) int { return strings.Compare(a.Out, b.Out) }

// AppendUnderscored appends the pairs SortUnderscored ordered as a set
// without braces: `a_b="x;y",c="z"`.
func AppendUnderscored(b []byte, ps []Pair) []byte {
	for i, p := range ps {
		switch {
		case p.Merged:
			b = append(b, promtext.Separator)
		case i > 0:
			b = append(b, `",`...)
			fallthrough
		default:
			b = append(append(b, p.Out...), `="`...)
		}
		b = append(b, p.Value...)
	}
	if len(ps) > 0 {
		b = append(b, '"')
	}
	return b
}
