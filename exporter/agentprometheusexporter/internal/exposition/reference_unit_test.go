package exposition

import (
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
)

func TestSpansAndDeltas(t *testing.T) {
	spans, deltas := spansAndDeltas(store.Buckets{Offset: -2, Counts: []uint64{1, 2, 0, 0, 4, 0, 1}})
	got := make([][2]int64, len(spans))
	for i, s := range spans {
		got[i] = [2]int64{int64(s.GetOffset()), int64(s.GetLength())}
	}
	// Buckets -2,-1 | gap of 2 | 2 | gap of 1 | 4.
	assert.Equal(t, [][2]int64{{-2, 2}, {2, 1}, {1, 1}}, got)
	assert.Equal(t, []int64{1, 1, 2, -3}, deltas)
}

func TestParseLabelsUndoesEscaping(t *testing.T) {
	pairs := parseLabels(`b="x\"y",a="line\nbreak\\"`)
	assert.Len(t, pairs, 2)
	assert.Equal(t, "a", pairs[0].GetName())
	assert.Equal(t, "line\nbreak\\", pairs[0].GetValue())
	assert.Equal(t, "b", pairs[1].GetName())
	assert.Equal(t, `x"y`, pairs[1].GetValue())
	assert.Empty(t, parseLabels(""))
}

func TestParseLabelsReadsEscapedNamesAndStopsAtMalformedInput(t *testing.T) {
	// With UTF-8 names allowed, names are escaped like values and may hold '='.
	pairs := parseLabels(`a\"b="v",x=y="z"`)
	assert.Len(t, pairs, 2)
	assert.Equal(t, `a"b`, pairs[0].GetName())
	assert.Equal(t, "v", pairs[0].GetValue())
	assert.Equal(t, "x=y", pairs[1].GetName())
	assert.Equal(t, "z", pairs[1].GetValue())
	for _, malformed := range []string{`a="unterminated`, `noequals`, `a`, `a\`, `a="v",b`} {
		assert.NotPanics(t, func() { parseLabels(malformed) }, malformed)
	}
	assert.Len(t, parseLabels(`a="v",b`), 1, "the pairs before the malformed part are kept")
}

func TestUnderscoreEscapingJoinsNamesThatEscapeAlike(t *testing.T) {
	var sets labelSets
	var memo nameMemo
	underscored := func(labels string) []*dto.LabelPair {
		return parseLabels(string(sets.appendSet(nil, readSet(looseSet(labels)), model.UnderscoreEscaping, &memo)))
	}
	got := map[string]string{}
	for _, p := range underscored(`a_b="y",a.b="x",a:b="z",1x="w",__name..="n",caf\"é="q"`) {
		got[p.GetName()] = p.GetValue()
	}
	// Values join in the order of the original names, as parseLabels sorts them.
	assert.Equal(t, map[string]string{"a_b": "x;z;y", "_x": "w", "exported___name__": "n", "caf__": "q"}, got)
	assert.Equal(t, `a_b="x;y",c="z"`, string(sets.appendSet(nil, readSet(looseSet(`a.b="x",a_b="y",c="z"`)), model.UnderscoreEscaping, &memo)))
	valid := parseLabels(`a="1",b="2"`)
	assert.Equal(t, valid, underscored(`a="1",b="2"`), "legacy names are left alone")
}
