package convert // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/convert"

import (
	"math"

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
	// maxMergedSpan bounds the dense buckets of an accumulated delta: two
	// deltas far apart would otherwise allocate every bucket between them.
	maxMergedSpan = 1 << 12
)

// native stores an exponential histogram as a native histogram. An aligned
// delta with the same zero threshold is merged at the coarser of the schemas.
func (w *worker) native(f *store.Family, dp pmetric.ExponentialHistogramDataPoint, delta bool) {
	valid := validNative(dp) && !(delta && dp.StartTimestamp() == 0) && timesFit(dp.StartTimestamp(), dp.Timestamp())
	s, existed := w.point(f, valid, dp.Attributes(), dp.Flags(), dp.Timestamp(), delta)
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
	s.Histogram = nil // a family holds classic and exponential histograms alike
	continued := delta && existed && start == s.Timestamp && s.Native() != nil && s.Native().ZeroThreshold == zt
	w.run(s, delta, continued, start, int64(dp.Timestamp()))
	if continued {
		n := s.Native()
		to := min(n.Schema, schema)
		pos, neg := downscale(n.Positive, n.Schema-to), downscale(n.Negative, n.Schema-to)
		newPos, newNeg := fromOTLP(dp.Positive(), down+schema-to), fromOTLP(dp.Negative(), down+schema-to)
		for to > minSchema && (mergedSpan(pos, newPos) > maxMergedSpan || mergedSpan(neg, newNeg) > maxMergedSpan) {
			to--
			pos, neg, newPos, newNeg = downscale(pos, 1), downscale(neg, 1), downscale(newPos, 1), downscale(newNeg, 1)
		}
		n.Positive, n.Negative = addBuckets(pos, newPos), addBuckets(neg, newNeg)
		n.Schema = to
		n.ZeroCount += dp.ZeroCount()
		s.Value += dp.Sum()
		s.Count += dp.Count()
		s.Timestamp = int64(dp.Timestamp())
	} else {
		s.SetNative(&store.NativeHistogram{
			Schema:        schema,
			ZeroThreshold: zt,
			ZeroCount:     dp.ZeroCount(),
			Positive:      fromOTLP(dp.Positive(), down),
			Negative:      fromOTLP(dp.Negative(), down),
		})
		s.Value, s.Count, s.Start, s.Timestamp = dp.Sum(), dp.Count(), start, int64(dp.Timestamp())
	}
	s.SetExemplars(w.exemplars(s.Exemplars(), dp.Exemplars()))
}

// validNative reports whether an exponential histogram point can be a
// native histogram, checking what Prometheus checks when it ingests one:
// a schema it supports (finer scales are downscaled), a zero threshold that
// is a non-negative number, bucket indices that stand for float64 values,
// and buckets adding up to the count (at most the count when the sum is
// NaN). Prometheus refuses a native histogram that fails these.
func validNative(dp pmetric.ExponentialHistogramDataPoint) bool {
	if dp.Scale() < minSchema {
		return false
	}
	if zt := dp.ZeroThreshold(); !(zt >= 0) || math.IsInf(zt, 1) {
		return false
	}
	schema := min(dp.Scale(), maxSchema)
	down := dp.Scale() - schema
	total := dp.ZeroCount()
	for _, b := range [2]pmetric.ExponentialHistogramDataPointBuckets{dp.Positive(), dp.Negative()} {
		counts := b.BucketCounts()
		if counts.Len() == 0 {
			continue
		}
		first := int64(b.Offset())
		last := first + int64(counts.Len()) - 1
		if last > math.MaxInt32 || !indexInRange(first>>down, schema) || !indexInRange(last>>down, schema) {
			return false
		}
		for i := 0; i < counts.Len(); i++ {
			c := counts.At(i)
			if total+c < total {
				return false // overflows: not a count
			}
			total += c
		}
	}
	if math.IsNaN(dp.Sum()) {
		return total <= dp.Count()
	}
	return total == dp.Count()
}

// indexInRange reports whether bucket index i of schema stands for float64
// values: bucket i ends at 2^((i+1)/2^schema), and float64 spans 2^-1074 to
// 2^1024. The margin of a few buckets keeps the arithmetic simple.
func indexInRange(i int64, schema int32) bool {
	limit := int64(1100 * math.Exp2(float64(schema)))
	return i >= -limit && i <= limit
}

// fromOTLP converts OTLP buckets, merging 2^down neighbours. Prometheus'
// bucket index is OTLP's plus one.
func fromOTLP(b pmetric.ExponentialHistogramDataPointBuckets, down int32) store.Buckets {
	counts := b.BucketCounts()
	if counts.Len() == 0 {
		return store.Buckets{}
	}
	offset := int64(b.Offset())
	first := offset >> down
	last := (offset + int64(counts.Len()) - 1) >> down
	out := store.Buckets{Offset: int32(first + 1), Counts: make([]uint64, last-first+1)}
	for i := 0; i < counts.Len(); i++ {
		out.Counts[((offset+int64(i))>>down)-first] += counts.At(i)
	}
	return out
}

// mergedSpan is how many dense buckets adding a and b takes.
func mergedSpan(a, b store.Buckets) int64 {
	if len(a.Counts) == 0 || len(b.Counts) == 0 {
		return int64(len(a.Counts) + len(b.Counts))
	}
	lo := min(int64(a.Offset), int64(b.Offset))
	hi := max(int64(a.Offset)+int64(len(a.Counts)), int64(b.Offset)+int64(len(b.Counts)))
	return hi - lo
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
