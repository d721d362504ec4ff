package exposition

import (
	"testing"

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
