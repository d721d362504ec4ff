// Package testnet gives tests loopback addresses to listen on.
package testnet // import "github.com/statsgate/statsgate/internal/testnet"

import (
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"testing"
)

// Ports are drawn from [lowPort, lowPort+ports): below the kernel's
// ephemeral range (32768 and up). A port of that range, freed here, can be
// taken by any outgoing connection (a fleet's joins, Prometheus's scrapes,
// another package's test) before the caller binds it, while no connection
// and no ":0" listener takes a port below it.
const (
	lowPort = 20000
	ports   = 12000
)

// handedOut holds the ports FreePort returned: a test that starts several
// processes takes all their ports before any of them binds one, and two
// must not be told the same.
var handedOut sync.Map

// FreePort returns a loopback port that nothing listens on, TCP or UDP (a
// fleet's gossip takes both), and that no earlier call in this process
// returned.
func FreePort(tb testing.TB) int {
	tb.Helper()
	for range 1000 {
		port := lowPort + rand.IntN(ports)
		if _, taken := handedOut.LoadOrStore(port, true); taken {
			continue
		}
		if free(net.JoinHostPort("127.0.0.1", strconv.Itoa(port))) {
			return port
		}
	}
	tb.Fatalf("no free port from %d to %d on 127.0.0.1", lowPort, lowPort+ports-1)
	return 0
}

// free reports whether addr can be bound for TCP and for UDP.
func free(addr string) bool {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	pc, err := net.ListenPacket("udp", addr)
	if err == nil {
		err = pc.Close()
	}
	return ln.Close() == nil && err == nil
}

// FreeEndpoint is FreePort as host:port.
func FreeEndpoint(tb testing.TB) string {
	tb.Helper()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(FreePort(tb)))
}
