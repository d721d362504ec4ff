package store // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"

import (
	"slices"
	"strings"
	"unsafe"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/promtext"
)

// A scraper that does not take UTF-8 names gets every label name that is
// not a legacy one escaped to underscores, names that escape alike joined
// into one label (promtext.UnderscoreLabelName). Two series whose sets
// differ only in such names, {a.b="x"} and {a-b="x"}, or {a.b="x"} and
// {a_b="x"}, would be written as one series twice: a scrape that does not
// parse for expfmt, a duplicate sample for Prometheus. The first series
// keeps the labels, later ones are refused (RefusedLabelClash), as the
// first family keeps a name that two families escape alike to.
//
// Only sets of names that are not all legacy ones can write another set's
// series, so a family without them keeps no record. A family's sets of
// names are grouped by their underscored names; the series of a group with
// more than one set of names are recorded by what they write.
//
// The dots and values schemes (escaping=dots, escaping=values, which no
// Prometheus asks for by default) escape names apart unless a legacy name
// spells another's escape (a__b next to a-b under dots); those are not
// recorded.

// clashes is a family's record; nil until the family has a set of names
// that is not plain.
type clashes struct {
	byNames map[string]*clashGroup // by LabelNames.key
	groups  map[string]*clashGroup // by LabelNames.underscored
}

// clashGroup is the sets of names with the same underscored names.
type clashGroup struct {
	sets int
	// written maps what each series of the group writes (AppendUnderscored)
	// to it, once the group has more than one set of names.
	written map[string]*Series
}

// clash reports whether a new series with labels l would write what a
// series of the family writes already, and returns what it writes when the
// family records it (for recordClash), or "". Call with the family locked,
// before the series is created.
func (f *Family) clash(l *Labels) (written string, taken bool) {
	if f.clashes == nil {
		if l.Names.Plain {
			return "", false
		}
		f.clashes = &clashes{byNames: map[string]*clashGroup{}, groups: map[string]*clashGroup{}}
		for _, s := range f.series {
			f.clashes.join(f, s.Labels.Names)
		}
	}
	g := f.clashes.join(f, l.Names)
	if g.written == nil {
		return "", false
	}
	set := LabelSet{Names: l.Names, shared: l.Shared, values: unsafe.String(unsafe.SliceData(l.Own), len(l.Own))}
	written = string(AppendUnderscored(nil, set))
	_, taken = g.written[written]
	return written, taken
}

// recordClash records the series just created with what clash returned.
func (f *Family) recordClash(s *Series, written string) {
	if written != "" {
		f.clashes.byNames[s.Labels.Names.key].written[written] = s
	}
}

// forgetClash drops a removed series from the record.
func (f *Family) forgetClash(s *Series) {
	if f.clashes == nil {
		return
	}
	g := f.clashes.byNames[s.Labels.Names.key]
	if g == nil || g.written == nil {
		return
	}
	written := string(AppendUnderscored(nil, s.Labels))
	if g.written[written] == s {
		delete(g.written, written)
	}
}

// join returns the group of names, adding names to it when they are new.
// A group that gets its second set of names records the series it has.
func (c *clashes) join(f *Family, names *LabelNames) *clashGroup {
	if g, ok := c.byNames[names.key]; ok {
		return g
	}
	g := c.groups[names.underscored]
	if g == nil {
		g = &clashGroup{}
		c.groups[names.underscored] = g
	}
	c.byNames[names.key] = g
	g.sets++
	if g.sets == 2 {
		g.written = map[string]*Series{}
		for _, s := range f.series {
			if c.byNames[s.Labels.Names.key] == g {
				g.written[string(AppendUnderscored(nil, s.Labels))] = s
			}
		}
	}
	return g
}

// underscoredKey is the key of names (LabelNames.key) as a scraper that
// does not take UTF-8 names gets them: escaped, sorted, each once.
func underscoredKey(names []string) string {
	outs := make([]string, len(names))
	for i, name := range names {
		outs[i] = underscored(name)
	}
	slices.Sort(outs)
	var key strings.Builder
	for i, out := range outs {
		if i == 0 || out != outs[i-1] {
			key.WriteString(out)
			key.WriteByte('"')
		}
	}
	return key.String()
}

// underscored is a stored name as underscore escaping writes it.
func underscored(name string) string {
	if promtext.IsLegacyLabelName(name) {
		return name
	}
	return promtext.UnderscoreLabelName(promtext.Unescaped(name))
}

// AppendUnderscored appends the set as a scrape without UTF-8 names writes
// it, `a_b="x;y",c="z"`: as the exposition's writers order and join the
// pairs (exposition.labelSets.pairsFor, which a test compares it with).
func AppendUnderscored(b []byte, set LabelSet) []byte {
	type pair struct{ name, out, value string }
	var pairs []pair
	c := set.Cursor()
	for _, name := range set.Names.Names {
		value, ok := c.Next()
		if !ok {
			break
		}
		pairs = append(pairs, pair{name, underscored(name), value})
	}
	slices.SortStableFunc(pairs, func(a, b pair) int { return promtext.CompareUnescaped(a.name, b.name) })
	slices.SortStableFunc(pairs, func(a, b pair) int { return strings.Compare(a.out, b.out) })
	for i, p := range pairs {
		switch {
		case i > 0 && p.out == pairs[i-1].out:
			b = append(b, promtext.Separator)
		case i > 0:
			b = append(b, `",`...)
			fallthrough
		default:
			b = append(append(b, p.out...), `="`...)
		}
		b = append(b, p.value...)
	}
	if len(pairs) > 0 {
		b = append(b, '"')
	}
	return b
}
