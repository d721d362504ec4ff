package aggregate

import (
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHandoverRoundTrip(t *testing.T) {
	tb := &Table{}
	tb.counters.add(1, counterSlot{start: 10, ts: 20, value: 3.5})
	tb.counters.add(2, counterSlot{start: 0, ts: 21, value: 0})
	tb.hists.add(3, histSlot{start: 10, ts: 22, sum: -1.25, count: 9, cum: []uint64{1, 4, 9}})
	tb.hists.add(4, histSlot{start: 11, ts: 23, sum: 0, count: 0})
	fh := &histogram.FloatHistogram{
		Schema: 2, ZeroThreshold: 1e-128, ZeroCount: 1, Count: 6, Sum: 4.5,
		PositiveSpans: []histogram.Span{{Offset: -1, Length: 2}, {Offset: 3, Length: 1}}, PositiveBuckets: []float64{1, 2, 1},
		NegativeSpans: []histogram.Span{{Offset: 0, Length: 1}}, NegativeBuckets: []float64{1},
	}
	tb.natives.add(5, nativeSlot{start: 10, ts: 24, last: fh})

	// A run of counter 1 that ended before its latest: carried first.
	tb.endedCounters = map[uint64][]counterSlot{1: {{start: 5, ts: 8, value: 7}}}

	hd, err := decodeHandover(tb.encode())
	require.NoError(t, err)
	assert.Equal(t, map[uint64][]counterSlot{1: {{start: 5, ts: 8, value: 7}, {start: 10, ts: 20, value: 3.5}}, 2: {{start: 0, ts: 21, value: 0}}}, hd.counters)
	assert.Equal(t, map[uint64][]histSlot{3: {{start: 10, ts: 22, sum: -1.25, count: 9, cum: []uint64{1, 4, 9}}}, 4: {{start: 11, ts: 23, cum: []uint64{}}}}, hd.hists)
	require.Len(t, hd.natives[5], 1)
	assert.True(t, fh.Equals(hd.natives[5][0].last), "%v", hd.natives[5][0].last)
	assert.Equal(t, int64(24), hd.natives[5][0].ts)
}

func TestMalformedHandoversAreRefusedWhole(t *testing.T) {
	tb := &Table{}
	tb.counters.add(1, counterSlot{start: 10, ts: 20, value: 3.5})
	tb.hists.add(3, histSlot{start: 10, ts: 22, sum: 1, count: 9, cum: []uint64{1, 4, 9}})
	good := tb.encode()
	for name, b := range map[string][]byte{
		"empty":                  nil,
		"another version":        append([]byte{9}, good[1:]...),
		"cut short":              good[:len(good)-3],
		"trailing bytes":         append(append([]byte(nil), good...), 0),
		"a list longer than all": {handoverVersion, 0xff, 0xff, 0x03},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := decodeHandover(b)
			assert.ErrorIs(t, err, errHandover)
		})
	}
	t.Run("buckets above the count", func(t *testing.T) {
		bad := &Table{}
		bad.hists.add(3, histSlot{start: 10, ts: 22, count: 2, cum: []uint64{1, 4}})
		_, err := decodeHandover(bad.encode())
		assert.ErrorIs(t, err, errHandover)
	})
	t.Run("an invalid native histogram", func(t *testing.T) {
		bad := &Table{}
		bad.natives.add(5, nativeSlot{ts: 1, last: &histogram.FloatHistogram{Schema: 0, Count: 1, PositiveSpans: []histogram.Span{{Length: 2}}, PositiveBuckets: []float64{1}}})
		_, err := decodeHandover(bad.encode())
		assert.ErrorIs(t, err, errHandover)
	})
}

// FuzzDecodeHandover: whatever arrives, decoding returns an error or a
// handover that encodes back to the same bytes' meaning.
func FuzzDecodeHandover(f *testing.F) {
	tb := &Table{}
	tb.counters.add(1, counterSlot{start: 10, ts: 20, value: 3.5})
	tb.hists.add(3, histSlot{start: 10, ts: 22, sum: 1, count: 9, cum: []uint64{1, 4, 9}})
	f.Add(tb.encode())
	f.Add([]byte{handoverVersion, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		hd, err := decodeHandover(b)
		if err != nil {
			return
		}
		back := &Table{a: New(Config{MaxSources: 1 << 20, MaxSourcesPerTable: 1 << 20}, nil)}
		addHanded(back, &back.counters, &back.endedCounters, hd.counters)
		addHanded(back, &back.hists, &back.endedHists, hd.hists)
		addHanded(back, &back.natives, &back.endedNatives, hd.natives)
		again, err := decodeHandover(back.encode())
		require.NoError(t, err)
		assert.Equal(t, hd.counters, again.counters)
		assert.Equal(t, len(hd.hists), len(again.hists))
		assert.Equal(t, len(hd.natives), len(again.natives))
	})
}
