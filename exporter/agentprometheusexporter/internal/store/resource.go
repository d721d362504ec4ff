package store // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"

import (
	"crypto/sha256"
	"sync"
	"sync/atomic"
)

// Resource is one agent as Prometheus sees it: its job and instance. Limits
// per resource and target_info hang off it.
type Resource struct {
	key string // job, 0xff, instance
	id  ID

	// targetInfo is the label set of its target_info series, nil when the
	// resource has no job or no instance (no target_info then).
	targetInfo atomic.Pointer[LabelSet]
	series     atomic.Int64
	updated    atomic.Int64 // store clock at the last batch from this resource
	card       resourceCounts

	// members are the resource's series by family, in no order
	// (Series.member is each one's position), so that a departure finds
	// them without a walk of every family; a series need not point to its
	// family. Taken after a family's lock, never before.
	mu      sync.Mutex
	members map[*Family][]*Series
}

// ID names a resource in the messages between gateways of a fleet: a hash
// of its key, of fixed size however long the job and instance are.
type ID [16]byte

// IDOf returns the ID of the resource with this key (job, 0xff, instance).
func IDOf(key []byte) ID {
	sum := sha256.Sum256(key)
	return ID(sum[:16])
}

// ID is the resource's ID.
func (r *Resource) ID() ID { return r.id }

// join adds s, of family f, to the resource's members. Call with f locked.
func (r *Resource) join(f *Family, s *Series) {
	r.mu.Lock()
	if r.members == nil {
		r.members = map[*Family][]*Series{}
	}
	s.member = int32(len(r.members[f]))
	r.members[f] = append(r.members[f], s)
	r.mu.Unlock()
}

// leave takes s, of family f, out of the resource's members by moving the
// last member of f into its place. Call with f locked.
func (r *Resource) leave(f *Family, s *Series) {
	r.mu.Lock()
	members := r.members[f]
	last := int32(len(members) - 1)
	if i := s.member; i != last {
		moved := members[last]
		moved.member = i
		members[i] = moved
	}
	members[last] = nil
	if last == 0 {
		delete(r.members, f)
	} else {
		r.members[f] = members[:last]
	}
	r.mu.Unlock()
}

// TargetInfo returns the target_info labels; ok is false for none.
func (r *Resource) TargetInfo() (labels LabelSet, ok bool) {
	if p := r.targetInfo.Load(); p != nil {
		return *p, true
	}
	return LabelSet{}, false
}

// SetTargetInfo replaces the target_info labels with names and values (as
// AppendValue writes them) when they changed; it keeps neither.
func (r *Resource) SetTargetInfo(names *LabelNames, values []byte) {
	if p := r.targetInfo.Load(); p != nil && p.is(&Labels{Names: names, Own: values}) {
		return
	}
	r.targetInfo.Store(&LabelSet{Names: names, values: string(values)})
}

// SeriesCount is the number of series the resource holds now.
func (r *Resource) SeriesCount() int64 { return r.series.Load() }
