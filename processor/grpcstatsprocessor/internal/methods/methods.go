// Package methods bounds the distinct RPC methods kept per service, so that
// clients calling made-up method names cannot explode cardinality.
package methods // import "github.com/statsgate/statsgate/processor/grpcstatsprocessor/internal/methods"

import (
	"sync"

	"github.com/gobwas/glob"
)

// maxServices bounds the services tracked; beyond it new services are not
// guarded (their methods pass), rather than growing without bound.
const maxServices = 10_000

// Guard keeps at most max methods per service, plus any allowed method.
type Guard struct {
	max   int
	other string
	allow []glob.Glob

	mu       sync.Mutex
	services map[string]map[string]struct{}
}

// New returns a guard; other is the method name that replaces the excess.
func New(max int, allow []string, other string) (*Guard, error) {
	g := &Guard{max: max, other: other, services: map[string]map[string]struct{}{}}
	for _, p := range allow {
		c, err := glob.Compile(p)
		if err != nil {
			return nil, err
		}
		g.allow = append(g.allow, c)
	}
	return g, nil
}

// Method returns the method to write for a call of service, and whether it
// was collapsed into the other method.
func (g *Guard) Method(service, method string) (string, bool) {
	if g == nil || g.max == 0 {
		return method, false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	known := g.services[service]
	if known == nil {
		if len(g.services) >= maxServices {
			return method, false
		}
		known = map[string]struct{}{}
		g.services[service] = known
	}
	if _, ok := known[method]; ok {
		return method, false
	}
	for _, a := range g.allow {
		if a.Match(method) {
			return method, false
		}
	}
	if len(known) >= g.max {
		return g.other, true
	}
	known[method] = struct{}{}
	return method, false
}
