package fleet

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/statsgate/statsgate/test/internal/promtest"
)

// counterRun is what a counter's stored samples say.
type counterRun struct {
	// total is what the counter counted from 0 at its start: the first value,
	// then every rise, and after a drop (a reset) the whole new value — as
	// increase() reads a series, without its extrapolation.
	total  float64
	resets int
	// maxGap is the longest time between two stored samples.
	maxGap      time.Duration
	first, last time.Time
}

func summarize(points []promtest.Point) counterRun {
	var r counterRun
	for i, p := range points {
		switch {
		case i == 0:
			r.total, r.first = p.V, p.T
		case p.V >= points[i-1].V:
			r.total += p.V - points[i-1].V
		default:
			r.total += p.V
			r.resets++
		}
		if i > 0 {
			r.maxGap = max(r.maxGap, p.T.Sub(points[i-1].T))
		}
		r.last = p.T
	}
	return r
}

func TestSummarizeReadsCountersAsIncreaseDoes(t *testing.T) {
	at := func(s int) time.Time { return time.Unix(1000+int64(s), 0) }
	pts := func(vs ...float64) []promtest.Point {
		out := make([]promtest.Point, len(vs))
		for i, v := range vs {
			out[i] = promtest.Point{T: at(2 * i), V: v}
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		points []promtest.Point
		total  float64
		resets int
	}{
		{"no samples", nil, 0, 0},
		{"counted from zero at the first sample", pts(10), 10, 0},
		{"rises add up", pts(10, 20, 20, 35), 35, 0},
		{"a drop is a reset from zero", pts(10, 60, 10, 30), 90, 1},
		{"interleaved copies of two replicas", pts(10, 60, 50, 70, 60, 80), 10 + 50 + 50 + 20 + 60 + 20, 2},
		{"a drop to zero is a reset", pts(5, 0, 3), 8, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := summarize(tc.points)
			assert.Equal(t, tc.total, r.total)
			assert.Equal(t, tc.resets, r.resets)
		})
	}
	r := summarize([]promtest.Point{{T: at(0), V: 1}, {T: at(1), V: 2}, {T: at(6), V: 3}, {T: at(8), V: 4}})
	assert.Equal(t, 5*time.Second, r.maxGap)
	assert.Equal(t, at(0), r.first)
	assert.Equal(t, at(8), r.last)
}
