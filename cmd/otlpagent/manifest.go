package main

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// Manifest is what the agents counted and what the gateway acknowledged.
type Manifest struct {
	Service     string          `json:"service"`
	Protocol    string          `json:"protocol"`
	Temporality string          `json:"temporality"`
	Bounds      []float64       `json:"bounds"`
	Agents      []AgentManifest `json:"agents"`
}

// AgentManifest is one simulated agent.
type AgentManifest struct {
	InstanceID string `json:"service_instance_id"`
	// Counted is what the agent recorded, per kind.
	Counted []Values `json:"counted"`
	// Acked is what the acknowledged exports carried: the last cumulative
	// values, or the sum of the deltas.
	Acked []Values `json:"acked"`
	// Exports lists the acknowledged exports in order.
	Exports       []Export `json:"exports"`
	FailedExports int      `json:"failed_exports"`
}

// Values are the counter and histogram of one kind: a total, or one delta.
type Values struct {
	Kind       string   `json:"kind"`
	Operations int64    `json:"operations"`
	Count      uint64   `json:"count"`
	Sum        float64  `json:"sum"`
	Buckets    []uint64 `json:"buckets"` // per bucket, not cumulative: len(bounds)+1
}

// Export is one acknowledged export.
type Export struct {
	At      time.Time `json:"at"`
	Replica string    `json:"replica,omitempty"`
	// Deltas are the values the export carried, with delta temporality.
	Deltas []Values `json:"deltas,omitempty"`
}

// counts accumulates values per kind.
type counts map[string]*Values

func newCounts() counts { return counts{} }

func (c counts) get(kind string) *Values {
	v := c[kind]
	if v == nil {
		v = &Values{Kind: kind, Buckets: make([]uint64, len(bounds)+1)}
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

func (c counts) sorted() []Values {
	out := make([]Values, 0, len(c))
	for _, v := range c {
		out = append(out, *v)
	}
	slices.SortFunc(out, func(a, b Values) int {
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
	exports []Export
	failed  int
}

func newRecorder(exp replicaExporter, delta bool) *recorder {
	return &recorder{replicaExporter: exp, delta: delta, acked: newCounts()}
}

func (r *recorder) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	err := r.replicaExporter.Export(ctx, rm)
	at := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.failed++
		return err
	}
	carried := newCounts()
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch data := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range data.DataPoints {
					carried.get(kindOf(dp.Attributes)).Operations = dp.Value
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
	e := Export{At: at, Replica: r.replica()}
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

func kindOf(attrs attribute.Set) string {
	v, _ := attrs.Value("kind")
	return v.AsString()
}

func (r *recorder) manifest(instanceID string, counted counts) AgentManifest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return AgentManifest{InstanceID: instanceID, Counted: counted.sorted(), Acked: r.acked.sorted(),
		Exports: r.exports, FailedExports: r.failed}
}

func writeManifest(path string, m Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if path == "-" {
		_, err = os.Stdout.Write(b)
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
