package scrape // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/scrape"

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Key is what makes two scrapes shareable: identical bytes on the wire.
type Key struct {
	Format   string
	Encoding string // Content-Encoding, "" for identity
}

// Encode writes one complete exposition to w and stops at w's first error.
// began is the encoding's stamp, which every scrape that reads it gets in
// Result.Began.
type Encode func(w io.Writer, began int64) error

// Conn is a scraper's connection. A Write blocked on it returns once the
// deadline last set by SetWriteDeadline passes, as on a net.Conn or through
// an http.ResponseController; SetWriteDeadline may be called while a Write
// is in progress.
type Conn interface {
	io.Writer
	SetWriteDeadline(t time.Time) error
}

var (
	// ErrTooSlow cuts off a scraper that held the shared encoding for longer
	// than the stall timeout.
	ErrTooSlow = errors.New("scraper fell behind the shared encoding")
	// errNoReaders stops an encoding that nobody reads any more.
	errNoReaders = errors.New("every scraper of the encoding has gone")
)

const (
	// chunkSize matches the text writer's flush size: one chunk per flush.
	// Smaller chunks hold less memory during a scrape but slow scrapes
	// over HTTP (bench/exporterbench BenchmarkScrape; BENCHMARKS.md,
	// "Design measurements").
	chunkSize = 1 << 20
	// queueLen is how many chunks a scraper may lag before the encoder waits.
	queueLen = 4
)

// Result says how a scrape was served.
type Result struct {
	// Shared is true when the scrape joined an encoding another scrape started.
	Shared bool
	// Started is true once anything was written to the scraper's writer.
	Started bool
	// Bytes is what was written to the scraper.
	Bytes int64
	// Began is the clock reading at which the encoding the scrape read
	// began: it holds everything the store held then.
	Began int64
}

// Coalescer runs at most one encoding per Key at a time.
//
// Scrapes that ask for the same format (and compression) while an encoding
// of it is running wait for the next encoding and share it: N scrapers cost
// one encoder's CPU, not N, and so do not starve ingestion of the cores.
// The encoder runs on its own goroutine and hands each scraper the bytes in
// chunks; each scraper writes them to its own connection. A scraper that
// falls behind by more than queueLen chunks holds the encoder for at most the
// stall timeout, then is cut off, so one slow client cannot hold up the
// others or the encodings that wait behind its round. A write to a scraper
// that takes longer than the stall timeout cuts it off too, shared or not, so
// a scraper that stops reading holds its connection no longer than that.
type Coalescer struct {
	stall time.Duration
	now   func() int64
	// began is the stamp of the latest encoding: stamps only rise, so that
	// two encodings never share one, even on a coarse clock.
	began atomic.Int64

	mu      sync.Mutex
	running map[Key]*round // encoding now
	pending map[Key]*round // gathering scrapes for when the running one ends
}

// MaxStall is how long one write to a scraper may take, and so how long a
// scraper may hold up an encoding it shares with others, before it is cut
// off (never longer than the scrape timeout: StallTimeout).
const MaxStall = 2 * time.Second

// StallTimeout is the stall timeout of scrapes bounded by scrapeTimeout (0
// is no bound).
func StallTimeout(scrapeTimeout time.Duration) time.Duration {
	if scrapeTimeout > 0 {
		return min(MaxStall, scrapeTimeout)
	}
	return MaxStall
}

// New returns a Coalescer that cuts off a scraper after it has held the
// encoder for stall; now is the clock that stamps when encodings begin.
func New(stall time.Duration, now func() int64) *Coalescer {
	return &Coalescer{stall: stall, now: now, running: map[Key]*round{}, pending: map[Key]*round{}}
}

// round is one encoding and the scrapes that read it.
type round struct {
	key    Key
	encode Encode
	// members is appended to under Coalescer.mu until started, then fixed.
	members []*member
	started bool
	// err and began are written before the members' channels close, read after.
	err   error
	began int64
}

type member struct {
	conn     Conn
	chunks   chan *chunk
	gone     chan struct{} // closed when the member stops reading
	goneOnce sync.Once
	goneErr  error // set once, before gone closes
}

// leave ends m's scrape for err (the first reason given wins) and unblocks a
// write in progress on its connection at once.
func (m *member) leave(err error) {
	m.goneOnce.Do(func() {
		m.goneErr = err
		close(m.gone)
		_ = m.conn.SetWriteDeadline(time.Now())
	})
}

func (m *member) isGone() bool {
	select {
	case <-m.gone:
		return true
	default:
		return false
	}
}

// Serve writes one exposition for key to w, from a new encoding or one shared
// with concurrent scrapes of the same key. It returns when the exposition is
// written, ctx ends, w fails or a write to w takes longer than the stall
// timeout (ErrTooSlow). Serve owns w's write deadline while it runs: each
// write is bounded by the stall timeout and ctx's deadline, and the end of
// ctx or a cut by the encoder moves it to now. After a complete exposition
// the deadline is ctx's again (none if ctx has none), for the rest of the
// response. An error with Result.Started means the response is incomplete.
func (c *Coalescer) Serve(ctx context.Context, key Key, encode Encode, w Conn) (Result, error) {
	m := &member{conn: w, chunks: make(chan *chunk, queueLen), gone: make(chan struct{})}
	r, first := c.join(key, encode, m)
	res := Result{Shared: !first}
	deadline, _ := ctx.Deadline()
	// A write blocked on a stalled connection sees only its deadline: when
	// the scrape ends, leave moves it to now.
	defer context.AfterFunc(ctx, func() { m.leave(ctx.Err()) })()

	var werr error
	done := ctx.Done()
	for {
		select {
		case ch, ok := <-m.chunks:
			if !ok {
				res.Began = r.began
				if werr == nil && m.isGone() {
					werr = m.goneErr // cut off from the last chunk
				}
				if werr != nil {
					return res, werr
				}
				if r.err == nil {
					_ = w.SetWriteDeadline(deadline)
				}
				return res, r.err
			}
			if werr == nil && m.isGone() {
				werr = m.goneErr
			}
			if werr == nil {
				var n int
				res.Started = true
				n, werr = c.write(m, ch.b, deadline)
				res.Bytes += int64(n)
			}
			ch.release()
		case <-done:
			if c.withdraw(r, m) {
				return res, ctx.Err()
			}
			// The encoding has this member: read on until it closes the
			// channel, releasing what it sent.
			m.leave(ctx.Err())
			if werr == nil {
				werr = ctx.Err()
			}
			done = nil
		}
	}
}

// write writes b to m's connection within the stall timeout (or the scrape's
// deadline, if sooner). A write that runs out of the stall timeout cuts the
// scraper off with ErrTooSlow, one that runs out of the scrape's deadline
// returns the deadline error; a write cut short by leave returns the reason
// m was given to leave.
func (c *Coalescer) write(m *member, b []byte, deadline time.Time) (int, error) {
	cut := time.Now().Add(c.stall)
	stall := deadline.IsZero() || cut.Before(deadline)
	if !stall {
		cut = deadline
	}
	_ = m.conn.SetWriteDeadline(cut)
	// leave may have moved the deadline to now just before it was set
	// above; it closed gone first, so this sees it.
	if m.isGone() {
		return 0, m.goneErr
	}
	n, err := m.conn.Write(b)
	if err == nil {
		return n, nil
	}
	// If the write ran out of its own time, that is the reason, whatever
	// leave was told meanwhile: net/http cancels the context of a request
	// whose connection failed to write.
	if errors.Is(err, os.ErrDeadlineExceeded) && !time.Now().Before(cut) {
		if stall {
			err = ErrTooSlow
		}
		m.leave(err)
		return n, err
	}
	m.leave(err)
	return n, m.goneErr
}

// join adds m to the running round of key if there is none (and starts it),
// or else to the round that starts after it.
func (c *Coalescer) join(key Key, encode Encode, m *member) (r *round, first bool) {
	c.mu.Lock()
	if c.running[key] == nil {
		r = &round{key: key, encode: encode, members: []*member{m}, started: true}
		c.running[key] = r
		c.mu.Unlock()
		go c.run(r)
		return r, true
	}
	r = c.pending[key]
	if r == nil {
		r = &round{key: key, encode: encode}
		c.pending[key] = r
		first = true
	}
	r.members = append(r.members, m)
	c.mu.Unlock()
	return r, first
}

// withdraw removes m from r if r has not started, and reports whether it did.
func (c *Coalescer) withdraw(r *round, m *member) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.started {
		return false
	}
	for i, o := range r.members {
		if o == m {
			r.members = append(r.members[:i], r.members[i+1:]...)
			break
		}
	}
	if len(r.members) == 0 && c.pending[r.key] == r {
		delete(c.pending, r.key)
	}
	return true
}

// run encodes r and then every round that gathered behind it, one at a time.
func (c *Coalescer) run(r *round) {
	for r != nil {
		f := fanout{members: r.members, stall: c.stall}
		r.began = c.stamp()
		err := r.encode(&f, r.began)
		if err == nil {
			err = f.flush()
		}
		f.drop()
		r.err = err
		for _, m := range r.members {
			close(m.chunks)
		}

		c.mu.Lock()
		next := c.pending[r.key]
		delete(c.pending, r.key)
		if next == nil {
			delete(c.running, r.key)
		} else {
			next.started = true
			c.running[r.key] = next
		}
		c.mu.Unlock()
		r = next
	}
}

// LastStamp is the stamp of the latest encoding, 0 before the first: an
// encoding that begins after a moment must be stamped above both.
func (c *Coalescer) LastStamp() int64 { return c.began.Load() }

// stamp returns the clock reading for an encoding that begins now, above
// every earlier stamp.
func (c *Coalescer) stamp() int64 {
	for {
		last, now := c.began.Load(), c.now()
		next := max(now, last+1)
		if c.began.CompareAndSwap(last, next) {
			return next
		}
	}
}

// fanout is the encoder's writer: it fills chunks and hands each full one to
// every member still reading.
type fanout struct {
	members []*member
	stall   time.Duration
	cur     *chunk
	timer   *time.Timer
}

func (f *fanout) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		if f.cur == nil {
			f.cur = getChunk()
		}
		n := copy(f.cur.b[len(f.cur.b):cap(f.cur.b)], p)
		f.cur.b = f.cur.b[:len(f.cur.b)+n]
		p, written = p[n:], written+n
		if len(f.cur.b) == cap(f.cur.b) {
			if err := f.send(); err != nil {
				return written, err
			}
		}
	}
	return written, nil
}

func (f *fanout) flush() error {
	if f.cur == nil || len(f.cur.b) == 0 {
		return nil
	}
	return f.send()
}

// drop releases a chunk the encoding left unsent.
func (f *fanout) drop() {
	if f.cur != nil {
		f.cur.refs.Store(1)
		f.cur.release()
		f.cur = nil
	}
	if f.timer != nil {
		f.timer.Stop()
	}
}

// send hands the current chunk to every member still reading; a member whose
// queue stays full for the stall timeout is cut off.
func (f *fanout) send() error {
	ch := f.cur
	f.cur = nil
	// One reference per member, plus the sender's own until the loop ends.
	ch.refs.Store(int32(len(f.members)) + 1)
	readers := 0
	for _, m := range f.members {
		if m.isGone() {
			ch.release()
			continue
		}
		select {
		case m.chunks <- ch:
			readers++
			continue
		default:
		}
		if f.timer == nil {
			f.timer = time.NewTimer(f.stall)
		} else {
			f.timer.Reset(f.stall)
		}
		select {
		case m.chunks <- ch:
			readers++
		case <-m.gone:
			ch.release()
		case <-f.timer.C:
			m.leave(ErrTooSlow)
			ch.release()
		}
		f.timer.Stop()
	}
	ch.release()
	if readers == 0 {
		return errNoReaders
	}
	return nil
}

// chunk is a slice of the encoding shared by the members it was sent to.
type chunk struct {
	b    []byte
	refs atomic.Int32
}

var chunkPool = sync.Pool{New: func() any { return &chunk{b: make([]byte, 0, chunkSize)} }}

func getChunk() *chunk { return chunkPool.Get().(*chunk) }

func (ch *chunk) release() {
	if ch.refs.Add(-1) == 0 {
		ch.b = ch.b[:0]
		chunkPool.Put(ch)
	}
}
