package e2e

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"github.com/statsgate/statsgate/test/internal/gatewaytest"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// proc is a child process in its own process group, with its output in a
// file that the test prints when it fails.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error // valid once done is closed
}

// start runs a command and registers its stop (SIGTERM to the whole group,
// SIGKILL after 10s) with t.Cleanup, so it ends whether the test passes or not.
func start(t *testing.T, dir, name string, env []string, bin string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, log: filepath.Join(dir, name+".log"), done: make(chan struct{})}
	out, err := os.Create(p.log)
	require.NoError(t, err)
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = out, out
	// Its own group, so the stop reaches anything it starts; Pdeathsig ends it
	// if the test binary dies without running its cleanups (e.g. a timeout).
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	require.NoError(t, p.cmd.Start(), "starting %s", name)
	go func() {
		p.err = p.cmd.Wait()
		out.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.stop(t)
		if t.Failed() {
			t.Logf("--- %s output (last 60 lines):\n%s", name, tail(p.log, 60))
		}
	})
	return p
}

func (p *proc) stop(t *testing.T) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		t.Errorf("%s did not stop within 10s of SIGTERM; killing it", p.name)
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// wait waits for the process to exit by itself.
func (p *proc) wait(t *testing.T, timeout time.Duration) error {
	t.Helper()
	select {
	case <-p.done:
		return p.err
	case <-time.After(timeout):
		return fmt.Errorf("%s still running after %s", p.name, timeout)
	}
}

// running reports an error if the process has already exited.
func (p *proc) running() error {
	select {
	case <-p.done:
		return fmt.Errorf("%s exited: %v", p.name, p.err)
	default:
		return nil
	}
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// poll calls check every 200ms until it returns nil or timeout passes, and
// fails the test with check's last error then.
func poll(t *testing.T, timeout time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached within %s: %v", what, timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

func httpStatus(client *http.Client, req *http.Request) (int, []byte, error) {
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

func getStatus(url string) error {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	code, body, err := httpStatus(&http.Client{Timeout: 2 * time.Second}, req)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("%s: %d %s", url, code, bytes.TrimSpace(body))
	}
	return nil
}

// writeCert writes a self-signed certificate for 127.0.0.1 and its key, and
// returns a client that trusts it.
func writeCert(t *testing.T, dir string) (certFile, keyFile string, client *http.Client) {
	t.Helper()
	certFile, keyFile, pool := gatewaytest.WriteCert(t, dir)
	return certFile, keyFile, &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}
