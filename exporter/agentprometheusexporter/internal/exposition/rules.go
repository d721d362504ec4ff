package exposition // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/exposition"

import (
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/prommodel"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
)

// The model's rules (prommodel) applied to a snapshot, for every format.

// createdOf is the created time written for s, and whether one is.
func createdOf(s *store.Snapshot) (ns int64, ok bool) { return prommodel.Created(s.Start, s.Held) }

// counterExemplar is the exemplar a counter's series carries, nil for none.
func counterExemplar(s *store.Snapshot) *store.Exemplar {
	if i := prommodel.CounterExemplar(len(s.Exemplars)); i >= 0 {
		return &s.Exemplars[i]
	}
	return nil
}

// bucketExemplars places the exemplars of s in its classic buckets, in at.
func bucketExemplars(at []int, s *store.Snapshot) []int {
	var bounds []float64
	if s.Bounds != nil && s.Native == nil {
		bounds = s.Bounds.Values
	}
	return prommodel.BucketExemplars(at, bounds, len(s.Exemplars), func(i int) float64 { return s.Exemplars[i].Value })
}
