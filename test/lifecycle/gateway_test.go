package lifecycle

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func binary(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("STATSGATE_BINARY")
	if bin == "" {
		t.Skip("STATSGATE_BINARY is not set; run `make test`, which builds the distro first")
	}
	return bin
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

func portOf(t *testing.T, addr string) string {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	return port
}

// syncBuffer collects the gateway's output, which the process writes while
// the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type gateway struct {
	cmd     *exec.Cmd
	logs    *syncBuffer
	done    chan struct{}
	exitErr error
}

// startGateway runs the distro on cfgFile; the process is stopped in
// t.Cleanup whatever happens to the test.
func startGateway(t *testing.T, bin, cfgFile string) *gateway {
	t.Helper()
	g := &gateway{logs: &syncBuffer{}, done: make(chan struct{})}
	g.cmd = exec.Command(bin, "--config", cfgFile)
	g.cmd.Stdout, g.cmd.Stderr = g.logs, g.logs
	require.NoError(t, g.cmd.Start())
	go func() {
		g.exitErr = g.cmd.Wait()
		close(g.done)
	}()
	t.Cleanup(func() {
		select {
		case <-g.done:
		default:
			_ = g.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-g.done:
			case <-time.After(15 * time.Second):
				_ = g.cmd.Process.Kill()
				<-g.done
				t.Error("gateway did not stop within 15s of SIGTERM")
			}
		}
		if t.Failed() {
			t.Logf("gateway output:\n%s", g.logs.String())
		}
	})
	return g
}

// stop sends SIGTERM and returns how long the process took to exit.
func (g *gateway) stop(t *testing.T, bound time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	require.NoError(t, g.cmd.Process.Signal(syscall.SIGTERM))
	return g.waitExit(t, start, bound)
}

// waitExit waits for the process to exit with status 0 within bound of
// since, and returns how long after since it exited.
func (g *gateway) waitExit(t *testing.T, since time.Time, bound time.Duration) time.Duration {
	t.Helper()
	select {
	case <-g.done:
	case <-time.After(time.Until(since.Add(bound))):
		t.Fatalf("gateway did not exit within %v of SIGTERM", bound)
	}
	elapsed := time.Since(since)
	require.NoError(t, g.exitErr, "gateway did not exit cleanly")
	return elapsed
}

func waitHealthy(t *testing.T, g *gateway, url string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-g.done:
			t.Fatalf("gateway exited during start: %v", g.exitErr)
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

var httpClient = &http.Client{Timeout: 10 * time.Second}

// scrape fetches a Prometheus text exposition and parses it with expfmt,
// as a Prometheus server would have to. took is the HTTP exchange alone,
// without the parsing.
func scrape(url string) (fams map[string]*dto.MetricFamily, size int, took time.Duration, err error) {
	start := time.Now()
	resp, err := httpClient.Get(url)
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

// value sums a family's counter, gauge or untyped values over the metrics
// whose labels include every pair in match.
func value(fams map[string]*dto.MetricFamily, name string, match map[string]string) (float64, bool) {
	fam, ok := fams[name]
	if !ok {
		return 0, false
	}
	var sum float64
	found := false
metrics:
	for _, m := range fam.GetMetric() {
		for k, v := range match {
			if labelValue(m, k) != v {
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

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// waitLog waits until the gateway has logged want at least n times.
func waitLog(t *testing.T, g *gateway, want string, n int, bound time.Duration) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for strings.Count(g.logs.String(), want) < n {
		if time.Now().After(deadline) {
			t.Fatalf("gateway did not log %q (%d times) within %v", want, n, bound)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// assertCleanShutdown checks the log of a gateway that has exited: the
// service completed its shutdown, and nothing panicked or logged an error.
func assertCleanShutdown(t *testing.T, g *gateway) {
	t.Helper()
	logs := g.logs.String()
	assert.Contains(t, logs, "Shutdown complete.")
	assert.NotContains(t, logs, "panic")
	for line := range strings.Lines(logs) {
		if strings.Contains(line, "\terror\t") {
			t.Errorf("error logged: %s", line)
		}
	}
}

// assertPortsFree checks every address can be bound again.
func assertPortsFree(t *testing.T, addrs ...string) {
	t.Helper()
	for _, addr := range addrs {
		ln, err := net.Listen("tcp", addr)
		if assert.NoError(t, err, "port %s still held after the gateway exited", addr) {
			_ = ln.Close()
		}
	}
}
