package store

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/prommodel"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLabelClashKeepsTheFirstSeries(t *testing.T) {
	for _, tt := range []struct {
		name, first string
		clashing    []string
	}{
		{"a UTF-8 name first", `a.b="x"`, []string{`a-b="x"`, `a_b="x"`}},
		// The family has only plain names until the second series: the
		// record starts from the series it has.
		{"a plain name first", `a_b="x"`, []string{`a.b="x"`, `a-b="x"`}},
		{"names joined", `a-b="y",a.b="x"`, []string{`a_b="y;x"`, `a-b="y",a_b="x"`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := New(100, 100, prommodel.Claims{})
			f, ok := st.Family("g", prommodel.KindGauge, "", "")
			require.True(t, ok)
			res := st.Resource([]byte("job\xffinst"), 0)
			f.lock()

			first, out := upsertText(t, f, tt.first, res, 1)
			if !assert.Equal(t, Created, out) {
				f.mu.Unlock()
				return
			}
			for _, labels := range tt.clashing {
				s, out := upsertText(t, f, labels, res, 2)
				assert.Equal(t, RefusedLabelClash, out, labels)
				assert.Nil(t, s)
			}
			again, out := upsertText(t, f, tt.first, res, 3)
			assert.Equal(t, Updated, out)
			assert.Same(t, first, again)
			other, out := upsertText(t, f, `a.b="z"`, res, 3)
			assert.Equal(t, Created, out, "a series other names write apart is kept")
			assert.Equal(t, int64(2), st.SeriesCount(), "a refused series is not counted")

			// Once the first is gone, the next takes the labels.
			assert.True(t, deleteText(t, f, tt.first))
			next, out := upsertText(t, f, tt.clashing[0], res, 4)
			assert.Equal(t, Created, out)
			_, out = upsertText(t, f, tt.first, res, 5)
			assert.Equal(t, RefusedLabelClash, out, "the record follows the series created after a removal")
			assert.True(t, deleteText(t, f, `a.b="z"`))
			assert.NotSame(t, other, next)
			f.mu.Unlock()
			assert.Equal(t, []string{tt.clashing[0]}, labelsOf(f))
		})
	}
}

// rawPair is a label as a point carries it: name and value unescaped.
type rawPair struct{ name, value string }

// underscoredReference is a label set as a scraper that does not take UTF-8
// names gets it, from prometheus/common's escaping and the rules the
// exporter adds to it (README: Formats, name escaping): each name escaped
// by model.EscapeName with UnderscoreEscaping, whose rules are those of
// metric names, so a ':' it keeps becomes '_' as a label name cannot hold
// one; an escaped name that comes out as __name__ is exported___name__;
// names that escape alike are one label, their values joined by ';' in the
// order of the names as sent; values escaped as the text format escapes
// them.
func underscoredReference(pairs []rawPair) string {
	type out struct{ name, escaped, value string }
	outs := make([]out, 0, len(pairs))
	for _, p := range pairs {
		escaped := strings.ReplaceAll(model.EscapeName(p.name, model.UnderscoreEscaping), ":", "_")
		if escaped == model.MetricNameLabel && p.name != model.MetricNameLabel {
			escaped = "exported___name__"
		}
		outs = append(outs, out{p.name, escaped, p.value})
	}
	slices.SortFunc(outs, func(a, b out) int {
		return cmp.Or(strings.Compare(a.escaped, b.escaped), strings.Compare(a.name, b.name))
	})
	var b strings.Builder
	for i, o := range outs {
		switch {
		case i > 0 && o.escaped == outs[i-1].escaped:
			b.WriteString(";")
		case i > 0:
			b.WriteString(`",`)
			fallthrough
		default:
			b.WriteString(o.escaped + `="`)
		}
		b.WriteString(textEscaper.Replace(o.value))
	}
	if len(outs) > 0 {
		b.WriteString(`"`)
	}
	return b.String()
}

// textEscaper escapes a label value as the text formats write it.
var textEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// setOf is the set of pairs as the converter hands it to the store: names
// escaped as label values and sorted, values escaped, built without the
// store's parser.
func setOf(t testing.TB, pairs []rawPair) LabelSet {
	t.Helper()
	sorted := slices.Clone(pairs)
	for i := range sorted {
		sorted[i].name = textEscaper.Replace(sorted[i].name)
	}
	slices.SortFunc(sorted, func(a, b rawPair) int { return strings.Compare(a.name, b.name) })
	var names []string
	var values []byte
	for i, p := range sorted {
		require.False(t, i > 0 && p.name == sorted[i-1].name, "a name twice in %v", pairs)
		names = append(names, p.name)
		values = AppendValue(values, textEscaper.Replace(p.value))
	}
	return NewLabelSet(NewLabelNames(names), values)
}

// The underscored set of a label set, as a table written by hand, by the
// reference and by AppendUnderscored (which the store keys clashes by).
func TestAppendUnderscoredWritesTheUnderscoredSet(t *testing.T) {
	for _, tc := range []struct {
		pairs []rawPair
		want  string
	}{
		{nil, ``},
		{[]rawPair{{"a_b", "x"}}, `a_b="x"`},
		{[]rawPair{{"a.b", "x"}, {"c", "y"}}, `a_b="x",c="y"`},
		{[]rawPair{{"a-b", "y"}, {"a.b", "x"}}, `a_b="y;x"`}, // joined in name order
		{[]rawPair{{`a"b`, `q"`}, {`a\b`, `\`}}, `a_b="q\";\\"`},
		{[]rawPair{{"1a", "x"}, {"b", "y"}}, `_a="x",b="y"`},
		{[]rawPair{{"__name__x", "x"}, {"é", "y"}, {"ü", "z"}}, `_="y;z",__name__x="x"`},
		{[]rawPair{{"z.z", "1"}, {"zz", "2"}, {"é.é", "3"}}, `___="3",z_z="1",zz="2"`},
		{[]rawPair{{"a.b", "y"}, {"a\nb", "x"}, {"a_b", "z"}}, `a_b="x;y;z"`}, // in the order of the names as sent
		{[]rawPair{{"__name__", "n"}, {"a", "v"}}, `__name__="n",a="v"`},      // a legacy name as it is (the converter renames it)
		{[]rawPair{{"_.name__", "n"}, {"__name__.", "v"}}, `__name___="v",exported___name__="n"`},
		{[]rawPair{{"a:b", "x"}, {"a_c", "y"}}, `a_b="x",a_c="y"`},
		{[]rawPair{{"a:b", "x"}, {"a.b", "y"}}, `a_b="y;x"`}, // '.' sorts before ':'
		{[]rawPair{{"a", "line\nbreak"}, {"b.c", ""}}, `a="line\nbreak",b_c=""`},
	} {
		assert.Equal(t, tc.want, underscoredReference(tc.pairs), "reference, %v", tc.pairs)
		assert.Equal(t, tc.want, string(appendUnderscored(nil, setOf(t, tc.pairs))), "%v", tc.pairs)
	}
}

// clashNames are names that escape alike in many ways: dots, dashes,
// quotes, backslashes, newlines, ':' , leading digits, non-ASCII letters,
// __name__ from an escape, and legacy names they escape to.
var clashNames = []string{"a.b", "a-b", "a_b", `a"b`, `a\b`, "a\nb", "a:b", "1a", "_a", "é", "ü", "_", "_.name__", "exported___name__", "z"}

// clashSets are the sets of one or two of names, with every pair of values
// that differ and need escaping. No value holds ';'.
func clashSets(names []string) [][]rawPair {
	values := []string{"x", "y", `"`, `\`}
	var sets [][]rawPair
	for i, a := range names {
		for _, v := range values {
			sets = append(sets, []rawPair{{a, v}})
		}
		for _, b := range names[i+1:] {
			for _, v := range values {
				for _, w := range values {
					sets = append(sets, []rawPair{{a, v}, {b, w}})
				}
			}
		}
	}
	return sets
}

func TestAppendUnderscoredWritesAsTheReference(t *testing.T) {
	sets := clashSets(clashNames)
	for _, pairs := range sets {
		assert.Equal(t, underscoredReference(pairs), string(appendUnderscored(nil, setOf(t, pairs))), "%v", pairs)
	}
	require.Greater(t, len(sets), 400)
}

// Series arrive in a shuffled order, some leave: each is created, updated
// or refused as the reference says. A new series is refused when a series
// the family holds is written as the same underscored set by the
// reference, and only then. One family takes sets of every name, others
// sets of a few names each, so that a family may hold one set of names
// whose names escape alike and no other.
func TestLabelClashRefusesWhatTheReferenceWritesAlike(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	st := New(1_000_000, 1_000_000, prommodel.Claims{})
	res := st.Resource([]byte("job\xffinst"), 0)
	var refused, created int
	for family := range 200 {
		names := clashNames
		if family > 0 {
			names = slices.Clone(clashNames)
			rng.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
			names = names[:2+rng.IntN(2)]
		}
		f, ok := st.Family(fmt.Sprint("g", family), prommodel.KindGauge, "", "")
		require.True(t, ok)
		r, c := clashFamily(t, f, res, rng, clashSets(names))
		refused, created = refused+r, created+c
	}
	assert.Greater(t, refused, 1000)
	assert.Greater(t, created, 1000)
}

// clashFamily upserts and deletes sets in f at random, four steps a set,
// and checks each outcome and the family's size against the reference.
func clashFamily(t *testing.T, f *Family, res *Resource, rng *rand.Rand, sets [][]rawPair) (refused, created int) {
	t.Helper()
	written := map[string]string{} // underscored set → identity of the series that holds it
	identities := map[string]bool{}
	identity := func(pairs []rawPair) string {
		s := slices.Clone(pairs)
		slices.SortFunc(s, func(a, b rawPair) int { return strings.Compare(a.name, b.name) })
		return fmt.Sprint(s)
	}
	for step := range 4 * len(sets) {
		pairs := sets[rng.IntN(len(sets))]
		id, under := identity(pairs), underscoredReference(pairs)
		set := setOf(t, pairs)
		l := set.Labels()
		if identities[id] && rng.IntN(4) == 0 {
			f.lock()
			deleted := f.delete(l, l.hash())
			f.mu.Unlock()
			require.True(t, deleted, "%s step %d: %v held", f.Name, step, pairs)
			delete(identities, id)
			delete(written, under)
			continue
		}
		want := Created
		switch {
		case identities[id]:
			want = Updated
		case written[under] != "":
			want = RefusedLabelClash
		}
		f.lock()
		s, out := f.upsert(l, l.hash(), res, int64(step))
		f.mu.Unlock()
		require.Equal(t, want, out, "%s step %d: %v (underscored %s, held by %s)", f.Name, step, pairs, under, written[under])
		switch out {
		case Created:
			require.NotNil(t, s)
			identities[id], written[under] = true, id
			created++
		case RefusedLabelClash:
			require.Nil(t, s)
			refused++
		}
		require.Equal(t, len(identities), f.Len(), "%s step %d", f.Name, step)
	}
	return refused, created
}
