package store // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"

// Snapshot is a copy of the state a text scrape needs of one series, taken
// under the family's read lock so that formatting happens after it is
// released: ingestion then waits for a copy, never for formatting.
type Snapshot struct {
	Labels     string // immutable once created
	Timestamp  int64
	Value      float64
	Count      uint64
	Bounds     *Bounds  // interned and never changed
	Cumulative []uint64 // in the Snapshots scratch
	Quantiles  []Quantile
}

// SnapshotScratch holds the reusable buffers of Snapshots.
type SnapshotScratch struct {
	snaps     []Snapshot
	counts    []uint64
	quantiles []Quantile
}

// Snapshots calls fn with copies of the family's series, a chunk at a time;
// the slice and its contents are valid only during the call. A new run of
// deltas is copied as r says (see Series.Shown): as its zero, or not at all.
func (f *Family) Snapshots(sc *SnapshotScratch, r Release, fn func([]Snapshot)) {
	for start := 0; ; start += chunk {
		f.mu.RLock()
		end := min(start+chunk, len(f.series))
		sc.snaps, sc.counts, sc.quantiles = sc.snaps[:0], sc.counts[:0], sc.quantiles[:0]
		for _, s := range f.series[start:max(start, end)] {
			shown := s.Shown(r)
			if shown == ShowNothing {
				continue
			}
			snap := Snapshot{Labels: s.Labels, Timestamp: s.Timestamp, Value: s.Value, Count: s.Count}
			held := shown == ShowZero
			if held {
				snap.Timestamp, snap.Value, snap.Count = s.HeldTimestamp(), 0, 0
			}
			if h := s.Histogram; h != nil {
				from := len(sc.counts)
				if held {
					sc.counts = append(sc.counts, make([]uint64, len(h.Cumulative))...)
				} else {
					sc.counts = append(sc.counts, h.Cumulative...)
				}
				snap.Bounds, snap.Cumulative = h.Bounds, sc.counts[from:len(sc.counts):len(sc.counts)]
			}
			if len(s.Quantiles) > 0 {
				from := len(sc.quantiles)
				sc.quantiles = append(sc.quantiles, s.Quantiles...)
				snap.Quantiles = sc.quantiles[from:len(sc.quantiles):len(sc.quantiles)]
			}
			sc.snaps = append(sc.snaps, snap)
		}
		more := end < len(f.series)
		f.mu.RUnlock()
		fn(sc.snaps)
		if !more {
			return
		}
	}
}
