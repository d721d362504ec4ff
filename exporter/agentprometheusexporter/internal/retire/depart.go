package scrape

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

// Departures removes the series of resources that another gateway of a
// fleet now receives: cumulative and gauge series at once, those that
// accumulate deltas once every scraper has taken them, as Drain waits for
// them at shutdown.
type Departures struct {
	d       *Deltas
	removed func(n int) // counts the series removed
	in      chan departure
	quit    chan struct{}
	done    chan struct{}
}

// departure is a resource that another gateway now receives.
type departure struct {
	id      store.ID
	through int64 // the claim's point time
}

// departing is a departed resource whose delta series wait for the scrapers.
type departing struct {
	through int64
	held    store.Held
	// after is 0 until every held run shows its value; then the time after
	// which every scraper must have begun an encoding before they go.
	after int64
}

// StartDepartures applies departures on a goroutine of its own until Stop.
func StartDepartures(d *Deltas, removed func(n int)) *Departures {
	dep := &Departures{d: d, removed: removed, in: make(chan departure, departBacklog), quit: make(chan struct{}), done: make(chan struct{})}
	go dep.run()
	return dep
}

// Depart asks for the series of resource id not newer than through to go;
// false when the backlog is full.
func (dep *Departures) Depart(id store.ID, through int64) bool {
	select {
	case dep.in <- departure{id: id, through: through}:
		return true
	default:
		return false
	}
}

// Stop ends the goroutine; departures not applied yet are left to expiry.
func (dep *Departures) Stop() {
	close(dep.quit)
	<-dep.done
}

func (dep *Departures) run() {
	defer close(dep.done)
	st := dep.d.Store
	pending := map[*store.Resource]*departing{}
	// A plain ticker: it only paces the checks, which read the store clock.
	tick := time.NewTicker(departPoll)
	defer tick.Stop()
	for {
		select {
		case <-dep.quit:
			return
		case d := <-dep.in:
			r := st.ResourceByID(d.id)
			if r == nil {
				continue
			}
			removed, held := st.Depart(r, d.through)
			dep.removed(removed)
			if held.Series == 0 {
				continue
			}
			p := pending[r]
			if p == nil {
				p = &departing{}
				pending[r] = p
			}
			p.through = max(p.through, d.through)
			p.held.RunStarted = max(p.held.RunStarted, held.RunStarted)
			p.held.Updated = max(p.held.Updated, held.Updated)
			p.after = 0
		case <-tick.C:
			if len(pending) == 0 {
				continue
			}
			now := dep.d.Now()
			rel := dep.d.Scrapers.Release(now)
			for r, p := range pending {
				if p.after == 0 {
					if p.held.RunStarted != 0 && rel.Value < p.held.RunStarted {
						continue
					}
					// Stamps run ahead of a clock that has not moved
					// since (the Coalescer's): after the latest one too.
					p.after = max(p.held.Updated, now, dep.d.Coalescer.LastStamp()) + 1
				}
				if rel.Zero < p.after {
					continue
				}
				dep.removed(st.DropHeld(r, p.through))
				delete(pending, r)
			}
		}
	}
}
