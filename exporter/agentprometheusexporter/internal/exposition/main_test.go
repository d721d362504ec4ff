package exposition

import (
	"testing"

	"go.uber.org/goleak"
)

// The scrape by parts runs workers of its own: none may outlive its scrape.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
