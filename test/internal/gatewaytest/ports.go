package gatewaytest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"sync"
	"testing"
)

// handedOut holds the addresses FreeAddr returned: two processes of one
// test must not be told the same port.
var handedOut sync.Map

// FreeAddr is a loopback address nothing listens on (TCP or UDP, as a
// fleet's gossip takes both), and that no earlier call in this process
// returned. Its port is below the kernel's ephemeral range: a port of that
// range, released for a process to bind later, can meanwhile become the
// local port of any outgoing connection (Prometheus's scrapes, the agents'
// exports), and the process then fails to start with "address already in
// use".
func FreeAddr(t testing.TB) string {
	t.Helper()
	low, high := portsOutsideEphemeral()
	for range 10_000 {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(low+rand.IntN(high-low)))
		if _, taken := handedOut.LoadOrStore(addr, true); taken {
			continue
		}
		if free(addr) {
			return addr
		}
	}
	t.Fatalf("no free port from %d to %d", low, high)
	return ""
}

// free reports whether addr can be bound for TCP and for UDP.
func free(addr string) bool {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	defer ln.Close()
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		return false
	}
	return pc.Close() == nil
}

// firstPort is the lowest port FreeAddr hands out: above the registered
// ports services on a test machine tend to listen on.
const firstPort = 20_000

// portsOutsideEphemeral is the range FreeAddr picks from: from firstPort to
// the start of the ephemeral range (ip_local_port_range, 32768 by default
// on Linux, which is also what it assumes when it cannot read it).
func portsOutsideEphemeral() (low, high int) {
	high = 32_768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		var lo, hi int
		if _, err := fmt.Sscan(string(b), &lo, &hi); err == nil && lo > firstPort+1_000 {
			high = lo
		}
	}
	return firstPort, high
}
