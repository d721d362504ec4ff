package gatewaytest

import (
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FreeAddr hands out distinct loopback ports below the ephemeral range that
// can be bound.
func TestFreeAddrIsBelowTheEphemeralRange(t *testing.T) {
	low, high := portsOutsideEphemeral()
	seen := map[string]bool{}
	for range 200 {
		addr := FreeAddr(t)
		require.False(t, seen[addr], "%s handed out twice", addr)
		seen[addr] = true
		port, err := strconv.Atoi(PortOf(t, addr))
		require.NoError(t, err)
		assert.GreaterOrEqual(t, port, low)
		assert.Less(t, port, high)
		ln, err := net.Listen("tcp", addr)
		require.NoError(t, err, addr)
		require.NoError(t, ln.Close())
	}
}

// A port something listens on, over TCP or over UDP, is not free.
func TestAPortInUseIsNotFree(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	assert.False(t, free(ln.Addr().String()), "TCP")

	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	defer pc.Close()
	assert.False(t, free(pc.LocalAddr().String()), "UDP")
}
