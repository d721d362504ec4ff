package retire

import (
	"time"

	"go.uber.org/zap"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
)

// Scrapes is what retirement asks of the scrapes: what each scraper has
// been shown (scrape.Scrapers) and when the latest encoding began
// (scrape.Coalescer).
type Scrapes interface {
	// Release is what every scraper has been shown by now (store clock).
	Release(now int64) store.Release
	// RegularCount is how many scrapers scrape regularly.
	RegularCount(now int64) int
	// LastStamp is the stamp of the latest encoding.
	LastStamp() int64
}

// Reason is why series were removed.
type Reason uint8

const (
	// Expired: nobody updated them for metric_expiration.
	Expired Reason = iota
	// Departed: another gateway of the fleet now receives their agent.
	Departed
)

// Settings are what a Retirement works with.
type Settings struct {
	Store   *store.Store
	Scrapes Scrapes
	// Expiration is metric_expiration.
	Expiration time.Duration
	// Now is the store clock; NewTicker paces the sweep (tests replace
	// both).
	Now       func() int64
	NewTicker func(time.Duration) (<-chan time.Time, func())
	Logger    *zap.Logger
	// Removed counts the series removed, by reason.
	Removed func(reason Reason, n int)
}

// Retirement runs the sweep and the departures in the background from
// Start to Stop; Drain runs at shutdown.
type Retirement struct {
	s       Settings
	departs chan departure
	quit    chan struct{}
	done    chan struct{}
}

// New returns a Retirement that does nothing until Start; departures asked
// for before wait for it.
func New(s Settings) *Retirement {
	return &Retirement{s: s, departs: make(chan departure, departBacklog)}
}

// Start begins the sweep and the departures.
func (r *Retirement) Start() {
	r.quit, r.done = make(chan struct{}), make(chan struct{})
	tick, stop := r.s.NewTicker(SweepInterval(r.s.Expiration))
	go func() {
		defer close(r.done)
		defer stop()
		r.run(tick)
	}()
}

// Stop ends the sweep and the departures; departures not applied yet are
// left to expiry.
func (r *Retirement) Stop() {
	if r.quit == nil {
		return
	}
	close(r.quit)
	<-r.done
	r.quit, r.done = nil, nil
}

// run sweeps on every tick and applies departures as they come, on one
// goroutine: both remove series, and neither waits for the other long.
func (r *Retirement) run(sweepTick <-chan time.Time) {
	d := departures{r: r, pending: map[*store.Resource]*departing{}}
	defer d.stopPoll()
	for {
		select {
		case <-r.quit:
			return
		case <-sweepTick:
			r.sweep()
		case dep := <-r.departs:
			d.apply(dep)
		case <-d.poll:
			d.release()
		}
	}
}
