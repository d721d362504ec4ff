package store // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"

import "sync/atomic"

// Resource is one agent as Prometheus sees it: its job and instance. Limits
// per resource and target_info hang off it.
type Resource struct {
	key string // job, 0xff, instance

	// TargetInfo is the rendered label set of its target_info series, empty
	// when the resource has no job or no instance (no target_info then).
	targetInfo atomic.Pointer[string]
	series     atomic.Int64
	updated    atomic.Int64 // store clock at the last batch from this resource
	card       resourceCounts
}

// TargetInfo returns the rendered target_info labels ("" for none).
func (r *Resource) TargetInfo() string {
	if p := r.targetInfo.Load(); p != nil {
		return *p
	}
	return ""
}

// SetTargetInfo replaces the target_info labels when they changed.
func (r *Resource) SetTargetInfo(labels string) {
	if p := r.targetInfo.Load(); p != nil && *p == labels {
		return
	}
	r.targetInfo.Store(&labels)
}

// SeriesCount is the number of series the resource holds now.
func (r *Resource) SeriesCount() int64 { return r.series.Load() }
