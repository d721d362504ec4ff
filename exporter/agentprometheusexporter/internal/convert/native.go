package convert // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/convert"

import (
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
)

const (
	// Native histograms support schemas -4..8; finer OTLP scales are
	// downscaled to 8, coarser ones cannot be represented.
	minSchema = -4
	maxSchema = 8
	// defaultZeroThreshold is Prometheus' remote-write translator's default.
	defaultZeroThreshold = 1e-128
)

// native stores an exponential histogram as a native histogram. An aligned
// delta with the same zero threshold is merged at the coarser of the schemas.
func (w *worker) native(f *store.Family, dp pmetric.ExponentialHistogramDataPoint, delta bool) {
	if dp.Scale() < minSchema {
		w.pos++ // keep the position hints of the following points aligned
		w.stats.drop(Invalid, 1)
		return
	}
	s, existed := w.point(f, dp.Attributes(), dp.Flags(), dp.Timestamp())
	if s == nil {
		return
	}
	schema := min(dp.Scale(), maxSchema)
	down := dp.Scale() - schema
	zt := dp.ZeroThreshold()
	if zt == 0 {
		zt = defaultZeroThreshold
	}
	start := int64(dp.StartTimestamp())
	if delta && existed && start == s.Timestamp && s.Native != nil && s.Native.ZeroThreshold == zt {
		n := s.Native
		to := min(n.Schema, schema)
		n.Positive = addBuckets(downscale(n.Positive, n.Schema-to), fromOTLP(dp.Positive(), down+schema-to))
		n.Negative = addBuckets(downscale(n.Negative, n.Schema-to), fromOTLP(dp.Negative(), down+schema-to))
		n.Schema = to
		n.ZeroCount += dp.ZeroCount()
		s.Value += dp.Sum()
		s.Count += dp.Count()
		s.Timestamp = int64(dp.Timestamp())
	} else {
		s.Native = &store.NativeHistogram{
			Schema:        schema,
			ZeroThreshold: zt,
			ZeroCount:     dp.ZeroCount(),
			Positive:      fromOTLP(dp.Positive(), down),
			Negative:      fromOTLP(dp.Negative(), down),
		}
		s.Value, s.Count, s.Start, s.Timestamp = dp.Sum(), dp.Count(), start, int64(dp.Timestamp())
	}
	s.Exemplars = w.exemplars(s.Exemplars, dp.Exemplars())
}

// fromOTLP converts OTLP buckets, merging 2^down neighbours. Prometheus'
// bucket index is OTLP's plus one.
func fromOTLP(b pmetric.ExponentialHistogramDataPointBuckets, down int32) store.Buckets {
	counts := b.BucketCounts()
	if counts.Len() == 0 {
		return store.Buckets{}
	}
	first := b.Offset() >> down
	last := (b.Offset() + int32(counts.Len()) - 1) >> down
	out := store.Buckets{Offset: first + 1, Counts: make([]uint64, last-first+1)}
	for i := 0; i < counts.Len(); i++ {
		out.Counts[((b.Offset()+int32(i))>>down)-first] += counts.At(i)
	}
	return out
}

// downscale merges 2^down neighbouring buckets.
func downscale(b store.Buckets, down int32) store.Buckets {
	if down == 0 || len(b.Counts) == 0 {
		return b
	}
	first := (b.Offset - 1) >> down
	last := (b.Offset - 1 + int32(len(b.Counts)) - 1) >> down
	out := store.Buckets{Offset: first + 1, Counts: make([]uint64, last-first+1)}
	for i, c := range b.Counts {
		out.Counts[((b.Offset-1+int32(i))>>down)-first] += c
	}
	return out
}

// addBuckets adds two bucket spans of the same schema.
func addBuckets(a, b store.Buckets) store.Buckets {
	if len(a.Counts) == 0 {
		return b
	}
	if len(b.Counts) == 0 {
		return a
	}
	lo := min(a.Offset, b.Offset)
	hi := max(a.Offset+int32(len(a.Counts)), b.Offset+int32(len(b.Counts)))
	out := store.Buckets{Offset: lo, Counts: make([]uint64, hi-lo)}
	for i, c := range a.Counts {
		out.Counts[a.Offset-lo+int32(i)] += c
	}
	for i, c := range b.Counts {
		out.Counts[b.Offset-lo+int32(i)] += c
	}
	return out
}
