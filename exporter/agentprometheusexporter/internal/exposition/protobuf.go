package exposition // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/exposition"

import (
	"io"
	"math"
	"strings"
	"sync"
	"unsafe"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/promtext"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
)

// WriteProtobuf writes every family as varint-delimited
// io.prometheus.client.MetricFamily messages, the bytes expfmt's
// FmtProtoDelim encoder writes for what WriteEncoded would build (dto.go is
// the reference for what each series becomes), with names escaped by scheme
// as expfmt escapes them.
//
// It writes straight from store snapshots: no client_model objects, no
// per-series allocation. Fields are appended in field-number order, as
// proto.Marshal writes them; a nested message's length goes in front of it,
// so room for the length is reserved and filled in once the message is
// written (moved by a byte when the guess was wrong). A family's metrics are
// collected in a buffer of their own because the family's length precedes
// them.
//
// The wire helpers are protowire's. They were measured against
// VictoriaMetrics' easyproto (outside this module, which does not depend on
// it) encoding the Metric messages of one agent of the bench workload
// (gauges, counters, ten-bound histograms; the same bytes from both):
// appending with protowire and back-patching lengths took 43 ns per text
// sample, easyproto 113 ns, 2.6 times as long; it copies every field into a
// tree of its own and sizes the tree before writing. Neither allocated.
func WriteProtobuf(w io.Writer, st *store.Store, opts Options, scheme model.EscapingScheme) error {
	p := protoPool.Get().(*protoWriter)
	p.w, p.opts, p.scheme, p.err, p.buf = w, opts, scheme, nil, p.buf[:0]
	p.names = nil // found out under another scrape's scheme
	if infos := st.TargetInfos(); len(infos) > 0 {
		p.body = p.body[:0]
		for _, ti := range infos {
			p.targetInfo(ti)
		}
		p.familyHeader(p.memo.metricName(opts.TargetInfoName, scheme), "Target metadata", dto.MetricType_GAUGE)
	}
	for _, f := range st.Families() {
		p.family(f)
		if p.err != nil {
			break
		}
	}
	p.flush()
	err := p.err
	p.w = nil
	if cap(p.body) > keepBody {
		p.body = nil
	}
	protoPool.Put(p)
	return err
}

// keepBody bounds the family buffer a pooled writer keeps between scrapes:
// the largest family of a million series at the bench workload's shape (100k
// series, ~23 MB) is kept; a single family of millions of series is not.
const keepBody = 64 << 20

var protoPool = sync.Pool{New: func() any {
	p := &protoWriter{buf: make([]byte, 0, flushAt+256<<10)}
	p.chunk = p.writeChunk // a method value made once, not per family
	return p
}}

type protoWriter struct {
	w      io.Writer
	err    error
	opts   Options
	scheme model.EscapingScheme
	memo   nameMemo // escaped names, kept with the pooled writer
	buf    []byte   // families ready to be written
	body   []byte   // the metrics of the current family
	// metrics counts the metrics in body: a family without any is left out.
	metrics int
	kind    store.Kind
	chunk   func([]store.Snapshot)
	scratch store.SnapshotScratch
	// exemplarAt is, per bucket of a classic histogram, the index of the
	// exemplar it carries (-1 for none); the last slot is the +Inf bucket.
	exemplarAt []int
	text       []byte // a series' labels as the text formats write them
	// names is the last set of label names seen, and direct whether its
	// sets are written from the set (appendSet): the series of a family
	// share one set of names, so this is found out once per family.
	names  *store.LabelNames
	direct bool
}

func (p *protoWriter) flush() {
	if p.err == nil && len(p.buf) > 0 {
		_, p.err = p.w.Write(p.buf)
	}
	p.buf = p.buf[:0]
}

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

func (p *protoWriter) family(f *store.Family) {
	p.body, p.metrics, p.kind = p.body[:0], 0, f.Kind
	f.Snapshots(&p.scratch, p.opts.Release, p.chunk)
	if p.metrics == 0 || p.err != nil {
		return
	}
	var typ dto.MetricType
	switch f.Kind {
	case store.KindCounter:
		typ = dto.MetricType_COUNTER
	case store.KindHistogram:
		typ = dto.MetricType_HISTOGRAM
	case store.KindSummary:
		typ = dto.MetricType_SUMMARY
	default:
		typ = dto.MetricType_GAUGE
	}
	p.familyHeader(p.memo.metricName(f.Name, p.scheme), f.Help, typ)
}

// familyHeader writes the family's length, name, help and type, then the
// metrics collected in body.
func (p *protoWriter) familyHeader(name, help string, typ dto.MetricType) {
	size := 1 + protowire.SizeBytes(len(name)) + 1 + protowire.SizeBytes(len(help)) + 1 + protowire.SizeVarint(uint64(typ)) + len(p.body)
	b := protowire.AppendVarint(p.buf, uint64(size))
	b = append(b, tagFamilyName)
	b = protowire.AppendString(b, name)
	b = append(b, tagFamilyHelp)
	b = protowire.AppendString(b, help)
	b = append(b, tagFamilyType)
	p.buf = protowire.AppendVarint(b, uint64(typ))
	if len(p.buf)+len(p.body) < flushAt {
		p.buf = append(p.buf, p.body...)
		return
	}
	// A large family goes out as it is rather than through another copy.
	p.flush()
	if p.err == nil {
		_, p.err = p.w.Write(p.body)
	}
}

func (p *protoWriter) writeChunk(snaps []store.Snapshot) {
	if p.err != nil {
		return // nobody reads on: skip formatting the rest
	}
	for i := range snaps {
		p.body = p.metric(p.body, &snaps[i])
	}
	p.metrics += len(snaps)
}

func (p *protoWriter) targetInfo(ti store.TargetInfo) {
	b := append(p.body, tagFamilyMetric)
	at := len(b)
	b = append(b, 0, 0)
	b = appendLabels(b, tagLabel, ti.Labels, p.scheme)
	b = append(b, tagGauge, 9)
	b = appendDouble(b, tagValue, 1)
	if p.opts.SendTimestamps && ti.Updated != 0 {
		b = append(b, tagTimestampMs)
		b = protowire.AppendVarint(b, uint64(ti.Updated/1e6))
	}
	p.body = closeMessage(b, at, 2)
}

// metric appends one Metric, tagged as a family's metric.
func (p *protoWriter) metric(b []byte, s *store.Snapshot) []byte {
	b = append(b, tagFamilyMetric)
	at := len(b)
	b = append(b, 0, 0) // most metrics are 128 bytes to 16 KiB long
	b = p.appendSet(b, s.Labels)
	if s.Held {
		b = p.held(b, s)
		return closeMessage(b, at, 2)
	}
	var created int64 // unix nanoseconds; 0 for none
	if ns, ok := s.Created(); ok {
		created = ns
	}
	switch p.kind {
	case store.KindCounter:
		b = append(b, tagCounter)
		c := len(b)
		b = append(b, 0)
		b = appendDouble(b, tagValue, s.Value)
		if e := s.CounterExemplar(); e != nil {
			b = appendExemplar(append(b, tagCounterExemplar), e)
		}
		if created != 0 {
			b = appendTimestamp(b, tagCounterCreated, created)
		}
		b = closeMessage(b, c, 1)
	case store.KindGauge:
		b = append(b, tagGauge, 9)
		b = appendDouble(b, tagValue, s.Value)
	case store.KindSummary:
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
		if created != 0 {
			b = appendTimestamp(b, tagSummaryCreated, created)
		}
		b = closeMessage(b, c, 1)
	}
	b = p.timestamp(b, s.Timestamp != 0, s.Timestamp)
	if p.kind == store.KindHistogram {
		b = p.histogram(b, s, created)
	}
	return closeMessage(b, at, 2)
}

// timestamp appends timestamp_ms when timestamps are sent and show is set.
func (p *protoWriter) timestamp(b []byte, show bool, ns int64) []byte {
	if !p.opts.SendTimestamps || !show {
		return b
	}
	b = append(b, tagTimestampMs)
	return protowire.AppendVarint(b, uint64(ns/1e6))
}

// held appends the zero of a held run, as heldDTO builds it: a counter or
// histogram without observations, in the layout of the stored one.
func (p *protoWriter) held(b []byte, s *store.Snapshot) []byte {
	if p.kind == store.KindCounter {
		b = append(b, tagCounter)
		c := len(b)
		b = append(b, 0)
		b = appendDouble(b, tagValue, 0)
		b = appendTimestamp(b, tagCounterCreated, s.Start)
		b = closeMessage(b, c, 1)
		return p.timestamp(b, true, s.Timestamp)
	}
	b = p.timestamp(b, true, s.Timestamp)
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
	b = appendTimestamp(b, tagHistogramCreated, s.Start)
	return closeMessage(b, h, 2)
}

func (p *protoWriter) histogram(b []byte, s *store.Snapshot, created int64) []byte {
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
		if created != 0 {
			b = appendTimestamp(b, tagHistogramCreated, created)
		}
		for i := range s.Exemplars {
			b = appendExemplar(append(b, tagExemplars0, tagExemplars1), &s.Exemplars[i])
		}
		return closeMessage(b, h, 2)
	}
	if s.Bounds != nil {
		b = p.buckets(b, s)
	}
	if created != 0 {
		b = appendTimestamp(b, tagHistogramCreated, created)
	}
	return closeMessage(b, h, 2)
}

// buckets appends the classic buckets, with the exemplars where
// store.Snapshot.BucketExemplars places them; one above every bound gets an
// explicit +Inf bucket, as client_golang adds.
func (p *protoWriter) buckets(b []byte, s *store.Snapshot) []byte {
	bounds := s.Bounds.Values
	at := s.BucketExemplars(p.exemplarAt)
	p.exemplarAt = at
	for i, c := range s.Cumulative {
		if len(at) == 0 || at[i] < 0 {
			// Without an exemplar the length is known: 10 bytes and the count's varint.
			b = append(b, tagBucket, byte(10+protowire.SizeVarint(c)), tagCumulativeCount)
			b = protowire.AppendVarint(b, c)
			b = appendDouble(b, tagUpperBound, bounds[i])
			continue
		}
		b = appendBucket(b, c, bounds[i], &s.Exemplars[at[i]])
	}
	if len(at) > 0 && at[len(bounds)] >= 0 {
		b = appendBucket(b, s.Count, math.Inf(1), &s.Exemplars[at[len(bounds)]])
	}
	return b
}

func appendBucket(b []byte, count uint64, bound float64, e *store.Exemplar) []byte {
	b = append(b, tagBucket)
	at := len(b)
	b = append(b, 0)
	b = append(b, tagCumulativeCount)
	b = protowire.AppendVarint(b, count)
	b = appendDouble(b, tagUpperBound, bound)
	b = appendExemplar(append(b, tagBucketExemplar), e)
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
func appendExemplar(b []byte, e *store.Exemplar) []byte {
	at := len(b)
	b = append(b, 0)
	// Exemplar labels are neither renamed nor escaped: expfmt leaves them.
	b = appendLabels(b, tagExemplarLabel, e.Labels, model.NoEscaping)
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

// appendLabels appends each pair of a label set written as text
// (store.LabelSet.AppendText) as a LabelPair
// field with the given tag: names and values unescaped, names sorted and
// escaped as WriteEncoded and expfmt do (parseLabels, escapeLabelNames,
// model.EscapeMetricFamily).
//
// Rendered sets are sorted by their rendered names, so a set whose names
// hold no escape and, unless scheme is NoEscaping, are legacy label names
// other than __name__ (which every other scheme would touch) goes out in one
// pass as it comes. Anything else is rare and takes the reference's own
// path. The pass reads each byte once, through a table: reading the pairs
// with pairReader and then checking and unescaping them took three times as
// long.
func appendLabels(b []byte, tag byte, labels string, scheme model.EscapingScheme) []byte {
	start := len(b)
	nameBytes := uint8(legacyByte)
	if scheme == model.NoEscaping {
		nameBytes = utf8NameByte
	}
	var prev string
	for s := labels; len(s) > 0; {
		i := 0
		for i < len(s) && labelBytes[s[i]]&nameBytes != 0 {
			i++
		}
		if i == 0 || i+1 >= len(s) || s[i] != '=' || s[i+1] != '"' {
			return appendLabelsSlow(b[:start], tag, labels, scheme)
		}
		name := s[:i]
		if nameBytes == legacyByte && (name[0] <= '9' || name == model.MetricNameLabel) {
			return appendLabelsSlow(b[:start], tag, labels, scheme) // a leading digit, or __name__
		}
		if prev != "" && (name[0] < prev[0] || name[0] == prev[0] && name <= prev) {
			return appendLabelsSlow(b[:start], tag, labels, scheme)
		}
		prev = name
		s = s[i+2:]
		j := 0
		for j < len(s) && labelBytes[s[j]]&valueEnd == 0 {
			j++
		}
		if j == len(s) {
			return appendLabelsSlow(b[:start], tag, labels, scheme)
		}
		value, n := s[:j], j
		if s[j] == '\\' {
			if j = promtext.ClosingQuote(s, j); j < 0 {
				return appendLabelsSlow(b[:start], tag, labels, scheme)
			}
			value = s[:j]
			n = unescapedLen(value)
		}
		if s = s[j+1:]; len(s) > 0 {
			if s[0] != ',' {
				return appendLabelsSlow(b[:start], tag, labels, scheme)
			}
			s = s[1:]
		}
		b = appendPair(b, tag, name, value, n)
	}
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

// appendSet appends the pairs of a series' label set as LabelPair fields,
// straight from its names and values when the names are written as stored:
// sorted, without an escape, and, unless scheme is NoEscaping, legacy label
// names other than __name__. Other sets are written as text and take
// appendLabels. Straight from the set, BenchmarkWriteProtobuf takes 28 ns
// per sample instead of 57 by way of the text (44 when the store kept text).
func (p *protoWriter) appendSet(b []byte, set store.LabelSet) []byte {
	if set.Names != p.names {
		p.names, p.direct = set.Names, directNames(set.Names.Names, p.scheme)
	}
	if !p.direct {
		p.text = set.AppendText(p.text[:0])
		return appendLabels(b, tagLabel, unsafe.String(unsafe.SliceData(p.text), len(p.text)), p.scheme)
	}
	v := set.Values
	for _, name := range set.Names.Names {
		value, rest, ok := store.NextValue(v)
		if !ok {
			break
		}
		v = rest
		n := len(value)
		if strings.IndexByte(value, '\\') >= 0 {
			n = unescapedLen(value)
		}
		b = appendPair(b, tagLabel, name, value, n)
	}
	return b
}

// directNames reports whether appendSet writes sets of these names
// straight: as appendLabels would in its one pass.
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

// The classes of labelBytes.
const (
	legacyByte   = 1 << iota // in a legacy label name (a leading digit is checked apart)
	utf8NameByte             // in a name that goes out as it is when UTF-8 is allowed
	valueEnd                 // ends the plain part of a value
)

var labelBytes = func() (t [256]uint8) {
	for c := range 256 {
		if promtext.IsLegacyLabelByte(byte(c), false) {
			t[c] |= legacyByte
		}
		switch c {
		case '"', '\\':
			t[c] |= valueEnd
		case '=':
		default:
			t[c] |= utf8NameByte
		}
	}
	return t
}()

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

// appendLabelsSlow builds the pairs as WriteEncoded does and escapes them
// as expfmt does. It allocates.
func appendLabelsSlow(b []byte, tag byte, labels string, scheme model.EscapingScheme) []byte {
	pairs := parseLabels(labels)
	if scheme == model.UnderscoreEscaping {
		// The rule every format applies to label names (labelSets.appendUnderscored).
		pairs = underscoredLabels(labels)
	}
	for _, l := range pairs {
		name, value := l.GetName(), l.GetValue()
		if scheme != model.NoEscaping {
			// model.EscapeMetricFamily's rule for the labels of a metric.
			switch {
			case name == model.MetricNameLabel:
				if !model.LegacyValidation.IsValidMetricName(value) {
					value = model.EscapeName(value, scheme)
				}
			case !model.LegacyValidation.IsValidMetricName(name):
				name = model.EscapeName(name, scheme)
			}
		}
		size := 1 + protowire.SizeBytes(len(name)) + 1 + protowire.SizeBytes(len(value))
		b = append(b, tag)
		b = protowire.AppendVarint(b, uint64(size))
		b = append(b, tagPairName)
		b = protowire.AppendString(b, name)
		b = append(b, tagPairValue)
		b = protowire.AppendString(b, value)
	}
	return b
}
