package scrape

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
)

// drainPoll is how often a drain looks whether the scrapers have come.
const drainPoll = 20 * time.Millisecond

// Deltas is how a gateway's runs of deltas reach its scrapers: the store
// that holds them, who scrapes (Scrapers) and the stamps of the encodings
// they were served (Coalescer).
type Deltas struct {
	Store     *store.Store
	Scrapers  *Scrapers
	Coalescer *Coalescer
	Now       func() int64 // the store clock
	Logger    *zap.Logger
}

// Drain waits, for at most timeout, until every regular scraper has taken
// the deltas accumulated since its last scrape: they exist nowhere else,
// and a gateway that stops before that loses them. It runs after the
// receivers stopped, so nothing new arrives meanwhile. A scrape shows a new
// run of deltas only after two others (store.Series.Shown): the drain
// first waits until every run shows its value, then for a scrape of every
// scraper that began after the last delta and after that.
func (d *Deltas) Drain(ctx context.Context, timeout time.Duration) {
	deltas := d.Store.DeltasAt()
	if timeout <= 0 || deltas == 0 || d.Scrapers.RegularCount(d.Now()) == 0 {
		return
	}
	began := time.Now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	d.Logger.Info("Waiting for scrapers to take the last deltas", zap.Duration("drain_timeout", timeout))
	runs := d.Store.RunAt()
	if !d.waitRelease(ctx, func(r store.Release) bool { return r.Value >= runs }) {
		return
	}
	after := max(deltas, d.Now(), d.Coalescer.LastStamp()) + 1
	if d.waitRelease(ctx, func(r store.Release) bool { return r.Zero >= after }) {
		d.Logger.Info("Scrapers took the last deltas", zap.Duration("waited", time.Since(began)))
	}
}

// waitRelease waits until the scrapers' release satisfies done, and reports
// whether that happened before ctx ended.
func (d *Deltas) waitRelease(ctx context.Context, done func(store.Release) bool) bool {
	t := time.NewTicker(drainPoll)
	defer t.Stop()
	for !done(d.Scrapers.Release(d.Now())) {
		select {
		case <-ctx.Done():
			d.Logger.Warn("Stopping before every scraper took the last deltas; their values since the last scrape are lost",
				zap.Error(ctx.Err()))
			return false
		case <-t.C:
		}
	}
	return true
}
