package store // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"

import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/prommodel" // Writer writes the points of one metric of one resource into a family. It
// holds the family's lock from Store.Write to Close and keeps the store's
// invariants for its caller: a family the sweep removed is never written,
// series are found first by the position hints of the resource's previous
// batch (agents send the same shape every time, so most points find their
// series without hashing), and the limits are applied.
type Writer struct {
	f     *Family
	res   *Resource
	now   int64
	hints *[]*Series
	pos   int // position of the next point in the metric
}

// Write opens family name for w: found, or created with this type, help and
// unit, and locked. It returns false, with nothing locked, when the family
// exists with another type or a new family's names clash with another's
// (see Family).
func (st *Store) Write(w *Writer, name string, kind prommodel.Kind, help, unit string, res *Resource, now int64) bool {
	for {
		f, ok := st.Family(name, kind, help, unit)
		if !ok {
			return false
		}
		f.lock()
		if !f.dead {
			*w = Writer{f: f, res: res, now: now, hints: f.hintsOf(res)}
			return true
		}
		f.mu.Unlock() // swept away meanwhile: look it up again
	}
}

// Family is the family being written.
func (w *Writer) Family() *Family { return w.f }

// Put returns the series of the next point, with these labels, creating it
// when the limits allow (see Outcome); the values are copied only then, and
// the series keeps l.Shared as it is.
func (w *Writer) Put(l *Labels) (*Series, Outcome) {
	pos := w.pos
	w.pos++
	if s := w.f.reuse(w.hints, pos, l, w.now); s != nil {
		return s, Updated
	}
	s, outcome := w.f.upsert(l, l.hash(), w.res, w.now)
	w.f.remember(w.hints, pos, s)
	return s, outcome
}

// Touch marks s, a series of the family, updated; false when it was
// removed meanwhile (expired), which a caller holding on to s learns here.
func (w *Writer) Touch(s *Series) bool {
	if s.removed {
		return false
	}
	s.updated = w.now
	return true
}

// Skip passes over a point that is not stored, keeping the position hints
// of the following points aligned.
func (w *Writer) Skip() { w.pos++ }

// Delete removes the series of the next point, if any: the point said the
// series ended.
func (w *Writer) Delete(l *Labels) bool {
	w.pos++
	return w.f.delete(l, l.hash())
}

// Close releases the family.
//
// A family left without series (every point of the metric refused, or a
// NoRecordedValue for a series it never had) is forgotten at once, as the
// sweep would forget it later: it would hold its name and type until then,
// and refuse a metric of the same name and another type as a conflict.
func (w *Writer) Close() {
	f := w.f
	empty := len(f.series) == 0
	f.mu.Unlock()
	*w = Writer{}
	if empty {
		f.store.forgetIfEmpty(f)
	}
}
