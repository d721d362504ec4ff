package promtest

import (
	"errors"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// Exchange is what one scrape asked for and what it got.
type Exchange struct {
	Accept, AcceptEncoding string
	Status                 int
	ContentType            string
	ContentEncoding        string
}

// ScrapeProxy stands between Prometheus and a target and records the
// negotiation of every scrape: Prometheus's own API does not say which
// format it was served. Bodies pass through untouched, compressed or not.
type ScrapeProxy struct {
	// Addr is where Prometheus scrapes instead of the target.
	Addr string

	mu        sync.Mutex
	exchanges []Exchange
}

// NewScrapeProxy listens on a loopback port and forwards every request to
// target (host:port, plain HTTP) until the test ends.
func NewScrapeProxy(t testing.TB, target string) *ScrapeProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &ScrapeProxy{Addr: ln.Addr().String()}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(&url.URL{Scheme: "http", Host: target})
		},
		ModifyResponse: func(resp *http.Response) error {
			p.record(Exchange{
				Accept:          resp.Request.Header.Get("Accept"),
				AcceptEncoding:  resp.Request.Header.Get("Accept-Encoding"),
				Status:          resp.StatusCode,
				ContentType:     resp.Header.Get("Content-Type"),
				ContentEncoding: resp.Header.Get("Content-Encoding"),
			})
			return nil
		},
	}
	srv := &http.Server{Handler: rp}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("scrape proxy for %s: %v", target, err)
		}
	}()
	t.Cleanup(func() {
		srv.Close()
		<-done
	})
	return p
}

func (p *ScrapeProxy) record(e Exchange) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.exchanges = append(p.exchanges, e)
}

// Exchanges returns the scrapes recorded so far, oldest first.
func (p *ScrapeProxy) Exchanges() []Exchange {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.exchanges)
}
