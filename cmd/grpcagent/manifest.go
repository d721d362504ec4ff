package main

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
)

// Manifest is what the agent did, written when it exits so that a test
// compares what the gateway shows against the agent's own counts.
type Manifest struct {
	Service     string          `json:"service"`
	Gateway     string          `json:"gateway"`
	SlowMethod  string          `json:"slow_method"`
	SlowSeconds float64         `json:"slow_seconds"`
	Agents      []AgentManifest `json:"agents"`
}

// AgentManifest is one simulated agent's calls.
type AgentManifest struct {
	InstanceID string  `json:"service_instance_id"`
	Rounds     int     `json:"rounds"`
	Calls      []Calls `json:"calls"`
}

// Calls counts one method × status. Server is what the server's interceptor
// saw its handlers return, Client what the client's calls returned.
type Calls struct {
	Method string `json:"method"`
	Status string `json:"status"`
	Server int    `json:"server"`
	Client int    `json:"client"`
	// ClientSeconds is the wall time of the client calls, summed: an upper
	// bound for the durations either side records for them.
	ClientSeconds float64 `json:"client_seconds"`
}

// statusNames are the gRPC status code names as the protocol spells them,
// which is how rpc.response.status_code carries them.
var statusNames = map[codes.Code]string{
	codes.OK:                 "OK",
	codes.Canceled:           "CANCELLED",
	codes.Unknown:            "UNKNOWN",
	codes.InvalidArgument:    "INVALID_ARGUMENT",
	codes.DeadlineExceeded:   "DEADLINE_EXCEEDED",
	codes.NotFound:           "NOT_FOUND",
	codes.AlreadyExists:      "ALREADY_EXISTS",
	codes.PermissionDenied:   "PERMISSION_DENIED",
	codes.ResourceExhausted:  "RESOURCE_EXHAUSTED",
	codes.FailedPrecondition: "FAILED_PRECONDITION",
	codes.Aborted:            "ABORTED",
	codes.OutOfRange:         "OUT_OF_RANGE",
	codes.Unimplemented:      "UNIMPLEMENTED",
	codes.Internal:           "INTERNAL",
	codes.Unavailable:        "UNAVAILABLE",
	codes.DataLoss:           "DATA_LOSS",
	codes.Unauthenticated:    "UNAUTHENTICATED",
}

func statusName(c codes.Code) string {
	if n, ok := statusNames[c]; ok {
		return n
	}
	return c.String()
}

type callKey struct{ method, status string }

// tally counts calls from the server's and the client's goroutines.
type tally struct {
	mu    sync.Mutex
	calls map[callKey]*Calls
}

func newTally() *tally { return &tally{calls: map[callKey]*Calls{}} }

func (t *tally) get(method string, c codes.Code) *Calls {
	k := callKey{method, statusName(c)}
	e, ok := t.calls[k]
	if !ok {
		e = &Calls{Method: k.method, Status: k.status}
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
func (t *tally) sorted() []Calls {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Calls, 0, len(t.calls))
	for _, e := range t.calls {
		out = append(out, *e)
	}
	slices.SortFunc(out, func(a, b Calls) int {
		return cmp.Or(cmp.Compare(a.Method, b.Method), cmp.Compare(a.Status, b.Status))
	})
	return out
}
