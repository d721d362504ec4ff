package testnet

import (
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FreePort hands out distinct ports below the ephemeral range, each of
// which can be bound.
func TestFreePortsAreDistinctAndBelowTheEphemeralRange(t *testing.T) {
	seen := map[int]bool{}
	for range 500 {
		port := FreePort(t)
		require.False(t, seen[port], "port %d handed out twice", port)
		seen[port] = true
		assert.GreaterOrEqual(t, port, lowPort)
		assert.Less(t, port, 32768)
	}
	ln, err := net.Listen("tcp", FreeEndpoint(t))
	require.NoError(t, err)
	require.NoError(t, ln.Close())
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

	assert.True(t, free(FreeEndpoint(t)))
}
