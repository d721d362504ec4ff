package convert // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/convert"

import (
	"encoding/hex"
	"math"
	"slices"
	"sync"

	"github.com/cespare/xxhash/v2"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/promtext"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
)

// histogram stores an explicit-bucket histogram point as cumulative bucket
// counts; an aligned delta with the same bounds adds to the stored counts.
func (w *worker) histogram(f *store.Family, dp pmetric.HistogramDataPoint, delta bool) {
	bounds, counts := dp.ExplicitBounds(), dp.BucketCounts()
	valid := bucketsMatchCount(counts, bounds.Len(), dp.Count()) && !(delta && dp.StartTimestamp() == 0) && timesFit(dp.StartTimestamp(), dp.Timestamp())
	s, existed := w.point(f, valid, dp.Attributes(), dp.Flags(), dp.Timestamp(), delta)
	if s == nil {
		return
	}
	start := int64(dp.StartTimestamp())
	// Without bucket counts the bounds describe nothing: count and sum only.
	noBuckets := counts.Len() == 0
	sameLayout := s.Native() == nil && (noBuckets && s.Histogram == nil || !noBuckets && s.Histogram != nil && boundsEqual(s.Histogram.Bounds, bounds))
	// A family holds classic and exponential histograms alike; a series
	// keeps the layout of its latest point only.
	s.SetNative(nil)
	continued := delta && existed && start == s.Timestamp && sameLayout
	w.run(s, delta, continued, start, int64(dp.Timestamp()))
	if continued {
		if h := s.Histogram; h != nil {
			var cum uint64
			for i := range h.Cumulative {
				cum += counts.At(i)
				h.Cumulative[i] += cum
			}
		}
		s.Value += dp.Sum()
		s.Count += dp.Count()
		s.Timestamp = int64(dp.Timestamp())
	} else {
		if noBuckets {
			s.Histogram = nil
		} else {
			s.Histogram = w.c.bounds.fill(s.Histogram, bounds, counts)
		}
		s.Value, s.Count, s.Start, s.Timestamp = dp.Sum(), dp.Count(), start, int64(dp.Timestamp())
	}
	s.SetExemplars(w.exemplars(s.Exemplars(), dp.Exemplars()))
}

// bucketsMatchCount reports whether a point's buckets agree with its
// count: no bucket counts at all, or one per bound plus the overflow
// bucket, adding up to the count. Anything else contradicts itself, and
// either number would expose a histogram whose buckets and count disagree.
func bucketsMatchCount(counts pcommon.UInt64Slice, bounds int, count uint64) bool {
	n := counts.Len()
	if n == 0 {
		return true
	}
	if n != bounds+1 {
		return false
	}
	var total uint64
	for i := 0; i < n; i++ {
		c := counts.At(i)
		if total+c < total {
			return false // overflows: not a count
		}
		total += c
	}
	return total == count
}

// boundsEqual reports whether a point's bounds are b's values, possibly
// followed by +Inf, which b leaves out: the +Inf bucket is the count.
func boundsEqual(b *store.Bounds, bounds pcommon.Float64Slice) bool {
	n := bounds.Len()
	if n == len(b.Values)+1 && math.IsInf(bounds.At(n-1), 1) {
		n--
	}
	if n != len(b.Values) {
		return false
	}
	for i, v := range b.Values {
		if bounds.At(i) != v {
			return false
		}
	}
	return true
}

// boundsLimit bounds the interned bucket layouts; beyond it each series gets
// its own copy.
const boundsLimit = 4096

// boundsIntern shares one Bounds (values and their rendering) between all
// series with the same bucket layout.
type boundsIntern struct {
	mu     sync.Mutex
	byHash map[uint64]*store.Bounds
}

func newBoundsIntern() *boundsIntern { return &boundsIntern{byHash: map[uint64]*store.Bounds{}} }

// fill sets h to the cumulative counts of a point, reusing h when its bounds
// match. Bounds are sorted and de-duplicated, and a bucket's count is taken
// at the bound's first position, as contrib does. NaN and +Inf bounds are
// left out (an le="+Inf" bucket is the count; an le="NaN" one is no bucket):
// their counts are only in the +Inf bucket.
func (bi *boundsIntern) fill(h *store.Histogram, bounds pcommon.Float64Slice, counts pcommon.UInt64Slice) *store.Histogram {
	// Stored bounds are sorted and distinct, so equal bounds need no checks.
	same := h != nil && boundsEqual(h.Bounds, bounds)
	if !same {
		b := bi.get(bounds)
		h = &store.Histogram{Bounds: b, Cumulative: make([]uint64, len(b.Values))}
	}
	if same || sortedDistinct(bounds) {
		var cum uint64
		for i := range h.Cumulative {
			if i < counts.Len() {
				cum += counts.At(i)
			}
			h.Cumulative[i] = cum
		}
		return h
	}
	first := map[float64]int{}
	for i := 0; i < bounds.Len(); i++ {
		if _, ok := first[bounds.At(i)]; !ok {
			first[bounds.At(i)] = i
		}
	}
	var cum uint64
	for i, v := range h.Bounds.Values {
		if j := first[v]; j < counts.Len() {
			cum += counts.At(j)
		}
		h.Cumulative[i] = cum
	}
	return h
}

func sortedDistinct(bounds pcommon.Float64Slice) bool {
	for i := 1; i < bounds.Len(); i++ {
		if !(bounds.At(i-1) < bounds.At(i)) {
			return false
		}
	}
	return true
}

func (bi *boundsIntern) get(bounds pcommon.Float64Slice) *store.Bounds {
	values := slices.DeleteFunc(slices.Clone(bounds.AsRaw()), func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 1) })
	slices.Sort(values)
	values = slices.Compact(values)
	var d xxhash.Digest
	d.Reset()
	var buf [8]byte
	for _, v := range values {
		bits := math.Float64bits(v)
		for i := range buf {
			buf[i] = byte(bits >> (8 * i))
		}
		_, _ = d.Write(buf[:])
	}
	hash := d.Sum64()
	bi.mu.Lock()
	defer bi.mu.Unlock()
	if b, ok := bi.byHash[hash]; ok && slices.Equal(b.Values, values) {
		return b
	}
	b := &store.Bounds{Values: values, Text: make([]string, len(values))}
	for i, v := range values {
		b.Text[i] = string(promtext.AppendFloat(nil, v))
	}
	if len(bi.byHash) < boundsLimit {
		bi.byHash[hash] = b
	}
	return b
}

// appendHexValue appends id in hex as one value of a set's Values.
func appendHexValue(b, id []byte) []byte {
	b, at := store.OpenValue(b)
	return store.CloseValue(hex.AppendEncode(b, id), at)
}

// exemplars replaces dst with the point's exemplars, labelled with their
// trace and span ids as contrib does.
func (w *worker) exemplars(dst []store.Exemplar, src pmetric.ExemplarSlice) []store.Exemplar {
	dst = dst[:0]
	for i := 0; i < src.Len(); i++ {
		e := src.At(i)
		var v float64
		if e.ValueType() == pmetric.ExemplarValueTypeInt {
			v = float64(e.IntValue())
		} else {
			v = e.DoubleValue()
		}
		span, trace := e.SpanID(), e.TraceID()
		var values []byte
		if !span.IsEmpty() {
			values = appendHexValue(values, span[:])
		}
		if !trace.IsEmpty() {
			values = appendHexValue(values, trace[:])
		}
		labels := store.NewLabelSet(store.ExemplarNames(!span.IsEmpty(), !trace.IsEmpty()), values)
		ts := int64(e.Timestamp())
		if ts < 0 { // past 2262: unknown rather than wrapped
			ts = 0
		}
		dst = append(dst, store.Exemplar{Labels: labels, Value: v, Timestamp: ts})
	}
	return dst
}
