package agentprometheusexporter // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter"

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/scrape"
)

// maxStall is how long one write to a scraper may take, and so how long a
// scraper may hold up an encoding it shares with others, before it is cut off
// (never longer than the scrape timeout).
const maxStall = 2 * time.Second

func stallTimeout(scrapeTimeout time.Duration) time.Duration {
	if scrapeTimeout > 0 {
		return min(maxStall, scrapeTimeout)
	}
	return maxStall
}

// scrapeOutcome labels how a scrape ended in self-telemetry.
type scrapeOutcome int

const (
	outcomeServed scrapeOutcome = iota
	outcomeShared
	outcomeRefused
	outcomeTimeout
	outcomeTooSlow
	outcomeFailed
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"served", "shared", "refused", "timeout", "too_slow", "failed"}

// serveMetrics answers one scrape in the format it negotiated (expfmt's
// negotiation, as promhttp does). Scrapes beyond scrape::max_concurrent get a
// 503 at once; the others are served by the coalescer, which shares one
// encoding between concurrent scrapes of the same format.
func (e *agentPrometheusExporter) serveMetrics(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	arrived := e.clock.now().UnixNano()
	if e.inflight.Add(1) > int64(e.cfg.Scrape.MaxConcurrent) {
		e.inflight.Add(-1)
		e.countScrape(r.Context(), outcomeRefused)
		w.Header().Set("Retry-After", "1")
		http.Error(w, "too many concurrent scrapes", http.StatusServiceUnavailable)
		return
	}
	defer e.inflight.Add(-1)

	format := scrape.Negotiate(r.Header, e.cfg.EnableOpenMetrics)
	enc := scrape.NegotiateEncoding(r.Header.Get("Accept-Encoding"))

	// The scrape ends when its client goes, its timeout passes or the
	// exporter shuts down.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(e.serveCtx, cancel)()
	rc := http.NewResponseController(w)
	if timeout := scrapeTimeout(e.cfg.Scrape.Timeout, e.cfg.Server.WriteTimeout, r.Header); timeout > 0 {
		deadline := start.Add(timeout)
		var cancelTimeout context.CancelFunc
		ctx, cancelTimeout = context.WithDeadline(ctx, deadline)
		defer cancelTimeout()
		if err := rc.SetWriteDeadline(deadline); errors.Is(err, http.ErrNotSupported) {
			e.noDeadlines.Do(func() {
				e.set.Logger.Warn("The HTTP server's middleware hides the connection's write deadline: " +
					"scrapes that stall or run past their timeout cannot be cut off before the server's write_timeout")
			})
		}
	}

	h := w.Header()
	h.Set("Content-Type", string(format))
	if enc != scrape.EncodingIdentity {
		h.Set("Content-Encoding", enc.String())
	}
	h.Add("Vary", "Accept-Encoding")
	// The coalescer bounds each write with the connection's deadline: a
	// write blocked on a stalled connection sees nothing else.
	conn := responseConn{ResponseWriter: w, rc: rc}
	res, err := e.scrapes.Serve(ctx, scrape.Key{Format: string(format), Encoding: enc.String()}, e.encoder.For(format, enc), conn)

	if err == nil {
		e.scrapers.Served(remoteHost(r.RemoteAddr), arrived, res.Began, e.clock.now().UnixNano())
	}
	outcome := outcomeServed
	switch {
	case err == nil && res.Shared:
		outcome = outcomeShared
	case err == nil:
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded), ctx.Err() == context.DeadlineExceeded:
		outcome = outcomeTimeout
	case errors.Is(err, scrape.ErrTooSlow):
		outcome = outcomeTooSlow
	default:
		outcome = outcomeFailed
	}
	e.countScrape(r.Context(), outcome)
	e.recordScrapeDuration(r.Context(), format, time.Since(start))
	if err == nil {
		return
	}
	e.set.Logger.Debug("Scrape cut off", zap.String("outcome", outcomeNames[outcome]), zap.Error(err))
	if !res.Started {
		h.Del("Content-Encoding")
		h.Del("Vary")
		http.Error(w, "scrape not served: "+outcomeNames[outcome], http.StatusServiceUnavailable)
		return
	}
	// Part of the body is out: close the connection without the final chunk,
	// so the scraper sees a failed scrape, not a short one that looks whole.
	panic(http.ErrAbortHandler)
}

// responseConn is a scrape's response as the coalescer writes it: through
// the handler's ResponseWriter, with the connection's write deadline reached
// through the ResponseController (which unwraps the server's middleware).
type responseConn struct {
	http.ResponseWriter
	rc *http.ResponseController
}

func (c responseConn) SetWriteDeadline(t time.Time) error { return c.rc.SetWriteDeadline(t) }

func (e *agentPrometheusExporter) countScrape(ctx context.Context, o scrapeOutcome) {
	e.telemetry.ExporterAgentprometheusScrapes.Add(ctx, 1, e.attrs.outcome[o]...)
}

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
