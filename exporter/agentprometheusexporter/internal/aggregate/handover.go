package aggregate // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/aggregate"

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/prometheus/prometheus/model/histogram"
)

// A handover is what a gateway counted of one agent's cumulative sources:
// each source's latest point, from which the gateway that holds the agent
// next counts on, after the ends of its earlier runs it knows of (markers:
// the next holder counts the tail of a run it saw more of). Deltas need
// none (each point counts where it arrives) and gauges none (a gauge is its
// latest value).
//
// The encoding: a version byte, then the counters, the classic histograms
// and the exponential ones, each kind as a count followed by its points,
// a source's oldest first (its key repeated, its latest last). A point is
// its source's key (8 bytes, big-endian), its start and time (varints),
// then its values: a counter's as a float64; a histogram's sum (float64),
// count and cumulative bucket counts (uvarints, each bucket as its
// difference from the one below); an exponential histogram's schema
// (varint), zero threshold, zero count, count and sum (float64s), and its
// positive then negative spans (offset varint, length uvarint) and buckets
// (float64s), each list after its length.
const handoverVersion = 1

// handed is a decoded handover: each source's points, oldest first.
type handed struct {
	counters map[uint64][]counterSlot
	hists    map[uint64][]histSlot
	natives  map[uint64][]nativeSlot
}

var errHandover = errors.New("malformed handover")

// encode writes what t counted. Call with t locked and counting.
func (t *Table) encode() []byte {
	b := []byte{handoverVersion}
	b = appendPoints(b, &t.counters, t.endedCounters, func(b []byte, sl *counterSlot) []byte {
		return appendFloat(b, sl.value)
	})
	b = appendPoints(b, &t.hists, t.endedHists, func(b []byte, sl *histSlot) []byte {
		b = appendFloat(b, sl.sum)
		b = binary.AppendUvarint(b, sl.count)
		b = binary.AppendUvarint(b, uint64(len(sl.cum)))
		var below uint64
		for _, c := range sl.cum {
			b = binary.AppendUvarint(b, c-below)
			below = c
		}
		return b
	})
	b = appendPoints(b, &t.natives, t.endedNatives, func(b []byte, sl *nativeSlot) []byte {
		h := sl.last
		b = binary.AppendVarint(b, int64(h.Schema))
		for _, f := range [...]float64{h.ZeroThreshold, h.ZeroCount, h.Count, h.Sum} {
			b = appendFloat(b, f)
		}
		b = appendSpans(b, h.PositiveSpans, h.PositiveBuckets)
		return appendSpans(b, h.NegativeSpans, h.NegativeBuckets)
	})
	return b
}

// appendPoints appends the points of one kind: each source's ended runs,
// then its latest.
func appendPoints[S runPoint](b []byte, s *slots[S], ended map[uint64][]S, values func([]byte, *S) []byte) []byte {
	n := s.len()
	s.each(func(key uint64, _ *S) bool {
		n += len(ended[key])
		return true
	})
	b = binary.AppendUvarint(b, uint64(n))
	s.each(func(key uint64, sl *S) bool {
		for i := range ended[key] {
			start, ts := ended[key][i].at()
			b = values(appendHead(b, key, start, ts), &ended[key][i])
		}
		start, ts := (*sl).at()
		b = values(appendHead(b, key, start, ts), sl)
		return true
	})
	return b
}

func appendHead(b []byte, key uint64, start, ts int64) []byte {
	b = binary.BigEndian.AppendUint64(b, key)
	b = binary.AppendVarint(b, start)
	return binary.AppendVarint(b, ts)
}

func appendFloat(b []byte, f float64) []byte {
	return binary.BigEndian.AppendUint64(b, math.Float64bits(f))
}

func appendSpans(b []byte, spans []histogram.Span, buckets []float64) []byte {
	b = binary.AppendUvarint(b, uint64(len(spans)))
	for _, s := range spans {
		b = binary.AppendVarint(b, int64(s.Offset))
		b = binary.AppendUvarint(b, uint64(s.Length))
	}
	b = binary.AppendUvarint(b, uint64(len(buckets)))
	for _, c := range buckets {
		b = appendFloat(b, c)
	}
	return b
}

// reader reads a handover; the first error sticks.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s at %d bytes from the end", errHandover, what, len(r.b))
	}
}

func (r *reader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail("bad uvarint")
		r.b = nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail("bad varint")
		r.b = nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) u64() uint64 {
	if len(r.b) < 8 {
		r.fail("short")
		r.b = nil
		return 0
	}
	v := binary.BigEndian.Uint64(r.b)
	r.b = r.b[8:]
	return v
}

func (r *reader) float() float64 { return math.Float64frombits(r.u64()) }

// point checks a point's times as the table keeps them: a start that is
// not after the time, and a time.
func (r *reader) point(start, ts int64) {
	if ts <= 0 || start < 0 || start > ts {
		r.fail("a point's times out of order")
	}
}

// count reads a list's length, which cannot exceed the bytes left (each
// element takes at least min of them).
func (r *reader) count(min int) int {
	n := r.uvarint()
	if n > uint64(len(r.b)/min) {
		r.fail("a list longer than the message")
		return 0
	}
	return int(n)
}

func (r *reader) spans() ([]histogram.Span, []float64) {
	spans := make([]histogram.Span, r.count(2))
	for i := range spans {
		off, length := r.varint(), r.uvarint()
		if off < math.MinInt32 || off > math.MaxInt32 || length > math.MaxUint32 {
			r.fail("span out of range")
		}
		spans[i] = histogram.Span{Offset: int32(off), Length: uint32(length)}
	}
	buckets := make([]float64, r.count(8))
	for i := range buckets {
		buckets[i] = r.float()
	}
	return spans, buckets
}

// decodeHandover reads a handover whole, or refuses it: nothing of a
// malformed one is used.
func decodeHandover(b []byte) (*handed, error) {
	if len(b) == 0 || b[0] != handoverVersion {
		return nil, fmt.Errorf("%w: unknown version", errHandover)
	}
	r := &reader{b: b[1:]}
	hd := &handed{counters: map[uint64][]counterSlot{}, hists: map[uint64][]histSlot{}, natives: map[uint64][]nativeSlot{}}
	for n := r.count(18); n > 0 && r.err == nil; n-- {
		key, start, ts := keyOf(r.u64()), r.varint(), r.varint()
		sl := counterSlot{start: start, ts: ts, value: r.float()}
		r.point(start, ts)
		if !(sl.value >= 0) || math.IsInf(sl.value, 1) {
			r.fail("a counter that is not a finite count")
		}
		hd.counters[key] = append(hd.counters[key], sl)
	}
	for n := r.count(20); n > 0 && r.err == nil; n-- {
		key, start, ts := keyOf(r.u64()), r.varint(), r.varint()
		sl := histSlot{start: start, ts: ts, sum: r.float(), count: r.uvarint()}
		r.point(start, ts)
		if !finite(sl.sum) {
			r.fail("a histogram sum that is not a number")
		}
		sl.cum = make([]uint64, r.count(1))
		var below uint64
		for i := range sl.cum {
			d := r.uvarint()
			if below+d < below {
				r.fail("bucket count overflows")
			}
			below += d
			sl.cum[i] = below
		}
		if len(sl.cum) > 0 && sl.cum[len(sl.cum)-1] > sl.count {
			r.fail("buckets above the count")
		}
		hd.hists[key] = append(hd.hists[key], sl)
	}
	for n := r.count(47); n > 0 && r.err == nil; n-- {
		key, start, ts := keyOf(r.u64()), r.varint(), r.varint()
		h := &histogram.FloatHistogram{Schema: int32(r.varint())}
		h.ZeroThreshold, h.ZeroCount, h.Count, h.Sum = r.float(), r.float(), r.float(), r.float()
		h.PositiveSpans, h.PositiveBuckets = r.spans()
		h.NegativeSpans, h.NegativeBuckets = r.spans()
		r.point(start, ts)
		if r.err == nil && (h.Validate() != nil || !finite(h.Sum)) {
			r.fail("invalid native histogram")
		}
		hd.natives[key] = append(hd.natives[key], nativeSlot{start: start, ts: ts, last: h})
	}
	if r.err == nil && len(r.b) != 0 {
		r.fail("trailing bytes")
	}
	if r.err != nil {
		return nil, r.err
	}
	return hd, nil
}
