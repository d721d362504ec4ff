package retire

import "time"

// SweepInterval is how often expired series are removed: often enough that
// a series outlives metric_expiration by at most a quarter of it (down to
// an expiration of 400 ms), and at most a minute. A longer floor let the
// series of agents that left pile up over more than one expiration when
// the expiration is short (BenchmarkChurn's heap growth).
func SweepInterval(expiration time.Duration) time.Duration {
	return min(max(expiration/4, 100*time.Millisecond), time.Minute)
}

// sweep removes the series nobody updated for metric_expiration.
func (r *Retirement) sweep() {
	cutoff := r.s.Now() - int64(r.s.Expiration)
	if n := r.s.Store.Sweep(cutoff); n > 0 {
		r.s.Removed(Expired, n)
	}
}
