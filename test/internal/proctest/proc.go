// Package proctest runs the processes of a system test — gateways, agents,
// Prometheus, a load balancer — each in its own process group with its output
// in a file that a failing test prints.
package proctest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Proc is a child process in its own process group.
type Proc struct {
	Name string
	Cmd  *exec.Cmd
	// Log is the file holding the process's stdout and stderr.
	Log  string
	done chan struct{}
	err  error // valid once done is closed
}

// Start runs bin with args (and env added to the test's environment) and
// registers its stop — SIGTERM to the whole group, SIGKILL after 10 s — with
// t.Cleanup, so it ends whether the test passes or not. The output goes to
// dir/name.log, appended to when a name is started again.
func Start(t testing.TB, dir, name string, env []string, bin string, args ...string) *Proc {
	t.Helper()
	p := &Proc{Name: name, Log: filepath.Join(dir, name+".log"), done: make(chan struct{})}
	out, err := os.OpenFile(p.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	require.NoError(t, err)
	p.Cmd = exec.Command(bin, args...)
	p.Cmd.Env = append(os.Environ(), env...)
	p.Cmd.Stdout, p.Cmd.Stderr = out, out
	// Its own group, so that a stop reaches anything it starts; Pdeathsig
	// ends it if the test binary dies without running its cleanups.
	p.Cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	require.NoError(t, p.Cmd.Start(), "starting %s", name)
	go func() {
		p.err = p.Cmd.Wait()
		out.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.Stop(t)
		if t.Failed() {
			t.Logf("--- %s output (last 60 lines):\n%s", name, Tail(p.Log, 60))
		}
	})
	return p
}

// Stop sends SIGTERM to the process group and waits for the exit, killing
// the group after 10 s.
func (p *Proc) Stop(t testing.TB) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		t.Errorf("%s did not stop within 10s of SIGTERM; killing it", p.Name)
		p.Kill()
	}
}

// Kill sends SIGKILL to the process group and waits for the exit.
func (p *Proc) Kill() {
	_ = syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// Signal sends sig to the process alone.
func (p *Proc) Signal(sig syscall.Signal) error { return p.Cmd.Process.Signal(sig) }

// Wait waits for the process to exit by itself and returns its status.
func (p *Proc) Wait(timeout time.Duration) error {
	select {
	case <-p.done:
		return p.err
	case <-time.After(timeout):
		return fmt.Errorf("%s still running after %s", p.Name, timeout)
	}
}

// Done closes when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Running reports an error if the process has already exited.
func (p *Proc) Running() error {
	select {
	case <-p.done:
		return fmt.Errorf("%s exited: %v", p.Name, p.err)
	default:
		return nil
	}
}

// Tail returns the last n lines of a file, or the error reading it.
func Tail(path string, n int) string {
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

// Poll calls check every 200 ms until it returns nil, and fails the test with
// check's last error when timeout passes first.
func Poll(t testing.TB, timeout time.Duration, what string, check func() error) {
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

// GoBuild builds the main package pkg (a path relative to the module root,
// e.g. "./cmd/grpcagent") into dir and returns the binary's path. moduleRoot
// is the module's directory relative to the calling test.
func GoBuild(t testing.TB, moduleRoot, pkg, dir string) string {
	t.Helper()
	// go test puts its toolchain's bin first on the PATH of the tests it runs.
	goBin, err := exec.LookPath("go")
	require.NoError(t, err)
	out := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.Command(goBin, "build", "-o", out, pkg)
	cmd.Dir = moduleRoot
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build %s:\n%s", pkg, b)
	return out
}

// Run runs a command to its end and returns its combined output.
func Run(bin string, args ...string) (string, error) {
	out, err := exec.Command(bin, args...).CombinedOutput()
	return string(out), err
}
