package retire

import (
	"time"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
)

const (
	// departBacklog bounds the departures waiting to be applied; one more
	// is refused (and counted by the caller) and its resource expires
	// instead.
	departBacklog = 4096
	// departPoll is how often departed resources' held deltas are checked
	// against what the scrapers have taken.
	departPoll = 100 * time.Millisecond
)

// departure is a resource that another gateway now receives.
type departure struct {
	id      store.ID
	through int64 // the claim's point time
}

// Depart asks for the series of resource id not newer than through to go,
// as the fleet hears that another gateway holds newer points of it; false
// when the backlog is full.
func (r *Retirement) Depart(id store.ID, through int64) bool {
	select {
	case r.departs <- departure{id: id, through: through}:
		return true
	default:
		return false
	}
}

// departing is a departed resource whose delta series wait for the scrapers.
type departing struct {
	through int64
	held    store.Held
	// after is 0 until every held run shows its value; then the time after
	// which every scraper must have begun an encoding before they go.
	after int64
}

// departures are the departed resources whose deltas wait; poll ticks
// while there are any.
type departures struct {
	r       *Retirement
	pending map[*store.Resource]*departing
	poll    <-chan time.Time
	ticker  *time.Ticker
}

// apply removes the departed resource's cumulative and gauge series, and
// keeps its deltas until the scrapers have taken them.
func (d *departures) apply(dep departure) {
	st := d.r.s.Store
	res := st.ResourceByID(dep.id)
	if res == nil {
		return
	}
	removed, held := st.RemoveUpTo(res, dep.through)
	d.r.s.Removed(Departed, removed)
	if held.Series == 0 {
		return
	}
	p := d.pending[res]
	if p == nil {
		p = &departing{}
		d.pending[res] = p
	}
	p.through = max(p.through, dep.through)
	p.held.RunStarted = max(p.held.RunStarted, held.RunStarted)
	p.held.Updated = max(p.held.Updated, held.Updated)
	p.after = 0
	if d.ticker == nil {
		// A plain ticker: it only paces the checks, which read the store
		// clock.
		d.ticker = time.NewTicker(departPoll)
		d.poll = d.ticker.C
	}
}

// release removes the held deltas that every scraper has taken.
func (d *departures) release() {
	now := d.r.s.Now()
	rel := d.r.s.Scrapes.Release(now)
	for res, p := range d.pending {
		if p.after == 0 {
			if p.held.RunStarted != 0 && rel.Value < p.held.RunStarted {
				continue
			}
			// Stamps run ahead of a clock that has not moved since (the
			// Coalescer's): after the latest one too.
			p.after = max(p.held.Updated, now, d.r.s.Scrapes.LastStamp()) + 1
		}
		if rel.Zero < p.after {
			continue
		}
		d.r.s.Removed(Departed, d.r.s.Store.RemoveDeltasUpTo(res, p.through))
		delete(d.pending, res)
	}
	if len(d.pending) == 0 {
		d.stopPoll()
	}
}

func (d *departures) stopPoll() {
	if d.ticker != nil {
		d.ticker.Stop()
		d.ticker, d.poll = nil, nil
	}
}
