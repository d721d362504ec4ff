// Package gatewaytest runs the built otelcol-statsgate distribution in
// tests: start it on a config, wait for health, scrape and parse /metrics,
// stop it and time the exit.
package gatewaytest

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
)

// Binary is the distro under test, from STATSGATE_BINARY; the test skips without it.
func Binary(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("STATSGATE_BINARY")
	if bin == "" {
		t.Skip("STATSGATE_BINARY is not set; run `make test`, which builds the distro first")
	}
	return bin
}

// PortOf is the port of addr.
func PortOf(t testing.TB, addr string) string {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	return port
}

// SyncBuffer collects the gateway's output, which the process writes while
// the test reads it.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Gateway is a running distro process.
type Gateway struct {
	Cmd  *exec.Cmd
	Logs *SyncBuffer
	// Done closes when the process has exited; ExitErr is then its status.
	Done    chan struct{}
	ExitErr error
}

// Start runs the distro on cfgFile; the process is stopped in
// t.Cleanup whatever happens to the test.
func Start(t *testing.T, bin, cfgFile string) *Gateway {
	t.Helper()
	g := &Gateway{Logs: &SyncBuffer{}, Done: make(chan struct{})}
	g.Cmd = exec.Command(bin, "--config", cfgFile)
	g.Cmd.Stdout, g.Cmd.Stderr = g.Logs, g.Logs
	require.NoError(t, g.Cmd.Start())
	go func() {
		g.ExitErr = g.Cmd.Wait()
		close(g.Done)
	}()
	t.Cleanup(func() {
		select {
		case <-g.Done:
		default:
			_ = g.Cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-g.Done:
			case <-time.After(15 * time.Second):
				_ = g.Cmd.Process.Kill()
				<-g.Done
				t.Error("gateway did not stop within 15s of SIGTERM")
			}
		}
		if t.Failed() {
			t.Logf("gateway output:\n%s", g.Logs.String())
		}
	})
	return g
}

// Stop sends SIGTERM and returns how long the process took to exit.
func (g *Gateway) Stop(t *testing.T, bound time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	require.NoError(t, g.Cmd.Process.Signal(syscall.SIGTERM))
	return g.WaitExit(t, start, bound)
}

// WaitExit waits for the process to exit with status 0 within bound of
// since, and returns how long after since it exited.
func (g *Gateway) WaitExit(t *testing.T, since time.Time, bound time.Duration) time.Duration {
	t.Helper()
	select {
	case <-g.Done:
	case <-time.After(time.Until(since.Add(bound))):
		t.Fatalf("gateway did not exit within %v of SIGTERM", bound)
	}
	elapsed := time.Since(since)
	require.NoError(t, g.ExitErr, "gateway did not exit cleanly")
	return elapsed
}

// WaitHealthy waits until url answers 200, failing if the process exits first.
func WaitHealthy(t *testing.T, g *Gateway, url string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-g.Done:
			t.Fatalf("gateway exited during start: %v", g.ExitErr)
		default:
		}
		if resp, err := http.Get(url); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("health check never answered 200")
}

// HTTPClient bounds every request of the tests.
var HTTPClient = &http.Client{Timeout: 10 * time.Second}

// Scrape fetches a Prometheus text exposition and parses it with expfmt,
// as a Prometheus server would have to. took is the HTTP exchange alone,
// without the parsing.
func Scrape(url string) (fams map[string]*dto.MetricFamily, size int, took time.Duration, err error) {
	return ScrapeAccepting(url, "")
}

// ScrapeAccepting is Scrape asking for accept, a text format (none: the
// server's default).
func ScrapeAccepting(url, accept string) (fams map[string]*dto.MetricFamily, size int, took time.Duration, err error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, 0, 0, err
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	start := time.Now()
	resp, err := HTTPClient.Do(req)
	if err != nil {
		return nil, 0, time.Since(start), err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	took = time.Since(start)
	if err != nil {
		return nil, 0, took, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, len(body), took, fmt.Errorf("status %d: %.200s", resp.StatusCode, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err = parser.TextToMetricFamilies(bytes.NewReader(body))
	return fams, len(body), took, err
}

// Value sums a family's counter, gauge or untyped values over the metrics
// whose labels include every pair in match.
func Value(fams map[string]*dto.MetricFamily, name string, match map[string]string) (float64, bool) {
	fam, ok := fams[name]
	if !ok {
		return 0, false
	}
	var sum float64
	found := false
metrics:
	for _, m := range fam.GetMetric() {
		for k, v := range match {
			if LabelValue(m, k) != v {
				continue metrics
			}
		}
		found = true
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Untyped != nil:
			sum += m.GetUntyped().GetValue()
		}
	}
	return sum, found
}

// LabelValue is the value of label name on m, or "".
func LabelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
