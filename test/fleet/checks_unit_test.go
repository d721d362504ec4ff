package fleet

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFindingsAreOneLineEach(t *testing.T) {
	var f findings
	assert.Equal(&f, 307.0, 436.0, "%s: total", "fleet_operations_total{instance=\"a\"}")
	require.Len(t, f.msgs, 1)
	m := f.msgs[0]
	assert.NotContains(t, m, "\n")
	assert.NotContains(t, m, "Error Trace")
	assert.True(t, strings.HasPrefix(m, `fleet_operations_total{instance="a"}: total (`), "the message first, which the control counts: %q", m)
	assert.Contains(t, m, "expected: 307 actual : 436")
}
