package aggregate // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/aggregate"

// A cumulative source is a run of points: a start time and values that only
// grow from zero until the run ends. These rules decide, point by point, how
// much of a value is new — its increment — which is all a group adds up.
// Prometheus reads a decrease as a reset in the same way.

// order says where a point of a cumulative source falls against the latest
// one of its source.
type order uint8

const (
	// sameRun: later in the run the source is in.
	sameRun order = iota
	// newRun: a run that began after the source's (the agent restarted).
	newRun
	// stale: as old as the latest point or older, or of an older run: a
	// retry, a reordering, or another agent claiming the same identity.
	stale
)

// orderOf places a point (start, ts) after a source's latest (start, ts). A
// start of 0 is unknown: it never begins a run of its own.
func orderOf(srcStart, srcTS, start, ts int64) order {
	switch {
	case ts <= srcTS:
		return stale
	case start == srcStart || start == 0 || srcStart == 0:
		return sameRun
	case start > srcStart:
		return newRun
	default:
		return stale
	}
}

// counterIncrement is how much a counter grew from last to v: all of v when
// it began a new run or went down (a reset: the counter restarted from zero).
func counterIncrement(o order, last, v float64) float64 {
	if o == newRun || v < last {
		return v
	}
	return v - last
}

// histogramReset reports whether a classic histogram's point restarted
// from zero: a new run, a count that went down or a bucket that did (as
// Prometheus reads it). The sum may go down: observations can be negative.
func histogramReset(o order, lastCount uint64, lastCum []uint64, count uint64, cum []uint64) bool {
	if o == newRun || count < lastCount || len(cum) != len(lastCum) {
		return true
	}
	for i, c := range cum {
		if c < lastCum[i] {
			return true
		}
	}
	return false
}
