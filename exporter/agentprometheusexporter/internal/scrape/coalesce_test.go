package scrape

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var key = Key{Format: "text/plain; version=0.0.4"}

// gatedEncoding writes size bytes, numbered by encoding, after its gate opens.
type gatedEncoding struct {
	size  int
	gate  chan struct{}
	calls atomic.Int32
}

func (g *gatedEncoding) encode(w io.Writer, _ int64) error {
	n := g.calls.Add(1)
	<-g.gate
	_, err := w.Write(body(g.size, byte(n)))
	return err
}

func body(size int, b byte) []byte { return bytes.Repeat([]byte{b}, size) }

type served struct {
	buf bytes.Buffer
	res Result
	err error
}

// noDeadline is a connection that never blocks, so deadlines do not matter.
type noDeadline struct{ io.Writer }

func (noDeadline) SetWriteDeadline(time.Time) error { return nil }

func serve(c *Coalescer, ctx context.Context, enc Encode, w Conn) chan *served {
	out := make(chan *served, 1)
	go func() {
		s := new(served)
		if w == nil {
			w = noDeadline{&s.buf}
		}
		s.res, s.err = c.Serve(ctx, key, enc, w)
		out <- s
	}()
	return out
}

// waitPending waits until n scrapes wait behind the running encoding.
func waitPending(t *testing.T, c *Coalescer, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.pending[key] != nil && len(c.pending[key].members) == n
	}, 5*time.Second, time.Millisecond)
}

func TestScrapesDuringAnEncodingShareTheNextOne(t *testing.T) {
	c := New(time.Second, wallNow)
	g := &gatedEncoding{size: 3*chunkSize + 17, gate: make(chan struct{})}
	first := serve(c, context.Background(), g.encode, nil)
	require.Eventually(t, func() bool { return g.calls.Load() == 1 }, 5*time.Second, time.Millisecond)

	var later []chan *served
	for range 3 {
		later = append(later, serve(c, context.Background(), g.encode, nil))
	}
	waitPending(t, c, 3)
	close(g.gate)

	s := <-first
	require.NoError(t, s.err)
	assert.False(t, s.res.Shared)
	assert.Equal(t, body(g.size, 1), s.buf.Bytes())
	shared := 0
	began := map[int64]int{}
	for _, ch := range later {
		s := <-ch
		require.NoError(t, s.err)
		began[s.res.Began]++
		assert.Equal(t, body(g.size, 2), s.buf.Bytes(), "every later scrape reads the second encoding whole")
		assert.Equal(t, int64(g.size), s.res.Bytes)
		if s.res.Shared {
			shared++
		}
	}
	assert.Equal(t, 2, shared, "one later scrape starts the second encoding, two share it")
	require.Len(t, began, 1, "the scrapes of one encoding report when it began")
	for b := range began {
		assert.Greater(t, b, s.res.Began, "the second encoding began after the first")
	}
	assert.Equal(t, int32(2), g.calls.Load(), "four scrapes, two encodings")
	c.mu.Lock()
	defer c.mu.Unlock()
	assert.Empty(t, c.running)
	assert.Empty(t, c.pending)
}

// stalledConn takes nothing until released, like a client that stopped
// reading; a write blocked on it ends at its deadline, as on a socket.
type stalledConn struct {
	release chan struct{}

	mu        sync.Mutex
	deadline  time.Time
	moved     chan struct{} // closed when the deadline moves
	deadlines []time.Time   // every deadline set, in order
}

func newStalledConn() *stalledConn {
	return &stalledConn{release: make(chan struct{}), moved: make(chan struct{})}
}

func (s *stalledConn) SetWriteDeadline(t time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deadline = t
	s.deadlines = append(s.deadlines, t)
	close(s.moved)
	s.moved = make(chan struct{})
	return nil
}

func (s *stalledConn) Write(p []byte) (int, error) {
	for {
		s.mu.Lock()
		deadline, moved := s.deadline, s.moved
		s.mu.Unlock()
		expired := make(<-chan time.Time)
		if !deadline.IsZero() {
			expired = time.After(time.Until(deadline))
		}
		select {
		case <-s.release:
			return len(p), nil
		case <-expired:
			return 0, os.ErrDeadlineExceeded
		case <-moved:
		}
	}
}

func (s *stalledConn) lastDeadline() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.deadlines[len(s.deadlines)-1]
}

func TestAStalledScraperIsCutOffAndDoesNotHoldTheOthers(t *testing.T) {
	// Generous: a fast reader must never look stalled on a loaded machine.
	const stall = 500 * time.Millisecond
	c := New(stall, wallNow)
	g := &gatedEncoding{size: (queueLen + 4) * chunkSize, gate: make(chan struct{})}
	holder := serve(c, context.Background(), g.encode, nil)
	require.Eventually(t, func() bool { return g.calls.Load() == 1 }, 5*time.Second, time.Millisecond)

	stalled := newStalledConn()
	slow := serve(c, context.Background(), g.encode, stalled)
	fast := serve(c, context.Background(), g.encode, nil)
	waitPending(t, c, 2)
	close(g.gate)
	require.NoError(t, (<-holder).err)

	// The stalled writer is released only after this: the fast scraper
	// finishing at all shows the encoding went on without the stalled one.
	s := <-fast
	require.NoError(t, s.err)
	assert.Equal(t, body(g.size, 2), s.buf.Bytes())

	close(stalled.release)
	s = <-slow
	require.ErrorIs(t, s.err, ErrTooSlow)
	assert.True(t, s.res.Started)
	assert.Less(t, s.res.Bytes, int64(g.size))
}

func TestAScraperThatStopsReadingIsCutOffEvenWhenNobodyWaits(t *testing.T) {
	const stall = 200 * time.Millisecond
	c := New(stall, wallNow)
	// Small enough for the scraper's queue: the encoder never waits for it.
	g := &gatedEncoding{size: 2 * chunkSize, gate: make(chan struct{})}
	close(g.gate)
	stalled := newStalledConn()
	defer close(stalled.release)

	start := time.Now()
	select {
	case s := <-serve(c, context.Background(), g.encode, stalled):
		require.ErrorIs(t, s.err, ErrTooSlow)
		assert.True(t, s.res.Started)
		assert.Zero(t, s.res.Bytes)
		assert.GreaterOrEqual(t, time.Since(start), stall)
	case <-time.After(5 * time.Second):
		t.Fatal("a scraper that stopped reading held its write past the stall timeout")
	}
}

func TestEndingAScrapeUnblocksItsWriteAtOnce(t *testing.T) {
	c := New(time.Minute, wallNow) // only the end of the scrape can stop the write
	g := &gatedEncoding{size: 2 * chunkSize, gate: make(chan struct{})}
	close(g.gate)
	stalled := newStalledConn()
	defer close(stalled.release)

	ctx, cancel := context.WithCancel(context.Background())
	out := serve(c, ctx, g.encode, stalled)
	require.Eventually(t, func() bool {
		stalled.mu.Lock()
		defer stalled.mu.Unlock()
		return len(stalled.deadlines) > 0
	}, 5*time.Second, time.Millisecond, "the write never started")
	cancel()
	select {
	case s := <-out:
		require.ErrorIs(t, s.err, context.Canceled)
		assert.True(t, s.res.Started)
	case <-time.After(5 * time.Second):
		t.Fatal("the scrape ended but its write stayed blocked")
	}
}

func TestAWholeScrapeHandsBackTheScrapesDeadline(t *testing.T) {
	g := &gatedEncoding{size: 3 * chunkSize, gate: make(chan struct{})}
	close(g.gate)
	flowing := func() *stalledConn {
		c := newStalledConn()
		close(c.release)
		return c
	}

	deadline := time.Now().Add(time.Hour)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	conn := flowing()
	s := <-serve(New(time.Second, wallNow), ctx, g.encode, conn)
	require.NoError(t, s.err)
	assert.Equal(t, deadline, conn.lastDeadline(), "the rest of the response is bounded by the scrape's deadline")
	for _, d := range conn.deadlines[:len(conn.deadlines)-1] {
		assert.True(t, d.Before(time.Now().Add(time.Second)), "each write is bounded by the stall timeout")
	}

	conn = flowing()
	s = <-serve(New(time.Second, wallNow), context.Background(), g.encode, conn)
	require.NoError(t, s.err)
	assert.True(t, conn.lastDeadline().IsZero(), "no deadline is left behind on a kept-alive connection")
}

func TestAScrapeThatGivesUpWhileWaitingLeavesTheRound(t *testing.T) {
	c := New(time.Second, wallNow)
	g := &gatedEncoding{size: 10, gate: make(chan struct{})}
	holder := serve(c, context.Background(), g.encode, nil)
	require.Eventually(t, func() bool { return g.calls.Load() == 1 }, 5*time.Second, time.Millisecond)

	ctx, cancel := context.WithCancel(context.Background())
	quitter := serve(c, ctx, g.encode, nil)
	stayer := serve(c, context.Background(), g.encode, nil)
	waitPending(t, c, 2)
	cancel()
	s := <-quitter
	require.ErrorIs(t, s.err, context.Canceled)
	assert.False(t, s.res.Started)
	waitPending(t, c, 1)

	close(g.gate)
	require.NoError(t, (<-holder).err)
	s = <-stayer
	require.NoError(t, s.err)
	assert.Equal(t, body(10, 2), s.buf.Bytes())
}

func TestAnEncodingNobodyReadsStops(t *testing.T) {
	c := New(time.Second, wallNow)
	stopped := make(chan error, 1)
	endless := func(w io.Writer, _ int64) error {
		b := make([]byte, 64<<10)
		for {
			if _, err := w.Write(b); err != nil {
				stopped <- err
				return err
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	s := <-serve(c, ctx, endless, noDeadline{io.Discard})
	require.ErrorIs(t, s.err, context.DeadlineExceeded)
	select {
	case err := <-stopped:
		require.ErrorIs(t, err, errNoReaders)
	case <-time.After(5 * time.Second):
		t.Fatal("the encoding went on with no scraper reading it")
	}
}

func TestAnEncodingErrorReachesEveryScraper(t *testing.T) {
	c := New(time.Second, wallNow)
	boom := errors.New("boom")
	gate := make(chan struct{})
	var once sync.Once
	enc := func(w io.Writer, _ int64) error {
		once.Do(func() { <-gate })
		_, _ = w.Write([]byte("partial"))
		return boom
	}
	first := serve(c, context.Background(), enc, nil)
	waitRunning(t, c)
	second := serve(c, context.Background(), enc, nil)
	third := serve(c, context.Background(), enc, nil)
	waitPending(t, c, 2)
	close(gate)
	for _, ch := range []chan *served{first, second, third} {
		s := <-ch
		require.ErrorIs(t, s.err, boom)
		assert.False(t, s.res.Started, "the partial chunk was never flushed")
	}
}

func waitRunning(t *testing.T, c *Coalescer) {
	t.Helper()
	require.Eventually(t, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.running[key] != nil
	}, 5*time.Second, time.Millisecond)
}

func wallNow() int64 { return time.Now().UnixNano() }
