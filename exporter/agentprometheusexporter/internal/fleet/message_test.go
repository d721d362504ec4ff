package fleet

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func decodeAll(b []byte) ([]Claim, error) {
	var out []Claim
	err := decodeMessage(b, func(c Claim) { out = append(out, c) })
	return out, err
}

func TestMessagesRoundTrip(t *testing.T) {
	claims := []Claim{
		{Resource: ID{1, 2, 3}, Point: 1_700_000_000_123_456_789, Node: 1},
		{Resource: ID{15: 0xff}, Point: 1, Node: ^uint64(0), Age: 90 * time.Second},
	}
	for n := range len(claims) + 1 {
		b := appendMessage(nil, claims[:n]...)
		assert.Len(t, b, 1+n*claimSize)
		got, err := decodeAll(b)
		require.NoError(t, err)
		require.Len(t, got, n)
		for i := range got {
			assert.Equal(t, claims[i], got[i])
		}
	}
}

func TestMalformedMessagesYieldNoClaim(t *testing.T) {
	good := appendMessage(nil, Claim{Resource: ID{1}, Point: 5, Node: 7})
	for name, b := range map[string][]byte{
		"empty":                      nil,
		"another version":            append([]byte{2}, good[1:]...),
		"a claim cut short":          good[:len(good)-1],
		"a byte too many":            append(bytes.Clone(good), 0),
		"a zero point":               appendMessage(nil, Claim{Resource: ID{1}, Point: 0, Node: 7}),
		"a negative point":           appendMessage(nil, Claim{Resource: ID{1}, Point: -5, Node: 7}),
		"node 0":                     appendMessage(nil, Claim{Resource: ID{1}, Point: 5}),
		"an age beyond a day":        append(good[:len(good)-4], 0xff, 0xff, 0xff, 0xff),
		"a bad claim after good one": append(bytes.Clone(good), appendMessage(nil, Claim{Resource: ID{2}, Point: 5})[1:]...),
	} {
		t.Run(name, func(t *testing.T) {
			got, err := decodeAll(b)
			require.ErrorIs(t, err, errMalformed)
			assert.Empty(t, got, "a malformed message applies none of its claims")
		})
	}
}

// FuzzDecodeMessage: any bytes from the gossip port are either a message
// that encodes back to the same bytes, or refused whole; never a panic.
func FuzzDecodeMessage(f *testing.F) {
	f.Add(appendMessage(nil, Claim{Resource: ID{1}, Point: 5, Node: 7, Age: time.Second}))
	f.Add(appendMessage(nil))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := decodeAll(b)
		if err != nil {
			require.Empty(t, got)
			return
		}
		assert.Equal(t, b, appendMessage(nil, got...))
	})
}
