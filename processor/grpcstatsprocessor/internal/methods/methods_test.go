package methods

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGuard(t *testing.T) {
	g, err := New(2, []string{"grpc.health.v1.Health/*"}, "_OTHER")
	require.NoError(t, err)
	call := func(service, method string) string { m, _ := g.Method(service, method); return m }
	assert.Equal(t, "a/A", call("svc", "a/A"))
	assert.Equal(t, "a/B", call("svc", "a/B"))
	assert.Equal(t, "_OTHER", call("svc", "a/C"))
	assert.Equal(t, "a/A", call("svc", "a/A"), "known methods stay")
	assert.Equal(t, "grpc.health.v1.Health/Check", call("svc", "grpc.health.v1.Health/Check"), "allowed")
	assert.Equal(t, "a/C", call("other-svc", "a/C"), "bounds are per service")

	off, err := New(0, nil, "_OTHER")
	require.NoError(t, err)
	for i := range 1000 {
		m, collapsed := off.Method("svc", string(rune('a'+i%26)))
		assert.False(t, collapsed, m)
	}
}
