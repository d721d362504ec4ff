package store

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/prommodel"
)

// parsed returns a set written as text, as a Writer is given it.
func parsed(t testing.TB, labels string) *Labels {
	t.Helper()
	s, ok := parseLabels(labels)
	require.True(t, ok, labels)
	return &Labels{Names: s.Names, Own: []byte(s.values)}
}

// upsertText upserts the series of a set written as text.
func upsertText(t testing.TB, f *Family, labels string, res *Resource, now int64) (*Series, Outcome) {
	l := parsed(t, labels)
	return f.upsert(l, l.hash(), res, now)
}

func deleteText(t testing.TB, f *Family, labels string) bool {
	l := parsed(t, labels)
	return f.delete(l, l.hash())
}

func TestLabelSetTextRoundTrips(t *testing.T) {
	for _, text := range []string{
		``,
		`a="x"`,
		`a="",b="y"`,
		`a="x\"y\\",b="line\nbreak",c="\\\\"`,
		`a\"b="v",ä="ü"`,
	} {
		s, ok := parseLabels(text)
		require.True(t, ok, text)
		assert.Equal(t, text, s.Text())
	}
}

func TestParseLabelsRefusesMalformedAndUnsortedSets(t *testing.T) {
	for _, text := range []string{`a`, `a="x`, `a="x",`, `a="x"b="y"`, `b="x",a="y"`, `a="x",a="y"`, `="x"`} {
		_, ok := parseLabels(text)
		assert.False(t, ok, text)
	}
}

func TestLabelNamesAreTheSameByContent(t *testing.T) {
	a, b, c := NewLabelNames([]string{"a", "b"}), NewLabelNames([]string{"a", "b"}), NewLabelNames([]string{"ab"})
	assert.True(t, a.Same(a))
	assert.True(t, a.Same(b), "a set built again is the same set")
	assert.False(t, a.Same(c), "the names are kept apart, not concatenated")
	assert.True(t, a.Plain)
	assert.False(t, NewLabelNames([]string{"a.b"}).Plain)
	assert.False(t, NewLabelNames([]string{"0a"}).Plain)
}

func TestSetsOfOtherNamesAreOtherSeries(t *testing.T) {
	st := New(10, 10, prommodel.Claims{})
	f, _ := st.Family("g", prommodel.KindGauge, "", "")
	res := st.Resource([]byte("j\xffi"), 0)
	f.lock()
	defer f.mu.Unlock()
	a, out := upsertText(t, f, `a="x"`, res, 1)
	require.Equal(t, Created, out)
	b, out := upsertText(t, f, `b="x"`, res, 1)
	require.Equal(t, Created, out, "same value, other name")
	require.NotSame(t, a, b)
	again, out := upsertText(t, f, `a="x"`, res, 2)
	assert.Equal(t, Updated, out, "a set of names built again finds its series")
	assert.Same(t, a, again)
}

func TestValuesOfAnyLengthRoundTrip(t *testing.T) {
	long := strings.Repeat("v", 300) // a length of two bytes
	var values []byte
	for _, v := range []string{"a", long, `x\"y`, strings.Repeat("w", 127), strings.Repeat("z", 128)} {
		b, at := OpenValue(values)
		values = CloseValue(append(b, v...), at)
	}
	s := LabelSet{Names: NewLabelNames([]string{"a", "b", "c", "d", "e"}), values: string(values)}
	want := `a="a",b="` + long + `",c="x\"y",d="` + strings.Repeat("w", 127) + `",e="` + strings.Repeat("z", 128) + `"`
	assert.Equal(t, want, s.Text())
	parsed, ok := parseLabels(want)
	require.True(t, ok)
	assert.Equal(t, s.values, parsed.values, "AppendValue and CloseValue agree")
	var got []string
	for name, value := range s.All() {
		got = append(got, name+"="+value)
	}
	assert.Equal(t, []string{"a=a", "b=" + long, `c=x\"y`, "d=" + strings.Repeat("w", 127), "e=" + strings.Repeat("z", 128)}, got)
}

func TestTruncatedValuesEndTheSet(t *testing.T) {
	s := LabelSet{Names: NewLabelNames([]string{"a", "b"}), values: "\x01x\x05ab"}
	assert.Equal(t, `a="x"`, s.Text())
	s.values = "\x01x"
	assert.Equal(t, `a="x"`, s.Text(), "fewer values than names")
	s.values = ""
	assert.Empty(t, s.Text())
}

func TestCompareSetsOrdersPairByPair(t *testing.T) {
	var sets []LabelSet
	for _, text := range []string{
		`b="1"`,
		`a="2",b="1"`,
		`a="1",c="1"`,
		`a="1"`,
		`a="1",b="2"`,
		``,
		`a="1",b="1"`,
	} {
		s, ok := parseLabels(text)
		require.True(t, ok, text)
		sets = append(sets, s)
	}
	slices.SortFunc(sets, CompareSets)
	var got []string
	for _, s := range sets {
		got = append(got, s.Text())
	}
	assert.Equal(t, []string{``, `a="1"`, `a="1",b="1"`, `a="1",b="2"`, `a="1",c="1"`, `a="2",b="1"`, `b="1"`}, got)
	for i := range sets {
		assert.Zero(t, CompareSets(sets[i], sets[i]), "a set is equal to itself")
	}
}
