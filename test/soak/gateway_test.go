package soak

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
)

func binary(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("STATSGATE_BINARY")
	if bin == "" {
		t.Skip("STATSGATE_BINARY is not set; run `make test` or `make soak`, which build the distro first")
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
	select {
	case <-g.done:
	case <-time.After(bound):
		t.Fatalf("gateway did not exit within %v of SIGTERM", bound)
	}
	elapsed := time.Since(start)
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

// goroutines reads the first line of a debug=1 goroutine profile:
// "goroutine profile: total N".
func goroutines(pprofURL string) (int, error) {
	resp, err := httpClient.Get(pprofURL + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	n, ok := strings.CutPrefix(strings.TrimSpace(line), "goroutine profile: total ")
	if !ok {
		return 0, fmt.Errorf("unexpected goroutine profile header %q", line)
	}
	return strconv.Atoi(n)
}

// liveHeap forces a GC in the gateway (gc=1) and reads HeapAlloc from the
// MemStats that a debug=1 heap profile ends with: the bytes still reachable,
// without the garbage that makes a plain heap reading swing by 2x. The
// least of three readings leaves out buffers that happen to be in use by a
// scrape or an export at the moment of one GC.
func liveHeap(pprofURL string) (float64, error) {
	least := math.Inf(1)
	for i := range 3 {
		if i > 0 {
			time.Sleep(100 * time.Millisecond)
		}
		v, err := heapAfterGC(pprofURL)
		if err != nil {
			return 0, err
		}
		least = min(least, v)
	}
	return least, nil
}

func heapAfterGC(pprofURL string) (float64, error) {
	resp, err := httpClient.Get(pprofURL + "/debug/pprof/heap?gc=1&debug=1")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "# HeapAlloc = "); ok {
			_, _ = io.Copy(io.Discard, resp.Body)
			return strconv.ParseFloat(v, 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no HeapAlloc in the heap profile")
}
