package lifecycle

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/statsgate/statsgate/test/internal/gatewaytest"
)

// waitLog waits until the gateway has logged want at least n times.
func waitLog(t *testing.T, g *gatewaytest.Gateway, want string, n int, bound time.Duration) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for strings.Count(g.Logs.String(), want) < n {
		if time.Now().After(deadline) {
			t.Fatalf("gateway did not log %q (%d times) within %v", want, n, bound)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// assertCleanShutdown checks the log of a gateway that has exited: the
// service completed its shutdown, and nothing panicked or logged an error.
func assertCleanShutdown(t *testing.T, g *gatewaytest.Gateway) {
	t.Helper()
	logs := g.Logs.String()
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
