package dedupe

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/statsgate/statsgate/processor/grpcstatsprocessor/internal/dialect"
)

func TestMergeKeepsTheBestWithinTheWindow(t *testing.T) {
	st := New(100, 10)
	var s Seen
	s.Clear()
	s.Note(dialect.ServerCallDuration, 2)
	st.Merge(1, &s, 0)
	assert.Equal(t, Rank(2), s[dialect.ServerCallDuration])

	s.Clear()
	s.Note(dialect.ServerCallDuration, 3) // worse than remembered: drop it
	st.Merge(1, &s, 50)
	assert.Equal(t, Rank(2), s[dialect.ServerCallDuration])

	s.Clear()
	s.Note(dialect.ServerCallDuration, 0) // better: it wins from now on
	st.Merge(1, &s, 60)
	assert.Equal(t, Rank(0), s[dialect.ServerCallDuration])

	s.Clear()
	s.Note(dialect.ServerCallDuration, 3)
	st.Merge(1, &s, 200) // the window has passed: the worse dialect is alone again
	assert.Equal(t, Rank(3), s[dialect.ServerCallDuration])
}

func TestStateIsBounded(t *testing.T) {
	st := New(100, 2)
	var s Seen
	for r := uint64(0); r < 5; r++ {
		s.Clear()
		s.Note(dialect.ClientCallDuration, 1)
		st.Merge(r, &s, 0)
	}
	assert.Equal(t, 2, st.Len())
	s.Clear()
	s.Note(dialect.ClientCallDuration, 1)
	st.Merge(9, &s, 500) // expired entries are swept first, making room
	assert.Equal(t, 1, st.Len())
}
