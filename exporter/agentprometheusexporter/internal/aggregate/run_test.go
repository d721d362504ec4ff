package aggregate

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestOrderOfAPointAfterItsSourcesLatest(t *testing.T) {
	for _, tc := range []struct {
		name                       string
		srcStart, srcTS, start, ts int64
		want                       order
	}{
		{"later in the same run", 1, 10, 1, 20, sameRun},
		{"a retry of the latest point", 1, 10, 1, 10, stale},
		{"an older point", 1, 10, 1, 5, stale},
		{"a run that began since: the agent restarted", 1, 10, 15, 20, newRun},
		{"a run that began before the source's: another agent with its identity", 15, 20, 1, 25, stale},
		{"an unknown start continues the run", 1, 10, 0, 20, sameRun},
		{"a known start after unknown ones continues the run", 0, 10, 5, 20, sameRun},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, orderOf(tc.srcStart, tc.srcTS, tc.start, tc.ts))
		})
	}
}

func TestCounterIncrement(t *testing.T) {
	for _, tc := range []struct {
		name    string
		o       order
		last, v float64
		want    float64
	}{
		{"grew", sameRun, 5, 8, 3},
		{"did not move", sameRun, 5, 5, 0},
		{"went down: a reset, counted from zero", sameRun, 5, 2, 2},
		{"a new run counts whole, even above the last value", newRun, 5, 9, 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, counterIncrement(tc.o, tc.last, tc.v))
		})
	}
}

func TestHistogramReset(t *testing.T) {
	for _, tc := range []struct {
		name             string
		o                order
		lastCount, count uint64
		lastCum, cum     []uint64
		want             bool
	}{
		{"grew", sameRun, 5, 7, []uint64{1, 3}, []uint64{2, 3}, false},
		{"count went down", sameRun, 5, 4, []uint64{1, 3}, []uint64{1, 3}, true},
		{"a bucket went down, the count did not", sameRun, 5, 6, []uint64{2, 3}, []uint64{1, 4}, true},
		{"a new run", newRun, 5, 9, []uint64{1, 3}, []uint64{2, 4}, true},
		{"other buckets", sameRun, 5, 9, []uint64{1, 3}, []uint64{1, 3, 5}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, histogramReset(tc.o, tc.lastCount, tc.lastCum, tc.count, tc.cum))
		})
	}
}
