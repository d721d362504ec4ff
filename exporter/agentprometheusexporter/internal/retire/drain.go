package retire

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
)

// drainPoll is how often a drain looks whether the scrapers have come.
const drainPoll = 20 * time.Millisecond

// Drain waits, for at most timeout, until every regular scraper has taken
// the deltas accumulated since its last scrape: they exist nowhere else,
// and a gateway that stops before that loses them. It runs after the
// receivers stopped, so nothing new arrives meanwhile. A scrape shows a new
// run of deltas only after two others (store.Series.Shown): the drain
// first waits until every run shows its value, then for a scrape of every
// scraper that began after the last delta and after that.
func (r *Retirement) Drain(ctx context.Context, timeout time.Duration) {
	deltas := r.s.Store.DeltasAt()
	if timeout <= 0 || deltas == 0 || r.s.Scrapes.RegularCount(r.s.Now()) == 0 {
		return
	}
	began := time.Now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	r.s.Logger.Info("Waiting for scrapers to take the last deltas", zap.Duration("drain_timeout", timeout))
	runs := r.s.Store.RunAt()
	if !r.waitRelease(ctx, func(rel store.Release) bool { return rel.Value >= runs }) {
		return
	}
	after := max(deltas, r.s.Now(), r.s.Scrapes.LastStamp()) + 1
	if r.waitRelease(ctx, func(rel store.Release) bool { return rel.Zero >= after }) {
		r.s.Logger.Info("Scrapers took the last deltas", zap.Duration("waited", time.Since(began)))
	}
}

// waitRelease waits until the scrapers' release satisfies done, and reports
// whether that happened before ctx ended.
func (r *Retirement) waitRelease(ctx context.Context, done func(store.Release) bool) bool {
	t := time.NewTicker(drainPoll)
	defer t.Stop()
	for !done(r.s.Scrapes.Release(r.s.Now())) {
		select {
		case <-ctx.Done():
			r.s.Logger.Warn("Stopping before every scraper took the last deltas; their values since the last scrape are lost",
				zap.Error(ctx.Err()))
			return false
		case <-t.C:
		}
	}
	return true
}
