package exposition

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/prommodel"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
)

var schemes = []model.EscapingScheme{model.NoEscaping, model.UnderscoreEscaping, model.DotsEscaping, model.ValueEncodingEscaping}

// requireSameAsEncoded checks that WriteProtobuf writes what WriteReference
// writes through expfmt for st: the same families by proto.Equal once
// decoded, and the same bytes.
func requireSameAsEncoded(t *testing.T, st *store.Store, opts Options, scheme model.EscapingScheme) {
	t.Helper()
	format := expfmt.NewFormat(expfmt.TypeProtoDelim).WithEscapingScheme(scheme)
	var want, got bytes.Buffer
	require.NoError(t, WriteReference(&want, format, st, opts))
	require.NoError(t, Write(&got, st, Request{Format: Protobuf, Options: opts, Escaping: scheme}))
	wantFamilies, err := decodeProtobuf(want.Bytes())
	require.NoError(t, err)
	gotFamilies, err := decodeProtobuf(got.Bytes())
	require.NoError(t, err, "WriteProtobuf's output does not decode")
	require.Len(t, gotFamilies, len(wantFamilies))
	for i := range wantFamilies {
		if !proto.Equal(wantFamilies[i], gotFamilies[i]) {
			t.Fatalf("%s: family %d differs\nwant %s\ngot  %s", scheme, i, prototext.Format(wantFamilies[i]), prototext.Format(gotFamilies[i]))
		}
	}
	assert.True(t, bytes.Equal(want.Bytes(), got.Bytes()), "%s: same families, other bytes", scheme)
	// The text forms are the delimited protobuf re-encoded.
	for f, typ := range map[Format]expfmt.FormatType{ProtobufText: expfmt.TypeProtoText, ProtobufCompact: expfmt.TypeProtoCompact} {
		want.Reset()
		got.Reset()
		require.NoError(t, WriteReference(&want, expfmt.NewFormat(typ).WithEscapingScheme(scheme), st, opts))
		require.NoError(t, Write(&got, st, Request{Format: f, Options: opts, Escaping: scheme}))
		assert.Equal(t, want.String(), got.String(), "%s, %s", f, scheme)
	}
}

// decodeProtobuf reads delimited families without expfmt's name checks:
// some cases here hold names that no scraper accepts, written alike by both.
func decodeProtobuf(b []byte) ([]*dto.MetricFamily, error) {
	r := bufio.NewReader(bytes.NewReader(b))
	var out []*dto.MetricFamily
	for {
		mf := &dto.MetricFamily{}
		if err := (protodelim.UnmarshalOptions{MaxSize: -1}).UnmarshalFrom(r, mf); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, err
		}
		out = append(out, mf)
	}
}

// testStore builds stores series by series.
type testStore struct {
	t   *testing.T
	st  *store.Store
	res *store.Resource
}

func newTestStore(t *testing.T) *testStore {
	st := store.New(1<<20, 1<<20, prommodel.Claims{})
	res := st.Resource([]byte("job\xffinstance"), 5e9)
	ti := looseSet(`instance="i",job="j",os_type="linux"`)
	res.SetTargetInfo(ti.Names, ti.Labels().Own)
	return &testStore{t: t, st: st, res: res}
}

func (ts *testStore) add(family string, kind prommodel.Kind, labels string, fill func(*store.Series)) {
	var w store.Writer
	require.True(ts.t, ts.st.Write(&w, family, kind, "help of "+family, "", ts.res, 1), family)
	defer w.Close()
	set := looseSet(labels)
	s, out := w.Put(set.Labels())
	require.Equal(ts.t, store.Created, out, labels)
	s.Timestamp = 1_700_000_000_123_456_789
	fill(s)
}

var testBounds = &store.Bounds{Values: []float64{0.5, 1, 5}, Text: []string{"0.5", "1", "5"}}

func TestWriteProtobufWritesWhatExpfmtWrites(t *testing.T) {
	ts := newTestStore(t)
	exemplar := func(v float64, ns int64) store.Exemplar {
		return store.Exemplar{Labels: exemplarLabels(`span_id="0102",trace_id="0a0b"`), Value: v, Timestamp: ns}
	}
	ts.add("gauge", prommodel.KindGauge, `a="1",b=""`, func(s *store.Series) { s.Value = 2.5 })
	ts.add("gauge", prommodel.KindGauge, ``, func(s *store.Series) { s.Value = math.NaN(); s.Timestamp = 0 })
	ts.add("gauge", prommodel.KindGauge, `a="q\"uote",b="back\\slash",c="new\nline"`, func(s *store.Series) { s.Value = math.Inf(-1) })
	ts.add("gauge", prommodel.KindGauge, `a="`+string(bytes.Repeat([]byte("v"), 300))+`"`, func(s *store.Series) { s.Value = math.Copysign(0, -1) })
	ts.add("counter_total", prommodel.KindCounter, `a="1"`, func(s *store.Series) {
		s.Value, s.Start = 7, 1_600_000_000_000_000_001
		s.SetExemplars([]store.Exemplar{exemplar(1, 0), exemplar(2, 1_700_000_000_500_000_000)})
	})
	ts.add("counter_total", prommodel.KindCounter, `a="2"`, func(s *store.Series) { s.Value, s.Start = 1, 999_999_999 }) // start too early to be a created time
	ts.add("counter_total", prommodel.KindCounter, `a="held"`, func(s *store.Series) {
		s.Value, s.Start, s.RunStarted = 3, 1_600_000_000_000_000_000, 100
	})
	ts.add("summary", prommodel.KindSummary, `a="1"`, func(s *store.Series) {
		s.Value, s.Count, s.Start = 10, 4, 1_600_000_000_000_000_000
		s.SetQuantiles([]store.Quantile{{Quantile: 0.5, Value: 1}, {Quantile: 0.99, Value: math.NaN()}})
	})
	ts.add("summary", prommodel.KindSummary, `a="2"`, func(s *store.Series) {})
	ts.add("classic", prommodel.KindHistogram, `a="1"`, func(s *store.Series) {
		s.Value, s.Count, s.Start = 12.5, 1<<40, 1_600_000_000_000_000_000
		s.Histogram = &store.Histogram{Bounds: testBounds, Cumulative: []uint64{1, 200, 1 << 35}}
		// Two in one bucket (the later wins), one on a bound, two above every bound, a NaN.
		s.SetExemplars([]store.Exemplar{exemplar(0.7, 1), exemplar(0.9, 2), exemplar(5, 0), exemplar(7, 3), exemplar(9, 4), exemplar(math.NaN(), 5)})
	})
	ts.add("classic", prommodel.KindHistogram, `a="2"`, func(s *store.Series) {
		s.Count = 3
		s.Histogram = &store.Histogram{Bounds: testBounds, Cumulative: []uint64{0, 0, 3}}
		s.SetExemplars([]store.Exemplar{exemplar(-1, 0)})
	})
	ts.add("classic", prommodel.KindHistogram, `a="held"`, func(s *store.Series) {
		s.Count, s.Start, s.RunStarted = 3, 1_600_000_000_000_000_000, 100
		s.Histogram = &store.Histogram{Bounds: testBounds, Cumulative: []uint64{1, 2, 3}}
	})
	ts.add("classic", prommodel.KindHistogram, `a="no buckets"`, func(s *store.Series) { s.Count, s.Value = 1, 1 })
	ts.add("native", prommodel.KindHistogram, `a="1"`, func(s *store.Series) {
		s.Value, s.Count, s.Start = 3, 9, 1_600_000_000_000_000_000
		s.SetNative(&store.NativeHistogram{Schema: -2, ZeroThreshold: 1e-9, ZeroCount: 1,
			Positive: store.Buckets{Offset: -3, Counts: []uint64{1, 2, 0, 0, 4, 0, 1}},
			Negative: store.Buckets{Offset: 5, Counts: []uint64{0, 3, 300}},
		})
		s.SetExemplars([]store.Exemplar{exemplar(0.1, 1_700_000_000_000_000_000), exemplar(-4, 1_700_000_000_000_000_001)})
	})
	ts.add("native", prommodel.KindHistogram, `a="empty"`, func(s *store.Series) {
		s.SetNative(&store.NativeHistogram{Schema: 8})
	})
	ts.add("native", prommodel.KindHistogram, `a="negative only"`, func(s *store.Series) {
		s.Count = 2
		s.SetNative(&store.NativeHistogram{Schema: 0, Negative: store.Buckets{Offset: -1, Counts: []uint64{2}}})
	})
	ts.add("native", prommodel.KindHistogram, `a="held"`, func(s *store.Series) {
		s.Count, s.Start, s.RunStarted = 2, 1_600_000_000_000_000_000, 100
		s.SetNative(&store.NativeHistogram{Schema: 3, ZeroThreshold: 0.5, Positive: store.Buckets{Counts: []uint64{2}}})
	})
	ts.add("native", prommodel.KindHistogram, `a="hidden"`, func(s *store.Series) { s.RunStarted = 1000 })
	ts.add("only_hidden", prommodel.KindGauge, `a="1"`, func(s *store.Series) { s.RunStarted = 1000 })
	ts.st.Family("empty", prommodel.KindGauge, "", "")
	// Names: UTF-8, escaped, out of order once unescaped, __name__, a colon,
	// and sets the converter never makes (looseSet). Malformed text cannot
	// be stored: a set keeps its names and values apart.
	ts.add("caf\u00e9.orders_total", prommodel.KindCounter, `caf\u00e9.x="1",z="2"`, func(s *store.Series) { s.Value = 1 })
	ts.add("names", prommodel.KindGauge, `a\"="1",a#="2"`, func(s *store.Series) {})
	ts.add("names", prommodel.KindGauge, `__name__="x.y",a="1"`, func(s *store.Series) {})
	ts.add("names", prommodel.KindGauge, `a.b="1",a:b="2",a_b="3"`, func(s *store.Series) {})
	ts.add("names", prommodel.KindGauge, `b="1",a="2"`, func(s *store.Series) {})
	ts.add("names", prommodel.KindGauge, `a="1",a="2"`, func(s *store.Series) {})
	ts.add("names", prommodel.KindGauge, `="1",1x="2"`, func(s *store.Series) {})
	ts.add("names", prommodel.KindGauge, `a\\="1"`, func(s *store.Series) {})
	ts.add("names", prommodel.KindGauge, `a="1"b="2"`, func(s *store.Series) {})
	ts.add("names", prommodel.KindGauge, `a="x\"y",b="v\\"`, func(s *store.Series) {})
	ts.add("names", prommodel.KindGauge, ``, func(s *store.Series) {})

	for _, send := range []bool{false, true} {
		opts := Options{SendTimestamps: send, TargetInfoName: "target_info", Release: store.Release{Zero: 100, Value: 50}}
		for _, scheme := range schemes {
			t.Run(fmt.Sprintf("%s/timestamps=%v", scheme, send), func(t *testing.T) {
				requireSameAsEncoded(t, ts.st, opts, scheme)
			})
		}
	}
}

func TestWriteProtobufOfAnEmptyStoreIsEmpty(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, Write(&b, store.New(1, 1, prommodel.Claims{}), Request{Format: Protobuf, Options: Options{TargetInfoName: "target_info"}, Escaping: model.NoEscaping}))
	assert.Zero(t, b.Len())
}

func TestWriteProtobufSplitsOnlyBetweenFamilies(t *testing.T) {
	// Families cut across parts go out whole, each once: parts of 100
	// lines, as a scrape that is not split writes them (plainCodec, one
	// worker).
	ts := newTestStore(t)
	value := string(bytes.Repeat([]byte("x"), 1000))
	for i := range 3000 {
		ts.add(fmt.Sprint("f", i%3), prommodel.KindGauge, fmt.Sprintf(`i="%d",v="%s"`, i, value), func(s *store.Series) { s.Value = float64(i) })
	}
	var w countingWriter
	require.NoError(t, Write(&w, ts.st, Request{Format: Protobuf, Options: Options{TargetInfoName: "target_info"}, Escaping: model.NoEscaping,
		Parts: Parts{Codec: plainCodec{}, Workers: 1, PartLines: 100}}))
	assert.Greater(t, w.writes, 1)
	requireSameAsEncoded(t, ts.st, Options{TargetInfoName: "target_info"}, model.NoEscaping)
}

type countingWriter struct{ writes int }

func (c *countingWriter) Write(p []byte) (int, error) { c.writes++; return len(p), nil }

func TestWriteProtobufStopsAtAWriteError(t *testing.T) {
	ts := newTestStore(t)
	ts.add("g", prommodel.KindGauge, `a="1"`, func(s *store.Series) {})
	err := Write(failingWriter{}, ts.st, Request{Format: Protobuf, Options: Options{TargetInfoName: "target_info"}, Escaping: model.NoEscaping})
	assert.ErrorIs(t, err, errGone)
}

var errGone = errors.New("gone")

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errGone }

func TestCloseMessageMovesTheMessageWhenItsLengthNeedsOtherRoom(t *testing.T) {
	for _, n := range []int{0, 1, 127, 128, 300, 16383, 16384, 1 << 21} {
		for _, room := range []int{1, 2} {
			b := append([]byte{0xAA}, make([]byte, room)...)
			for i := range n {
				b = append(b, byte(i))
			}
			b = closeMessage(b, 1, room)
			want := append([]byte{0xAA}, protowireLen(n)...)
			for i := range n {
				want = append(want, byte(i))
			}
			require.Equal(t, want, b, "n=%d room=%d", n, room)
		}
	}
}

func protowireLen(n int) []byte {
	var b []byte
	v := uint64(n)
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// exemplarLabels is an exemplar's set written as text.
func exemplarLabels(text string) store.LabelSet { return looseSet(text) }
