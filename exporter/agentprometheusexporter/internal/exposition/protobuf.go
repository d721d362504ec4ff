package exposition // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/exposition"

import (
	"math"
	"strings"
	"unsafe"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/prommodel"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/promtext"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
)

// protobuf writes every family as varint-delimited
// io.prometheus.client.MetricFamily messages, the bytes expfmt's
// FmtProtoDelim encoder writes for the same families (the tests' reference,
// reference_test.go, says what each series becomes), with names escaped by
// the scrape's scheme as expfmt escapes them.
//
// It writes straight from store snapshots, through the walk the text
// formats take (writer): no client_model objects, no per-series allocation.
// Fields are appended in field-number order, as proto.Marshal writes them;
// a nested message's length goes in front of it, so room for the length is
// reserved and filled in once the message is written (moved by a byte when
// the guess was wrong). A family's length precedes it, so a family stays
// in the writer's buffer until it is whole.
//
// The wire helpers are protowire's, chosen over VictoriaMetrics' easyproto
// by measurement (BENCHMARKS.md, "Design measurements"): easyproto copies
// every field into a tree of its own and sizes the tree before writing.
type protobuf struct{}

// protobufState is what the writer keeps for protobuf between series.
type protobufState struct {
	at int // where the current family's message begins in the buffer
	// exemplarAt is, per bucket of a classic histogram, the index of the
	// exemplar it carries (-1 for none); the last slot is the +Inf bucket.
	exemplarAt []int
	value      []byte // scratch for a label's value, unescaped and joined
	// names is the last set of label names seen, and direct whether its
	// sets are written from the set (pbSet): the series of a family
	// share one set of names, so this is found out once per family.
	names  *store.LabelNames
	direct bool
}

// familyRoom is the room begin reserves for a family's length: as much as
// any length takes, so that no family is moved for it (see end).
const familyRoom = 5

// begin reserves room for the family's length and writes its name, help and
// type; the writer keeps the family until end has written its length.
func (protobuf) begin(t *writer, help string) {
	t.pb.at = len(t.buf)
	t.buf = append(t.buf, make([]byte, familyRoom)...)
	t.buf = t.familyFields(help)
	t.hold = true
}

// end writes the family's length in front of it. The room the length does
// not take is closed by moving what comes before the family in the buffer,
// when that is shorter than the family, which then stays in place: the
// buffer is written from skip on.
func (protobuf) end(t *writer) {
	t.hold = false
	at := t.pb.at
	n := uint64(len(t.buf) - at - familyRoom)
	gap := familyRoom - protowire.SizeVarint(n)
	if gap == 0 || at-t.skip > int(n) {
		t.buf = closeMessage(t.buf, at, familyRoom)
		return
	}
	protowire.AppendVarint(t.buf[at+gap:at+gap], n)
	copy(t.buf[t.skip+gap:at+gap], t.buf[t.skip:at])
	t.skip += gap
}

// head writes the beginning of a family whose series, size bytes, are
// written apart: its length, name, help and type.
func (protobuf) head(t *writer, help string, size int) {
	name, typ := t.memo.metricName(t.famName, t.scheme), familyType(t.kind)
	fields := 1 + protowire.SizeBytes(len(name)) + 1 + protowire.SizeBytes(len(help)) + 1 + protowire.SizeVarint(uint64(typ))
	t.buf = protowire.AppendVarint(t.buf, uint64(fields+size))
	t.buf = t.familyFields(help)
}

func (protobuf) close(*writer) {}

// familyFields appends the current family's name, help and type.
func (t *writer) familyFields(help string) []byte {
	b := append(t.buf, tagFamilyName)
	b = protowire.AppendString(b, t.memo.metricName(t.famName, t.scheme))
	b = append(b, tagFamilyHelp)
	b = protowire.AppendString(b, help)
	b = append(b, tagFamilyType)
	return protowire.AppendVarint(b, uint64(familyType(t.kind)))
}

func familyType(kind prommodel.Kind) dto.MetricType {
	switch kind {
	case prommodel.KindCounter:
		return dto.MetricType_COUNTER
	case prommodel.KindHistogram:
		return dto.MetricType_HISTOGRAM
	case prommodel.KindSummary:
		return dto.MetricType_SUMMARY
	default:
		return dto.MetricType_GAUGE
	}
}

func (protobuf) series(t *writer, s *store.Snapshot) { t.buf = t.pbMetric(t.buf, s) }

// Field tags: field number << 3 | wire type (0 varint, 1 fixed64, 2 bytes).
const (
	// MetricFamily
	tagFamilyName   = 1<<3 | 2
	tagFamilyHelp   = 2<<3 | 2
	tagFamilyType   = 3<<3 | 0
	tagFamilyMetric = 4<<3 | 2
	// Metric
	tagLabel       = 1<<3 | 2
	tagGauge       = 2<<3 | 2
	tagCounter     = 3<<3 | 2
	tagSummary     = 4<<3 | 2
	tagTimestampMs = 6<<3 | 0
	tagHistogram   = 7<<3 | 2
	// LabelPair
	tagPairName  = 1<<3 | 2
	tagPairValue = 2<<3 | 2
	// Gauge, Counter
	tagValue           = 1<<3 | 1
	tagCounterExemplar = 2<<3 | 2
	tagCounterCreated  = 3<<3 | 2
	// Summary
	tagSampleCount    = 1<<3 | 0 // Summary and Histogram
	tagSampleSum      = 2<<3 | 1 // Summary and Histogram
	tagQuantile       = 3<<3 | 2
	tagSummaryCreated = 4<<3 | 2
	// Quantile
	tagQuantileQuantile = 1<<3 | 1
	tagQuantileValue    = 2<<3 | 1
	// Histogram
	tagBucket           = 3<<3 | 2
	tagSchema           = 5<<3 | 0
	tagZeroThreshold    = 6<<3 | 1
	tagZeroCount        = 7<<3 | 0
	tagNegativeSpan     = 9<<3 | 2
	tagNegativeDelta    = 10<<3 | 0
	tagPositiveSpan     = 12<<3 | 2
	tagPositiveDelta    = 13<<3 | 0
	tagHistogramCreated = 15<<3 | 2
	// exemplars, field 16: its tag takes two bytes as a varint
	tagExemplars0 = (16<<3|2)&0x7f | 0x80
	tagExemplars1 = (16<<3 | 2) >> 7
	// Bucket
	tagCumulativeCount = 1<<3 | 0
	tagUpperBound      = 2<<3 | 1
	tagBucketExemplar  = 3<<3 | 2
	// BucketSpan
	tagSpanOffset = 1<<3 | 0
	tagSpanLength = 2<<3 | 0
	// Exemplar
	tagExemplarLabel     = 1<<3 | 2
	tagExemplarValue     = 2<<3 | 1
	tagExemplarTimestamp = 3<<3 | 2
	// google.protobuf.Timestamp
	tagSeconds = 1<<3 | 0
	tagNanos   = 2<<3 | 0
)

// pbMetric appends one Metric, tagged as a family's metric.
func (t *writer) pbMetric(b []byte, s *store.Snapshot) []byte {
	b = append(b, tagFamilyMetric)
	at := len(b)
	b = append(b, 0, 0) // most metrics are 128 bytes to 16 KiB long
	b = t.pbSet(b, s.Labels)
	if s.Held {
		b = t.pbHeld(b, s)
		return closeMessage(b, at, 2)
	}
	created, hasCreated := createdOf(s)
	switch t.kind {
	case prommodel.KindCounter:
		b = append(b, tagCounter)
		c := len(b)
		b = append(b, 0)
		b = appendDouble(b, tagValue, s.Value)
		if e := counterExemplar(s); e != nil {
			b = t.appendExemplar(append(b, tagCounterExemplar), e)
		}
		if hasCreated {
			b = appendTimestamp(b, tagCounterCreated, created)
		}
		b = closeMessage(b, c, 1)
	case prommodel.KindGauge:
		b = append(b, tagGauge, 9)
		b = appendDouble(b, tagValue, s.Value)
	case prommodel.KindSummary:
		b = append(b, tagSummary)
		c := len(b)
		b = append(b, 0)
		b = append(b, tagSampleCount)
		b = protowire.AppendVarint(b, s.Count)
		b = appendDouble(b, tagSampleSum, s.Value)
		for _, q := range s.Quantiles {
			b = append(b, tagQuantile, 18)
			b = appendDouble(b, tagQuantileQuantile, q.Quantile)
			b = appendDouble(b, tagQuantileValue, q.Value)
		}
		if hasCreated {
			b = appendTimestamp(b, tagSummaryCreated, created)
		}
		b = closeMessage(b, c, 1)
	}
	b = t.pbTimestamp(b, s)
	if t.kind == prommodel.KindHistogram {
		b = t.pbHistogram(b, s)
	}
	return closeMessage(b, at, 2)
}

// pbTimestamp appends timestamp_ms when the series' lines carry one.
func (t *writer) pbTimestamp(b []byte, s *store.Snapshot) []byte {
	if !t.stamped(s) {
		return b
	}
	b = append(b, tagTimestampMs)
	return protowire.AppendVarint(b, uint64(s.Timestamp/1e6))
}

// pbHeld appends the zero of a held run, as heldDTO builds it: a counter or
// histogram without observations, in the layout of the stored one.
func (t *writer) pbHeld(b []byte, s *store.Snapshot) []byte {
	created, _ := createdOf(s) // a held zero has one
	if t.kind == prommodel.KindCounter {
		b = append(b, tagCounter)
		c := len(b)
		b = append(b, 0)
		b = appendDouble(b, tagValue, 0)
		b = appendTimestamp(b, tagCounterCreated, created)
		b = closeMessage(b, c, 1)
		return t.pbTimestamp(b, s)
	}
	b = t.pbTimestamp(b, s)
	b = append(b, tagHistogram)
	h := len(b)
	b = append(b, 0, 0)
	b = append(b, tagSampleCount, 0)
	b = appendDouble(b, tagSampleSum, 0)
	if n := s.Native; n != nil {
		b = append(b, tagSchema)
		b = protowire.AppendVarint(b, protowire.EncodeZigZag(int64(n.Schema)))
		b = appendDouble(b, tagZeroThreshold, n.ZeroThreshold)
		b = append(b, tagZeroCount, 0)
		b = append(b, tagPositiveSpan, 4, tagSpanOffset, 0, tagSpanLength, 0)
	} else if s.Bounds != nil {
		for _, bound := range s.Bounds.Values {
			b = append(b, tagBucket, 11, tagCumulativeCount, 0)
			b = appendDouble(b, tagUpperBound, bound)
		}
	}
	b = appendTimestamp(b, tagHistogramCreated, created)
	return closeMessage(b, h, 2)
}

func (t *writer) pbHistogram(b []byte, s *store.Snapshot) []byte {
	created, hasCreated := createdOf(s)
	b = append(b, tagHistogram)
	h := len(b)
	b = append(b, 0, 0)
	b = append(b, tagSampleCount)
	b = protowire.AppendVarint(b, s.Count)
	b = appendDouble(b, tagSampleSum, s.Value)
	if n := s.Native; n != nil {
		b = append(b, tagSchema)
		b = protowire.AppendVarint(b, protowire.EncodeZigZag(int64(n.Schema)))
		b = appendDouble(b, tagZeroThreshold, n.ZeroThreshold)
		b = append(b, tagZeroCount)
		b = protowire.AppendVarint(b, n.ZeroCount)
		b, neg := appendSpans(b, tagNegativeSpan, n.Negative)
		b = appendDeltas(b, tagNegativeDelta, n.Negative)
		b, pos := appendSpans(b, tagPositiveSpan, n.Positive)
		if !neg && !pos {
			// An empty span list would read as a classic histogram; one
			// empty span marks it native, as client_golang does.
			b = append(b, tagPositiveSpan, 4, tagSpanOffset, 0, tagSpanLength, 0)
		}
		b = appendDeltas(b, tagPositiveDelta, n.Positive)
		if hasCreated {
			b = appendTimestamp(b, tagHistogramCreated, created)
		}
		for i := range s.Exemplars {
			b = t.appendExemplar(append(b, tagExemplars0, tagExemplars1), &s.Exemplars[i])
		}
		return closeMessage(b, h, 2)
	}
	if s.Bounds != nil {
		b = t.pbBuckets(b, s)
	}
	if hasCreated {
		b = appendTimestamp(b, tagHistogramCreated, created)
	}
	return closeMessage(b, h, 2)
}

// pbBuckets appends the classic buckets, with the exemplars where
// bucketExemplars places them; one above every bound gets an
// explicit +Inf bucket, as client_golang adds.
func (t *writer) pbBuckets(b []byte, s *store.Snapshot) []byte {
	bounds := s.Bounds.Values
	at := bucketExemplars(t.pb.exemplarAt, s)
	t.pb.exemplarAt = at
	for i, c := range s.Cumulative {
		if len(at) == 0 || at[i] < 0 {
			// Without an exemplar the length is known: 10 bytes and the count's varint.
			b = append(b, tagBucket, byte(10+protowire.SizeVarint(c)), tagCumulativeCount)
			b = protowire.AppendVarint(b, c)
			b = appendDouble(b, tagUpperBound, bounds[i])
			continue
		}
		b = t.appendBucket(b, c, bounds[i], &s.Exemplars[at[i]])
	}
	if len(at) > 0 && at[len(bounds)] >= 0 {
		b = t.appendBucket(b, s.Count, math.Inf(1), &s.Exemplars[at[len(bounds)]])
	}
	return b
}

func (t *writer) appendBucket(b []byte, count uint64, bound float64, e *store.Exemplar) []byte {
	b = append(b, tagBucket)
	at := len(b)
	b = append(b, 0)
	b = append(b, tagCumulativeCount)
	b = protowire.AppendVarint(b, count)
	b = appendDouble(b, tagUpperBound, bound)
	b = t.appendExemplar(append(b, tagBucketExemplar), e)
	return closeMessage(b, at, 1)
}

// appendSpans appends the spans of dense counts, split at runs of empty
// buckets (see spansAndDeltas); any reports whether there was one.
func appendSpans(b []byte, tag byte, bk store.Buckets) (_ []byte, any bool) {
	var length uint32 // of the open span; 0 before the first
	var offset int32
	next := bk.Offset // the index the open span would continue at
	for i, c := range bk.Counts {
		if c == 0 {
			continue
		}
		idx := bk.Offset + int32(i)
		if length == 0 || idx != next {
			if length > 0 {
				b = appendSpan(b, tag, offset, length)
				offset = idx - next
			} else {
				offset = idx
			}
			length = 0
		}
		length++
		next = idx + 1
	}
	if length == 0 {
		return b, false
	}
	return appendSpan(b, tag, offset, length), true
}

func appendSpan(b []byte, tag byte, offset int32, length uint32) []byte {
	o := protowire.EncodeZigZag(int64(offset))
	b = append(b, tag, byte(2+protowire.SizeVarint(o)+protowire.SizeVarint(uint64(length))), tagSpanOffset)
	b = protowire.AppendVarint(b, o)
	b = append(b, tagSpanLength)
	return protowire.AppendVarint(b, uint64(length))
}

// appendDeltas appends each non-empty bucket's count as the difference to
// the previous one, unpacked as proto2 repeated fields are.
func appendDeltas(b []byte, tag byte, bk store.Buckets) []byte {
	var prev int64
	for _, c := range bk.Counts {
		if c == 0 {
			continue
		}
		b = append(b, tag)
		b = protowire.AppendVarint(b, protowire.EncodeZigZag(int64(c)-prev))
		prev = int64(c)
	}
	return b
}

// appendExemplar appends an Exemplar's length and fields; the caller has
// written its tag.
func (t *writer) appendExemplar(b []byte, e *store.Exemplar) []byte {
	at := len(b)
	b = append(b, 0)
	// Exemplar labels are neither renamed nor escaped: expfmt leaves them.
	switch {
	case e.Labels.Names == nil: // no labels
	case directNames(e.Labels.Names.Names, model.NoEscaping):
		b = appendSetPairs(b, tagExemplarLabel, e.Labels)
	default: // names the converter never makes (it makes ExemplarNames)
		b = t.pbPairs(b, tagExemplarLabel, e.Labels, model.NoEscaping)
	}
	b = appendDouble(b, tagExemplarValue, e.Value)
	if e.Timestamp != 0 {
		b = appendTimestamp(b, tagExemplarTimestamp, e.Timestamp)
	}
	return closeMessage(b, at, 1)
}

// appendTimestamp appends a google.protobuf.Timestamp of unix nanoseconds
// as timestamppb.New(time.Unix(0, ns)) is marshalled: zero fields left out.
func appendTimestamp(b []byte, tag byte, ns int64) []byte {
	sec, nanos := ns/1e9, ns%1e9
	if nanos < 0 {
		sec, nanos = sec-1, nanos+1e9
	}
	size := 0
	if sec != 0 {
		size += 1 + protowire.SizeVarint(uint64(sec))
	}
	if nanos != 0 {
		size += 1 + protowire.SizeVarint(uint64(nanos))
	}
	b = append(b, tag, byte(size))
	if sec != 0 {
		b = append(b, tagSeconds)
		b = protowire.AppendVarint(b, uint64(sec))
	}
	if nanos != 0 {
		b = append(b, tagNanos)
		b = protowire.AppendVarint(b, uint64(nanos))
	}
	return b
}

func appendDouble(b []byte, tag byte, f float64) []byte {
	return protowire.AppendFixed64(append(b, tag), math.Float64bits(f))
}

// closeMessage writes the length of the nested message that begins room
// bytes after at, into the room reserved for it, moving the message when its
// length takes more or fewer bytes than reserved.
func closeMessage(b []byte, at, room int) []byte {
	n := uint64(len(b) - at - room)
	size := protowire.SizeVarint(n)
	switch {
	case size < room:
		copy(b[at+size:], b[at+room:])
		b = b[:len(b)-(room-size)]
	case size > room:
		end := len(b)
		b = append(b, make([]byte, size-room)...) // the compiler extends b in place
		copy(b[at+size:], b[at+room:end])
	}
	for i := at; n >= 0x80; i++ {
		b[i] = byte(n) | 0x80
		n >>= 7
	}
	b[at+size-1] = byte(n)
	return b
}

// appendPair appends one LabelPair field: a name that needs no escaping and
// a stored value, escaped as text-format label values, whose length
// unescaped is n.
func appendPair(b []byte, tag byte, name, value string, n int) []byte {
	b = append(b, tag)
	b = appendVarint(b, uint64(2+protowire.SizeBytes(len(name))+protowire.SizeBytes(n)))
	b = append(b, tagPairName)
	b = appendVarint(b, uint64(len(name)))
	b = append(b, name...)
	b = append(b, tagPairValue)
	b = appendVarint(b, uint64(n))
	if n == len(value) {
		return append(b, value...)
	}
	return promtext.AppendUnescaped(b, value)
}

// pbSet appends the pairs of a series' label set as LabelPair fields,
// straight from its names and values when the names are written as stored:
// sorted, without an escape, and, unless scheme is NoEscaping, legacy label
// names other than __name__. Other sets take pbPairs. Straight from the set
// is the faster way (BenchmarkWriteProtobuf; BENCHMARKS.md, "Design
// measurements").
func (t *writer) pbSet(b []byte, set store.LabelSet) []byte {
	p := &t.pb
	if set.Names != p.names {
		p.names, p.direct = set.Names, directNames(set.Names.Names, t.scheme)
	}
	if !p.direct {
		return t.pbPairs(b, tagLabel, set, t.scheme)
	}
	return appendSetPairs(b, tagLabel, set)
}

// pbPairs appends the pairs of a set as the text formats lay them out for
// scheme (labelSets.pairsFor), names and values unescaped, the values of
// names that underscore escaping merges joined. As model.EscapeMetricFamily
// does, a __name__ label's value is escaped as a metric name under every
// scheme but NoEscaping.
func (t *writer) pbPairs(b []byte, tag byte, set store.LabelSet, scheme model.EscapingScheme) []byte {
	ps := t.sets.pairsFor(readSet(set), scheme, &t.memo)
	for i := 0; i < len(ps); {
		name := promtext.Unescaped(ps[i].Out)
		value := promtext.AppendUnescaped(t.pb.value[:0], ps[i].Value)
		for i++; i < len(ps) && ps[i].Merged; i++ {
			value = promtext.AppendUnescaped(append(value, promtext.Separator), ps[i].Value)
		}
		t.pb.value = value
		v := unsafe.String(unsafe.SliceData(value), len(value))
		if scheme != model.NoEscaping && name == model.MetricNameLabel && !model.LegacyValidation.IsValidMetricName(v) {
			v = model.EscapeName(v, scheme)
		}
		b = append(b, tag)
		b = appendVarint(b, uint64(2+protowire.SizeBytes(len(name))+protowire.SizeBytes(len(v))))
		b = append(b, tagPairName)
		b = protowire.AppendString(b, name)
		b = append(b, tagPairValue)
		b = protowire.AppendString(b, v)
	}
	return b
}

// appendSetPairs appends the pairs of a set whose names go out as stored
// (directNames) as LabelPair fields with the given tag.
func appendSetPairs(b []byte, tag byte, set store.LabelSet) []byte {
	c := set.Cursor()
	for _, name := range set.Names.Names {
		value, ok := c.Next()
		if !ok {
			break
		}
		n := len(value)
		if strings.IndexByte(value, '\\') >= 0 {
			n = unescapedLen(value)
		}
		b = appendPair(b, tag, name, value, n)
	}
	return b
}

// directNames reports whether pbSet writes sets of these names
// straight: as pbPairs would lay them out, in the order they are stored.
func directNames(names []string, scheme model.EscapingScheme) bool {
	for i, name := range names {
		if i > 0 && names[i-1] >= name {
			return false
		}
		if scheme == model.NoEscaping {
			if name == "" || strings.ContainsAny(name, `\"=`) {
				return false
			}
		} else if !promtext.IsLegacyLabelName(name) || name == model.MetricNameLabel {
			return false
		}
	}
	return true
}

// appendVarint is protowire.AppendVarint with the one-byte case inlined.
func appendVarint(b []byte, v uint64) []byte {
	if v < 0x80 {
		return append(b, byte(v))
	}
	return protowire.AppendVarint(b, v)
}

// unescapedLen is the length of a rendered value once unescaped.
func unescapedLen(s string) int {
	n := len(s)
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			n--
			i++
		}
	}
	return n
}
