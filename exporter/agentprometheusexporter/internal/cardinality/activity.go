package cardinality // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/cardinality"

import (
	"sync"
	"time"
)

// Minutes is how many minutes of activity the view keeps, the current one
// included.
const Minutes = 15

// Change is what happened to series, counted by the exporter after each
// batch and each expiry sweep.
type Change struct {
	Created int64 `json:"created"`
	// Expired counts series the sweep removed after metric_expiration;
	// Ended those removed by a point flagged as having no recorded value.
	Expired int64   `json:"expired"`
	Ended   int64   `json:"ended"`
	Refused Refused `json:"refused"`
}

func (c Change) zero() bool { return c == Change{} }

func (c *Change) add(d Change) {
	c.Created += d.Created
	c.Expired += d.Expired
	c.Ended += d.Ended
	c.Refused.MaxSeries += d.Refused.MaxSeries
	c.Refused.MaxSeriesPerResource += d.Refused.MaxSeriesPerResource
}

// Refused counts series refused by each limit.
type Refused struct {
	MaxSeries            int64 `json:"max_series"`
	MaxSeriesPerResource int64 `json:"max_series_per_resource"`
}

// Total is the sum over the limits.
func (r Refused) Total() int64 { return r.MaxSeries + r.MaxSeriesPerResource }

// Changes counts the changes of the last Minutes minutes, one bucket per
// minute, and since the start. Recording takes a mutex once per batch that
// created, ended or refused series; a batch that only updates records nothing.
type Changes struct {
	mu      sync.Mutex
	minutes [Minutes]minute
	since   Change
}

type minute struct {
	start int64 // unix minute
	Change
}

// Record adds c to the minute of now.
func (a *Changes) Record(now time.Time, c Change) {
	if c.zero() {
		return
	}
	m := now.Unix() / 60
	a.mu.Lock()
	defer a.mu.Unlock()
	b := &a.minutes[m%Minutes]
	if b.start != m {
		*b = minute{start: m}
	}
	b.add(c)
	a.since.add(c)
}

// MinuteChange is the change of one minute.
type MinuteChange struct {
	Start time.Time `json:"start"`
	Change
}

// Last returns the last Minutes minutes up to now, oldest first, and the
// total since the start.
func (a *Changes) Last(now time.Time) ([]MinuteChange, Change) {
	m := now.Unix() / 60
	out := make([]MinuteChange, Minutes)
	a.mu.Lock()
	defer a.mu.Unlock()
	for i := range out {
		start := m - Minutes + 1 + int64(i)
		out[i].Start = time.Unix(start*60, 0).UTC()
		if b := a.minutes[start%Minutes]; b.start == start {
			out[i].Change = b.Change
		}
	}
	return out, a.since
}
