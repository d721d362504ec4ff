package scrape

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// Outcome is how a scrape ended.
type Outcome uint8

const (
	OutcomeServed Outcome = iota
	OutcomeShared
	OutcomeRefused
	OutcomeTimeout
	OutcomeTooSlow
	OutcomeFailed
	NumOutcomes
)

var outcomeNames = [NumOutcomes]string{"served", "shared", "refused", "timeout", "too_slow", "failed"}

func (o Outcome) String() string { return outcomeNames[o] }

// Observer hears of every scrape once it has ended: its format, how it
// ended and how long it took from its arrival. A refused scrape took no
// time.
type Observer interface {
	Scraped(f Format, o Outcome, took time.Duration)
}

// Settings are what a Handler serves with.
type Settings struct {
	Coalescer *Coalescer
	Encoder   *Encoder
	Scrapers  *Scrapers
	// OpenMetrics offers OpenMetrics to scrapers that ask for it.
	OpenMetrics bool
	// MaxConcurrent bounds the scrapes in flight; one more is answered 503.
	MaxConcurrent int
	// Timeout and WriteTimeout (the server's) bound a scrape, as does the
	// scraper's own timeout; 0 is no bound.
	Timeout, WriteTimeout time.Duration
	// Now is the store clock.
	Now      func() int64
	Logger   *zap.Logger
	Observer Observer
}

// Handler serves /metrics: it negotiates a scrape's format and compression,
// bounds it in time, serves it from the Coalescer's shared encodings and
// tells the Observer how it ended.
type Handler struct {
	s        Settings
	inflight atomic.Int64
	// closed ends when the handler is closed, cutting off scrapes still
	// running.
	closed context.Context
	close  context.CancelFunc
	// noDeadlines warns once when the server's middleware hides the
	// connection's write deadline, without which no scrape can be cut off.
	noDeadlines sync.Once
}

// NewHandler returns a Handler that serves until Close.
func NewHandler(s Settings) *Handler {
	h := &Handler{s: s}
	h.closed, h.close = context.WithCancel(context.Background())
	return h
}

// Close cuts off the scrapes still running; the server calls it once its
// shutdown grace is over.
func (h *Handler) Close() { h.close() }

// InFlight is how many scrapes are being served.
func (h *Handler) InFlight() int64 { return h.inflight.Load() }

// ServeHTTP answers one scrape in the format it negotiated. Scrapes beyond
// MaxConcurrent get a 503 at once; the others are served by the Coalescer,
// which shares one encoding between concurrent scrapes of the same format.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	arrived := h.s.Now()
	// All a scrape takes from its request, read once: who asks, how long
	// it may take, in what format and encoding.
	host := remoteHost(r.RemoteAddr)
	timeout := scrapeTimeout(h.s.Timeout, h.s.WriteTimeout, r.Header)
	format := Negotiate(r.Header, h.s.OpenMetrics)
	enc := NegotiateEncoding(r.Header.Get("Accept-Encoding"))
	if h.inflight.Add(1) > int64(h.s.MaxConcurrent) {
		h.inflight.Add(-1)
		h.s.Observer.Scraped(format, OutcomeRefused, 0)
		w.Header().Set("Retry-After", "1")
		http.Error(w, "too many concurrent scrapes", http.StatusServiceUnavailable)
		return
	}
	defer h.inflight.Add(-1)

	// The scrape ends when its client goes, its timeout passes or the
	// handler closes.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(h.closed, cancel)()
	rc := http.NewResponseController(w)
	if timeout > 0 {
		deadline := start.Add(timeout)
		var cancelTimeout context.CancelFunc
		ctx, cancelTimeout = context.WithDeadline(ctx, deadline)
		defer cancelTimeout()
		if err := rc.SetWriteDeadline(deadline); errors.Is(err, http.ErrNotSupported) {
			h.noDeadlines.Do(func() {
				h.s.Logger.Warn("The HTTP server's middleware hides the connection's write deadline: " +
					"scrapes that stall or run past their timeout cannot be cut off before the server's write_timeout")
			})
		}
	}

	header := w.Header()
	header.Set("Content-Type", string(format.ContentType))
	if enc != EncodingIdentity {
		header.Set("Content-Encoding", enc.String())
	}
	header.Add("Vary", "Accept-Encoding")
	// The coalescer bounds each write with the connection's deadline: a
	// write blocked on a stalled connection sees nothing else.
	conn := responseConn{ResponseWriter: w, rc: rc}
	res, err := h.s.Coalescer.Serve(ctx, Key{Format: string(format.ContentType), Encoding: enc.String()}, h.s.Encoder.For(format, enc), conn)

	if err == nil {
		h.s.Scrapers.Served(host, arrived, res.Began, h.s.Now())
	}
	outcome := outcomeOf(ctx, res, err)
	h.s.Observer.Scraped(format, outcome, time.Since(start))
	if err == nil {
		return
	}
	h.s.Logger.Debug("Scrape cut off", zap.Stringer("outcome", outcome), zap.Error(err))
	if !res.Started {
		header.Del("Content-Encoding")
		header.Del("Vary")
		http.Error(w, "scrape not served: "+outcome.String(), http.StatusServiceUnavailable)
		return
	}
	// Part of the body is out: close the connection without the final chunk,
	// so the scraper sees a failed scrape, not a short one that looks whole.
	panic(http.ErrAbortHandler)
}

// outcomeOf is how a scrape served by the Coalescer ended.
func outcomeOf(ctx context.Context, res Result, err error) Outcome {
	switch {
	case err == nil && res.Shared:
		return OutcomeShared
	case err == nil:
		return OutcomeServed
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded), ctx.Err() == context.DeadlineExceeded:
		return OutcomeTimeout
	case errors.Is(err, ErrTooSlow):
		return OutcomeTooSlow
	default:
		return OutcomeFailed
	}
}

// responseConn is a scrape's response as the coalescer writes it: through
// the handler's ResponseWriter, with the connection's write deadline reached
// through the ResponseController (which unwraps the server's middleware).
type responseConn struct {
	http.ResponseWriter
	rc *http.ResponseController
}

func (c responseConn) SetWriteDeadline(t time.Time) error { return c.rc.SetWriteDeadline(t) }

// scrapeTimeout is the shortest of scrape::timeout, the server's
// write_timeout and the scraper's own (Prometheus sends
// X-Prometheus-Scrape-Timeout-Seconds); 0 means none.
func scrapeTimeout(configured, writeTimeout time.Duration, h http.Header) time.Duration {
	timeout := configured
	shorten := func(d time.Duration) {
		if d > 0 && (timeout == 0 || d < timeout) {
			timeout = d
		}
	}
	shorten(writeTimeout)
	if secs, err := strconv.ParseFloat(h.Get("X-Prometheus-Scrape-Timeout-Seconds"), 64); err == nil && secs > 0 {
		shorten(time.Duration(secs * float64(time.Second)))
	}
	return timeout
}

// remoteHost is the address a scraper is known by: its host, without the
// port of the connection.
func remoteHost(addr string) string {
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return addr
}
