package exposition

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/promtext"
)

func TestPairReader(t *testing.T) {
	type pair struct{ name, value string }
	for _, tc := range []struct {
		labels string
		want   []pair
	}{
		{``, nil},
		{`a="x"`, []pair{{"a", "x"}}},
		{`a="x",b=""`, []pair{{"a", "x"}, {"b", ""}}},
		{`a="q\"uote",b="back\\slash\\",c="new\nline"`, []pair{{"a", "q\"uote"}, {"b", `back\slash\`}, {"c", "new\nline"}}},
		{`caf\"é.x="1",z="é"`, []pair{{`caf"é.x`, "1"}, {"z", "é"}}},
		{`a="unterminated`, nil},
		{`a="x",broken`, []pair{{"a", "x"}}},
	} {
		var got []pair
		r := readPairs(tc.labels)
		for {
			name, value, ok := r.next()
			if !ok {
				break
			}
			got = append(got, pair{string(promtext.AppendUnescaped(nil, name)), string(promtext.AppendUnescaped(nil, value))})
		}
		assert.Equal(t, tc.want, got, tc.labels)
	}
}

func TestPairReaderDoesNotAllocate(t *testing.T) {
	labels := `code="200",method="GET",route="/a\"b"`
	buf := make([]byte, 0, 64)
	allocs := testing.AllocsPerRun(100, func() {
		r := readPairs(labels)
		for {
			name, value, ok := r.next()
			if !ok {
				break
			}
			buf = promtext.AppendUnescaped(promtext.AppendUnescaped(buf[:0], name), value)
		}
	})
	assert.Zero(t, allocs)
}
