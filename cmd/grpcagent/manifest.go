package main

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/statsgate/statsgate/internal/agentmanifest"
	"github.com/statsgate/statsgate/internal/grpcstatus"
)

// statusName is the name rpc.status_code carries for c.
func statusName(c codes.Code) string {
	if n, ok := grpcstatus.Name(int64(c)); ok {
		return n
	}
	return c.String()
}

type callKey struct{ method, status string }

// tally counts calls from the server's and the client's goroutines.
type tally struct {
	mu    sync.Mutex
	calls map[callKey]*agentmanifest.Calls
}

func newTally() *tally { return &tally{calls: map[callKey]*agentmanifest.Calls{}} }

func (t *tally) get(method string, c codes.Code) *agentmanifest.Calls {
	k := callKey{method, statusName(c)}
	e, ok := t.calls[k]
	if !ok {
		e = &agentmanifest.Calls{Method: k.method, Status: k.status}
		t.calls[k] = e
	}
	return e
}

func (t *tally) server(method string, c codes.Code) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.get(method, c).Server++
}

func (t *tally) client(method string, c codes.Code, took time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.get(method, c)
	e.Client++
	e.ClientSeconds += took.Seconds()
}

// sorted returns the counts by method, then status.
func (t *tally) sorted() []agentmanifest.Calls {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]agentmanifest.Calls, 0, len(t.calls))
	for _, e := range t.calls {
		out = append(out, *e)
	}
	slices.SortFunc(out, func(a, b agentmanifest.Calls) int {
		return cmp.Or(cmp.Compare(a.Method, b.Method), cmp.Compare(a.Status, b.Status))
	})
	return out
}
