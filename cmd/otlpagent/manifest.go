package main

import (
	"context"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/statsgate/statsgate/internal/agentmanifest"
)

// counts accumulates values per kind.
type counts map[string]*agentmanifest.Values

func newCounts() counts { return counts{} }

func (c counts) get(kind string) *agentmanifest.Values {
	v := c[kind]
	if v == nil {
		v = &agentmanifest.Values{Kind: kind, Buckets: make([]uint64, len(bounds)+1)}
		c[kind] = v
	}
	return v
}

func (c counts) add(kind string, n int64) { c.get(kind).Operations += n }

// observe counts v in the bucket the SDK puts it in: bucket i holds
// (bounds[i-1], bounds[i]].
func (c counts) observe(kind string, v float64) {
	h := c.get(kind)
	h.Count++
	h.Sum += v
	i, _ := slices.BinarySearch(bounds, v)
	h.Buckets[i]++
}

func (c counts) sorted() []agentmanifest.Values {
	out := make([]agentmanifest.Values, 0, len(c))
	for _, v := range c {
		out = append(out, *v)
	}
	slices.SortFunc(out, func(a, b agentmanifest.Values) int {
		if a.Kind < b.Kind {
			return -1
		}
		if a.Kind > b.Kind {
			return 1
		}
		return 0
	})
	return out
}

// recorder passes exports on and keeps what the acknowledged ones carried.
type recorder struct {
	replicaExporter
	delta bool

	mu      sync.Mutex
	acked   counts
	exports []agentmanifest.Export
	failed  []time.Time
}

func newRecorder(exp replicaExporter, delta bool) *recorder {
	return &recorder{replicaExporter: exp, delta: delta, acked: newCounts()}
}

func (r *recorder) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	ctx, cancel := finishOnShutdown(ctx)
	defer cancel()
	err := r.replicaExporter.Export(ctx, rm)
	at := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.failed = append(r.failed, at)
		return err
	}
	carried := newCounts()
	var point time.Time
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch data := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range data.DataPoints {
					carried.get(kindOf(dp.Attributes)).Operations = dp.Value
					point = dp.Time
				}
			case metricdata.Histogram[float64]:
				for _, dp := range data.DataPoints {
					v := carried.get(kindOf(dp.Attributes))
					v.Count, v.Sum = dp.Count, dp.Sum
					copy(v.Buckets, dp.BucketCounts)
				}
			}
		}
	}
	e := agentmanifest.Export{At: at, Point: point, Replica: r.replica(), Conn: r.conn()}
	for _, v := range carried.sorted() {
		if r.delta {
			e.Deltas = append(e.Deltas, v)
			a := r.acked.get(v.Kind)
			a.Operations += v.Operations
			a.Count += v.Count
			a.Sum += v.Sum
			for i, b := range v.Buckets {
				a.Buckets[i] += b
			}
		} else {
			*r.acked.get(v.Kind) = v
		}
	}
	r.exports = append(r.exports, e)
	return nil
}

// finishOnShutdown keeps ctx's deadline (the exporter's timeout) and drops
// its cancellation. The SDK's reader cancels an export in flight when the
// agent stops; a delta the gateway took before that would be counted there
// and not in the manifest, so the agent lets it finish, as a replica does
// with the requests in flight on SIGTERM.
func finishOnShutdown(ctx context.Context) (context.Context, context.CancelFunc) {
	deadline, ok := ctx.Deadline()
	ctx = context.WithoutCancel(ctx)
	if !ok {
		return ctx, func() {}
	}
	return context.WithDeadline(ctx, deadline)
}

func kindOf(attrs attribute.Set) string {
	v, _ := attrs.Value("kind")
	return v.AsString()
}

func (r *recorder) manifest(instanceID string, counted counts) agentmanifest.OTLPAgent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return agentmanifest.OTLPAgent{InstanceID: instanceID, Counted: counted.sorted(), Acked: r.acked.sorted(),
		Exports: r.exports, Failed: r.failed}
}
