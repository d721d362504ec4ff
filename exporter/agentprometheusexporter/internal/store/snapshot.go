package store // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"

// Snapshot is a copy of the state a scrape needs of one series, taken under
// the family's read lock so that formatting happens after it is released:
// ingestion then waits for a copy, never for formatting. Slices point into
// the SnapshotScratch and are valid only during the Snapshots callback.
type Snapshot struct {
	Labels    LabelSet // immutable once created (see Series.Labels)
	Timestamp int64    // unix nanoseconds
	// Start is the created timestamp in unix nanoseconds, 0 when unknown.
	Start int64
	// Held is set for the zero of a new run of deltas (Series.Shown):
	// Value, Count and every bucket are zero, Timestamp is HeldTimestamp.
	Held bool

	Value float64 // gauge or counter value; the sum of a histogram or summary
	Count uint64  // observations of a histogram or summary

	Bounds     *Bounds  // interned and never changed; nil unless an explicit-bucket histogram
	Cumulative []uint64 // one per bound
	Native     *NativeSnapshot
	Quantiles  []Quantile
	Exemplars  []Exemplar
}

// NativeSnapshot is the copy of an exponential histogram.
type NativeSnapshot struct {
	Schema        int32
	ZeroThreshold float64
	ZeroCount     uint64
	Positive      Buckets // Counts in the scratch
	Negative      Buckets
}

// SnapshotScratch holds the reusable buffers of Snapshots.
type SnapshotScratch struct {
	snaps     []Snapshot
	counts    []uint64
	quantiles []Quantile
	exemplars []Exemplar
	natives   []NativeSnapshot
}

// Snapshots calls fn with copies of the family's series, a chunk at a time;
// the slice and its contents are valid only during the call. A new run of
// deltas is copied as r says (see Series.Shown): as its zero, or not at all.
func (f *Family) Snapshots(sc *SnapshotScratch, r Release, fn func([]Snapshot)) {
	for start, more := 0, true; more; {
		sc.Reset()
		start, more = f.AppendSnapshots(sc, r, start, chunk)
		fn(sc.snaps)
	}
}

// AppendSnapshots appends to sc copies of at most max series (at most a
// chunk) from position start, under one hold of the read lock, and returns
// the position after them and whether the family has series beyond it. A
// caller that walks a family this way, forward and from one goroutine,
// never copies a series twice (see remove).
func (f *Family) AppendSnapshots(sc *SnapshotScratch, r Release, start, max int) (next int, more bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	end := min(start+min(max, chunk), len(f.series))
	for _, s := range f.series[min(start, end):end] {
		shown := s.Shown(r)
		if shown == ShowNothing {
			continue
		}
		sc.snaps = append(sc.snaps, Snapshot{})
		sc.copy(&sc.snaps[len(sc.snaps)-1], s, shown == ShowZero)
	}
	return end, end < len(f.series)
}

// Snaps returns the snapshots appended since the last Reset.
func (sc *SnapshotScratch) Snaps() []Snapshot { return sc.snaps }

// Reset forgets the snapshots, keeping the buffers.
func (sc *SnapshotScratch) Reset() {
	sc.snaps, sc.counts, sc.quantiles = sc.snaps[:0], sc.counts[:0], sc.quantiles[:0]
	sc.exemplars, sc.natives = sc.exemplars[:0], sc.natives[:0]
}

// copy takes what a scrape needs of s into snap, a zero Snapshot in place
// in the scratch rather than one returned and copied there: once per series
// of every scrape (BenchmarkWriteProtobuf). Slices into the scratch stay
// valid when a later append moves the scratch: they keep the array they
// point into.
func (sc *SnapshotScratch) copy(snap *Snapshot, s *Series, held bool) {
	snap.Labels, snap.Timestamp, snap.Start, snap.Value, snap.Count, snap.Held = s.Labels, s.Timestamp, s.Start, s.Value, s.Count, held
	if held {
		snap.Timestamp, snap.Value, snap.Count = s.HeldTimestamp(), 0, 0
	}
	if h := s.Histogram; h != nil {
		snap.Bounds, snap.Cumulative = h.Bounds, sc.appendCounts(h.Cumulative, held)
	}
	if n := s.Native(); n != nil {
		ns := NativeSnapshot{Schema: n.Schema, ZeroThreshold: n.ZeroThreshold}
		if !held {
			ns.ZeroCount = n.ZeroCount
			ns.Positive = Buckets{Offset: n.Positive.Offset, Counts: sc.appendCounts(n.Positive.Counts, false)}
			ns.Negative = Buckets{Offset: n.Negative.Offset, Counts: sc.appendCounts(n.Negative.Counts, false)}
		}
		sc.natives = append(sc.natives, ns)
		snap.Native = &sc.natives[len(sc.natives)-1]
	}
	if q := s.Quantiles(); len(q) > 0 && !held {
		from := len(sc.quantiles)
		sc.quantiles = append(sc.quantiles, q...)
		snap.Quantiles = sc.quantiles[from:len(sc.quantiles):len(sc.quantiles)]
	}
	if e := s.Exemplars(); len(e) > 0 && !held {
		from := len(sc.exemplars)
		sc.exemplars = append(sc.exemplars, e...)
		snap.Exemplars = sc.exemplars[from:len(sc.exemplars):len(sc.exemplars)]
	}
}

func (sc *SnapshotScratch) appendCounts(counts []uint64, zero bool) []uint64 {
	from := len(sc.counts)
	if zero {
		sc.counts = append(sc.counts, make([]uint64, len(counts))...)
	} else {
		sc.counts = append(sc.counts, counts...)
	}
	return sc.counts[from:len(sc.counts):len(sc.counts)]
}
