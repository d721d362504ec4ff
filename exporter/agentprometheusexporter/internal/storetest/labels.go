package storetest

import (
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/promtext"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
)

// ParseLabels reads a set written as AppendText writes it, into a set of
// names of its own; ok is false when labels is malformed or its names are
// not sorted and distinct. For tests.
func ParseLabels(labels string) (s store.LabelSet, ok bool) {
	var names []string
	var values []byte
	for rest := labels; rest != ""; {
		// A name ends at the first unescaped quote, which follows its '='.
		open := promtext.ClosingQuote(rest, 0)
		if open < 2 || rest[open-1] != '=' {
			return store.LabelSet{}, false
		}
		end := promtext.ClosingQuote(rest, open+1)
		if end < 0 {
			return store.LabelSet{}, false
		}
		name := rest[:open-1]
		if len(names) > 0 && names[len(names)-1] >= name {
			return store.LabelSet{}, false
		}
		names = append(names, name)
		values = store.AppendValue(values, rest[open+1:end])
		rest = rest[end+1:]
		if rest != "" {
			if rest[0] != ',' || len(rest) == 1 {
				return store.LabelSet{}, false
			}
			rest = rest[1:]
		}
	}
	return store.NewLabelSet(store.NewLabelNames(names), values), true
}
