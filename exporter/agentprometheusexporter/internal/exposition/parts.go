package exposition // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/exposition"

import (
	"io"
	"runtime"
	"sync"

	"github.com/prometheus/common/model"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/prommodel"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
)

// Codec encodes an exposition that is formatted in parts on several
// goroutines: each part is formatted into an encoder of its own on a worker,
// and the encoded parts are emitted in order, one at a time. Compressing
// each part where it is formatted keeps its bytes in that core's cache;
// handing formatted bytes to a compressor on another core costs a copy
// across cores per byte. Part is called from any worker; Begin, Emit and
// End never run at the same time as each other.
type Codec interface {
	// Begin writes what comes before the first part.
	Begin(w io.Writer) error
	// Part returns an encoder for one part. The worker writes the part's
	// formatted bytes to it, then closes it.
	Part() io.WriteCloser
	// Emit writes an encoded part to w; parts come in order, and p is not
	// used after.
	Emit(w io.Writer, p io.WriteCloser) error
	// End writes what comes after the last part.
	End(w io.Writer) error
}

// Parts is how an exposition is split: Workers goroutines format and
// encode parts of about PartLines lines each.
type Parts struct {
	Codec     Codec
	Workers   int
	PartLines int
}

// part is a stretch of an exposition: copies of consecutive series of one
// or more families, taken under the run's lock as a sequential scrape takes
// them (forward, so that no series is copied twice), then formatted and
// encoded by the worker that took them.
type part struct {
	seq int
	// scratch holds the part's series: the taking worker's, from take until
	// the part is formatted, so that parts waiting to be emitted hold only
	// their encoded bytes.
	scratch *store.SnapshotScratch
	spans   []span
	infos   []store.TargetInfo // target_info's series, in the first part only
	last    bool               // the format's close follows the part
	lines   int                // an estimate of the lines, to cut parts
	enc     io.WriteCloser
	err     error
	// For a sized format: lead is the bytes of the first span when it goes
	// on with a family begun in an earlier part; tail, when the last span
	// begins a family that goes on in a later part, encodes that span's
	// series (tailSize bytes), apart from enc, as the family's beginning
	// goes between them once its size is known.
	lead     int
	tail     io.WriteCloser
	tailSize int
}

// span is a family's series in a part, snaps[from:to] of its scratch; the
// series of one family in a part are one span.
type span struct {
	family   *store.Family
	header   bool // the family's first series: its beginning goes first
	cont     bool // the family may go on in the next part
	from, to int
}

var partPool = sync.Pool{New: func() any { return new(part) }}

// partStep is the most series copied per hold of a family's lock.
const partStep = 128

// partRun is one scrape by parts. Its workers are alike, the scrape's
// goroutine one of them: each takes the next part under the lock, formats
// and encodes it, and the worker that completes the oldest part emits it
// and the completed ones after it. No goroutine only waits to hand work
// over, so as many workers as cores keep the cores busy.
type partRun struct {
	w      io.Writer
	opts   Options
	scheme model.EscapingScheme
	format format
	parts  Parts
	// direct says that parts go straight to w as they are formatted, when
	// no family waits for its length (plainCodec with one worker), through
	// directEnc.
	direct    bool
	directEnc directPart

	workers sync.WaitGroup // the workers but the scrape's goroutine
	mu      sync.Mutex
	room    sync.Cond // a part was emitted, or the run failed
	// The next part's place in the store.
	infos  []store.TargetInfo
	fams   []*store.Family
	fam    int  // index in fams
	start  int  // position in fams[fam]
	header bool // fams[fam] has shown no series yet
	done   bool // the last part is taken
	// taken and emitted count parts; at most len(ready) are taken and not
	// emitted, which bounds a scrape's memory.
	taken, emitted int
	ready          []*part // completed parts by seq modulo len(ready)
	emitting       bool    // a worker is emitting
	err            error
	// open is the family of a sized format that the emitted parts began and
	// that goes on in the parts still to come, nil for none; openSize is
	// the size of its series so far, and held the encoded parts that wait
	// for its beginning. Only the emitting worker uses them.
	open     *store.Family
	openSize int
	held     []io.WriteCloser
}

func writeParts(w io.Writer, st *store.Store, opts Options, scheme model.EscapingScheme, f format, parts Parts) error {
	if err := parts.Codec.Begin(w); err != nil {
		return err
	}
	workers := max(parts.Workers, 1)
	r := runPool.Get().(*partRun)
	defer r.release()
	ready, held := r.ready, r.held
	if cap(ready) < 2*workers {
		ready = make([]*part, 2*workers)
	}
	_, plain := parts.Codec.(plainCodec)
	*r = partRun{
		w: w, opts: opts, scheme: scheme, format: f, parts: parts, direct: plain && workers == 1,
		infos: st.TargetInfos(), fams: st.Families(), header: true,
		ready: ready[:2*workers], held: held[:0],
	}
	r.directEnc.w = w
	r.room.L = &r.mu
	for range workers - 1 {
		r.workers.Go(r.work)
	}
	r.work()
	r.workers.Wait()
	if r.err != nil {
		return r.err
	}
	return parts.Codec.End(w)
}

// runPool recycles runs, with their slices: a scrape that is not split is
// a run too, and allocates nothing per series or family.
var runPool = sync.Pool{New: func() any { return new(partRun) }}

// release recycles the parts a failed run left and the run.
func (r *partRun) release() {
	for i, p := range r.ready {
		if p != nil {
			r.ready[i] = nil
			recycle(p)
		}
	}
	clear(r.held)
	r.w, r.format, r.parts, r.infos, r.fams, r.open, r.directEnc.w = nil, nil, Parts{}, nil, nil, nil, nil
	runPool.Put(r)
}

// work takes, formats and emits parts until there are none left.
func (r *partRun) work() {
	pool := partWriterPool
	if r.direct {
		pool = writerPool
	}
	t := newWriter(pool, nil, r.opts, r.scheme, r.format)
	defer t.release()
	for {
		r.mu.Lock()
		for r.err == nil && !r.done && r.taken-r.emitted == len(r.ready) {
			r.room.Wait()
		}
		if r.err != nil || r.done {
			r.mu.Unlock()
			return
		}
		p := r.take(&t.scratch)
		r.mu.Unlock()
		if r.direct && r.open == nil {
			// One worker emits every part before it takes the next: with
			// no family open, nothing written earlier waits.
			p.enc = &r.directEnc
		} else {
			p.enc = r.parts.Codec.Part()
		}
		t.formatPart(p, r.parts.Codec)
		r.complete(p, t)
		// A worker never waits while parts are left, so it would keep its
		// core until the scheduler preempts it (10 ms); yielding after each
		// part lets ingestion waiting for a core in within about a part's
		// time. A scrape that is not split leaves its one core to the
		// scheduler, as a sequential writer does: a yield per part made the
		// uncompressed scrape slower over HTTP (bench/exporterbench).
		if !r.direct {
			runtime.Gosched()
		}
	}
}

// take copies the next part's series out of the store into sc; r.mu is
// held.
func (r *partRun) take(sc *store.SnapshotScratch) *part {
	p := partPool.Get().(*part)
	sc.Reset()
	p.scratch = sc
	p.seq = r.taken
	r.taken++
	if p.seq == 0 {
		p.infos, p.lines = r.infos, len(r.infos)
	}
	step := partStep
	for r.fam < len(r.fams) {
		fam := r.fams[r.fam]
		from := len(p.scratch.Snaps())
		next, more := fam.AppendSnapshots(p.scratch, r.opts.Release, r.start, step)
		if snaps := p.scratch.Snaps(); len(snaps) > from {
			if n := len(p.spans); n > 0 && p.spans[n-1].family == fam {
				p.spans[n-1].to = len(snaps)
			} else {
				p.spans = append(p.spans, span{family: fam, header: r.header, from: from, to: len(snaps)})
			}
			r.header = false
			each := lines(&snaps[from])
			p.lines += each * (len(snaps) - from)
			// Near the part's size, copy only what fills it.
			step = min(partStep, max((r.parts.PartLines-p.lines)/each, 1))
		}
		if n := len(p.spans); n > 0 && p.spans[n-1].family == fam {
			p.spans[n-1].cont = more
		}
		if more {
			r.start = next
		} else {
			r.fam, r.start, r.header = r.fam+1, 0, true
		}
		if p.lines >= r.parts.PartLines {
			return p
		}
	}
	p.last, r.done = true, true
	return p
}

// complete files a formatted part and, unless another worker is at it,
// emits the parts that are next in order, with t, the worker's writer,
// free to write what goes between them.
func (r *partRun) complete(p *part, t *writer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ready[p.seq%len(r.ready)] = p
	if r.emitting {
		return
	}
	r.emitting = true
	for r.err == nil {
		i := r.emitted % len(r.ready)
		q := r.ready[i]
		if q == nil || q.seq != r.emitted {
			break
		}
		r.ready[i] = nil
		r.mu.Unlock()
		err := q.err
		if err == nil {
			err = r.emit(q, t)
		}
		recycle(q)
		r.mu.Lock()
		if err != nil {
			r.err = err
		}
		r.emitted++
		r.room.Broadcast()
	}
	r.emitting = false
}

// emit writes part q, the next in order. A family of a sized format that
// q begins and a later part goes on with is kept open: q's encoded tail and
// the later parts' encodings are held until the family's last part, and go
// out after its beginning (sizedFormat.head) once its size is known.
func (r *partRun) emit(q *part, t *writer) error {
	if r.open != nil {
		if len(q.spans) == 0 || q.spans[0].header {
			// The family's last series were not shown: it ended before q.
			if err := r.closeOpen(t); err != nil {
				return err
			}
		} else {
			r.openSize += q.lead
			if len(q.spans) == 1 && q.spans[0].cont {
				r.held = append(r.held, q.enc) // all of q goes on with the family
				q.enc = nil
				return nil
			}
			if err := r.closeOpen(t); err != nil {
				return err
			}
		}
	}
	err := r.parts.Codec.Emit(r.w, q.enc)
	q.enc = nil
	if err != nil {
		return err
	}
	if q.tail != nil {
		r.open, r.openSize = q.spans[len(q.spans)-1].family, q.tailSize
		r.held = append(r.held, q.tail)
		q.tail = nil
	}
	if q.last && r.open != nil {
		return r.closeOpen(t)
	}
	return nil
}

// closeOpen writes the open family's beginning, then the parts held for it.
func (r *partRun) closeOpen(t *writer) error {
	f := r.open
	enc := r.parts.Codec.Part()
	t.to(enc)
	t.enter(f.Name, f.Kind)
	t.sized.head(t, f.Help, r.openSize)
	t.flush()
	err := t.err
	if cerr := enc.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = r.parts.Codec.Emit(r.w, enc)
	}
	for i, h := range r.held {
		if err == nil {
			err = r.parts.Codec.Emit(r.w, h)
		}
		r.held[i] = nil
	}
	r.open, r.openSize, r.held = nil, 0, r.held[:0]
	return err
}

// recycle returns a part to the pool.
func recycle(p *part) {
	p.enc, p.err, p.infos, p.last, p.lines = nil, nil, nil, false, 0
	p.lead, p.tail, p.tailSize = 0, nil, 0
	p.spans = p.spans[:0]
	p.scratch = nil
	partPool.Put(p)
}

// lines estimates the lines of a series in the text formats.
func lines(s *store.Snapshot) int {
	return 1 + len(s.Cumulative) + len(s.Quantiles)
}

// newWriter takes a writer from pool (writerPool or partWriterPool) for one
// scrape.
func newWriter(pool *sync.Pool, w io.Writer, opts Options, scheme model.EscapingScheme, f format) *writer {
	t := pool.Get().(*writer)
	t.to(w)
	t.opts, t.scheme, t.format = opts, scheme, f
	t.sized, _ = f.(sizedFormat)
	_, t.isOM = f.(openMetrics)
	t.textual = t.sized == nil
	t.sets.recent = t.sets.recent[:0] // names escaped by another scrape's scheme
	t.pb.names = nil                  // found out under another scrape's scheme
	return t
}

// keepBuffer bounds the buffer a pooled writer or plain part keeps between
// scrapes: a sized format holds a whole family in it, and the largest family
// of a million series at the bench workload's shape is kept; a single family
// of millions of series is not.
const keepBuffer = 64 << 20

// release returns the writer to the pool.
func (t *writer) release() {
	t.w, t.format, t.sized = nil, nil, nil
	if cap(t.buf) > keepBuffer {
		t.buf = newBuffer(t.flushAt)
	}
	t.pool.Put(t)
}

// targetInfos writes the target_info family.
func (t *writer) targetInfos(infos []store.TargetInfo) {
	if len(infos) == 0 {
		return
	}
	t.family(t.opts.TargetInfoName, targetInfoHelp, prommodel.KindGauge)
	for _, ti := range infos {
		// In the writer, not on the stack: the formats take a pointer.
		t.info = store.Snapshot{Labels: ti.Labels, Timestamp: ti.Updated, Value: 1}
		if t.textual {
			t.sets.series(ti.Labels, t.scheme, &t.memo)
		}
		t.format.series(t, &t.info)
	}
	t.format.end(t)
}

// formatPart formats p into its encoder, and closes it. A sized format's
// family that goes on in another part is written without its beginning
// and end (partRun.emit): its series in a later part are counted in
// p.lead, and those in the part that begins it are encoded apart, in
// p.tail.
func (t *writer) formatPart(p *part, codec Codec) {
	t.to(p.enc)
	enc := p.enc
	t.targetInfos(p.infos)
	snaps := p.scratch.Snaps()
	for i, sp := range p.spans {
		fam := sp.family
		whole := t.sized == nil || sp.header && !sp.cont // begun and ended here
		switch {
		case sp.header && whole:
			t.family(fam.Name, fam.Help, fam.Kind)
		case sp.header: // a sized format's family that goes on
			t.flush()
			if cerr := enc.Close(); t.err == nil {
				t.err = cerr
			}
			err := t.err
			p.tail = codec.Part()
			enc = p.tail
			t.to(enc)
			t.err = err
			t.enter(fam.Name, fam.Kind)
		default:
			t.enter(fam.Name, fam.Kind)
		}
		start := t.written()
		for j := sp.from; j < sp.to; j++ {
			t.series(&snaps[j])
			t.spill()
		}
		switch {
		case whole && !sp.cont:
			t.format.end(t)
		case i == 0 && !sp.header:
			p.lead = t.written() - start
		case sp.header:
			p.tailSize = t.written() - start
		}
	}
	if p.last {
		t.format.close(t)
	}
	t.flush()
	if cerr := enc.Close(); t.err == nil {
		t.err = cerr
	}
	p.err = t.err
	p.scratch = nil // the worker's, for its next part
}
