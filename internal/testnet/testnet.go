// Package testnet gives tests loopback addresses to listen on.
package testnet // import "github.com/statsgate/statsgate/internal/testnet"

import (
	"math/rand/v2"
	"net"
	"strconv"
	"testing"
)

// Ports are drawn from [lowPort, lowPort+ports): below the kernel's
// ephemeral range (32768 and up). A port of that range, freed here, can be
// taken by any outgoing connection (a fleet's joins, another package's
// test) before the caller binds it, while no connection and no ":0"
// listener takes a port below it.
const (
	lowPort = 20000
	ports   = 12000
)

// FreePort returns a loopback port that nothing listens on, TCP or UDP (a
// fleet's gossip takes both).
func FreePort(tb testing.TB) int {
	tb.Helper()
	for range 100 {
		port := lowPort + rand.IntN(ports)
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		pc, err := net.ListenPacket("udp", addr)
		_ = ln.Close()
		if err != nil {
			continue
		}
		_ = pc.Close()
		return port
	}
	tb.Fatalf("no free port from %d to %d on 127.0.0.1", lowPort, lowPort+ports-1)
	return 0
}

// FreeEndpoint is FreePort as host:port.
func FreeEndpoint(tb testing.TB) string {
	tb.Helper()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(FreePort(tb)))
}
