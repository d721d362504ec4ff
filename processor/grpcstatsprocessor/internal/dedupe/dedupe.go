// Package dedupe remembers, per resource and concept, the highest-precedence
// dialect seen recently, so that a resource reporting the same calls through
// two dialects keeps one, within a batch and across batches.
//
// State is bounded: entries older than the window expire, and at most
// maxResources resources are remembered (beyond that, new resources are
// deduplicated within their batch only).
package dedupe // import "github.com/statsgate/statsgate/processor/grpcstatsprocessor/internal/dedupe"

import (
	"sync"

	"github.com/statsgate/statsgate/processor/grpcstatsprocessor/internal/dialect"
)

// Rank is a dialect's precedence: 0 is the highest. None means not seen.
type Rank int8

const None Rank = -1

// Seen holds, per concept, the best rank present.
type Seen [dialect.NumConcepts]Rank

// Clear resets every concept to None.
func (s *Seen) Clear() {
	for i := range s {
		s[i] = None
	}
}

// Note records a rank for a concept.
func (s *Seen) Note(c dialect.Concept, r Rank) {
	if s[c] == None || r < s[c] {
		s[c] = r
	}
}

type entry struct {
	best [dialect.NumConcepts]Rank
	at   [dialect.NumConcepts]int64 // when best was last seen, unix nanoseconds
}

// State is the bounded memory across batches.
type State struct {
	window       int64
	maxResources int

	mu        sync.Mutex
	resources map[uint64]*entry
	lastSweep int64
}

// New returns a state remembering dialects for window nanoseconds.
func New(window int64, maxResources int) *State {
	return &State{window: window, maxResources: maxResources, resources: map[uint64]*entry{}}
}

// Merge folds what a batch shows of a resource into the state and turns
// seen into the best rank per concept to keep: the best of the batch and of
// what the window remembers.
func (st *State) Merge(resource uint64, seen *Seen, now int64) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if now-st.lastSweep > st.window {
		st.sweep(now)
	}
	e := st.resources[resource]
	if e == nil {
		if len(st.resources) >= st.maxResources {
			return
		}
		e = &entry{}
		for i := range e.best {
			e.best[i] = None
		}
		st.resources[resource] = e
	}
	for c, r := range seen {
		remembered := e.best[c]
		if remembered != None && now-e.at[c] > st.window {
			remembered = None
		}
		switch {
		case r == None:
			seen[c] = remembered
		case remembered == None || r <= remembered:
			e.best[c], e.at[c] = r, now
		default:
			seen[c] = remembered
		}
	}
}

func (st *State) sweep(now int64) {
	st.lastSweep = now
	for k, e := range st.resources {
		alive := false
		for c := range e.best {
			if e.best[c] != None && now-e.at[c] <= st.window {
				alive = true
			}
		}
		if !alive {
			delete(st.resources, k)
		}
	}
}

// Len is the number of resources remembered.
func (st *State) Len() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.resources)
}
