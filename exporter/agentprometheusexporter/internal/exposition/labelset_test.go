package exposition

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/promtext"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
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
		r := readSet(looseSet(tc.labels))
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
	labels := looseSet(`code="200",method="GET",route="/a\"b"`)
	buf := make([]byte, 0, 64)
	allocs := testing.AllocsPerRun(100, func() {
		r := readSet(labels)
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

func TestPairReaderStopsAtTruncatedValues(t *testing.T) {
	r := readSet(store.NewLabelSet(store.NewLabelNames([]string{"a", "b"}), []byte("\x01x\x05ab")))
	name, value, ok := r.next()
	assert.True(t, ok)
	assert.Equal(t, [2]string{"a", "x"}, [2]string{name, value})
	_, _, ok = r.next()
	assert.False(t, ok, "a value longer than what is left ends the set")
	_, _, ok = r.next()
	assert.False(t, ok)
}

// looseSet makes a set the converter never makes, such as one of unsorted,
// repeated or empty names, from its text (`a="x",b="y\"z"`; reading stops
// at the first malformed pair): the writers must still write what expfmt
// writes for it.
func looseSet(labels string) store.LabelSet {
	var names []string
	var values []byte
	for s := labels; s != ""; {
		i := promtext.ClosingQuote(s, 0)
		if i < 1 || s[i-1] != '=' {
			break
		}
		j := promtext.ClosingQuote(s, i+1)
		if j < 0 {
			break
		}
		names = append(names, s[:i-1])
		values = store.AppendValue(values, s[i+1:j])
		s = strings.TrimPrefix(s[j+1:], ",")
	}
	return store.NewLabelSet(store.NewLabelNames(names), values)
}
