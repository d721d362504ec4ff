package store // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"

import (
	"slices"
	"strings"
	"unsafe"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/prommodel"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/promtext"
)

// A scraper that does not take UTF-8 names gets every label name that is
// not a legacy one escaped to underscores, names that escape alike joined
// into one label (prommodel's underscore rule). Two series whose sets
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
	// written maps what each series of the group writes (appendUnderscored)
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
	written = string(appendUnderscored(nil, set))
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
	written := string(appendUnderscored(nil, s.Labels))
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
				g.written[string(appendUnderscored(nil, s.Labels))] = s
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
		outs[i] = prommodel.UnderscoredName(name)
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

// appendUnderscored appends the set as a scrape without UTF-8 names writes
// it (prommodel's underscore rule), `a_b="x;y",c="z"`.
func appendUnderscored(b []byte, set LabelSet) []byte {
	var pairs []prommodel.Pair
	c := set.Cursor()
	for _, name := range set.Names.Names {
		value, ok := c.Next()
		if !ok {
			break
		}
		pairs = append(pairs, prommodel.Pair{Name: name, Value: value, Out: prommodel.UnderscoredName(name)})
	}
	slices.SortStableFunc(pairs, func(a, b prommodel.Pair) int { return promtext.CompareUnescaped(a.Name, b.Name) })
	prommodel.SortUnderscored(pairs)
	return prommodel.AppendUnderscored(b, pairs)
}
