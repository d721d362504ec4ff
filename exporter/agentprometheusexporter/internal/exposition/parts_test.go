package exposition

import (
	"bytes"
	"compress/flate"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/prommodel"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
)

// flateCodec deflates each part on its own, ending it with a sync flush,
// and ends the stream with an empty final block: the parts of a scrape must
// make one stream however they are cut.
type flateCodec struct{}

type flatePart struct {
	out bytes.Buffer
	fw  *flate.Writer
}

func (p *flatePart) Write(b []byte) (int, error) { return p.fw.Write(b) }
func (p *flatePart) Close() error                { return p.fw.Flush() }

func (flateCodec) Begin(io.Writer) error { return nil }
func (flateCodec) Part() io.WriteCloser {
	p := new(flatePart)
	p.fw, _ = flate.NewWriter(&p.out, flate.BestSpeed)
	return p
}
func (flateCodec) Emit(w io.Writer, p io.WriteCloser) error {
	_, err := w.Write(p.(*flatePart).out.Bytes())
	return err
}
func (flateCodec) End(w io.Writer) error {
	_, err := w.Write([]byte{0x03, 0x00})
	return err
}

var splits = []struct{ workers, lines int }{{4, 1}, {3, 5}, {1, 7}, {2, 50}, {2, 4096}}

// requireSameByParts checks that every format by parts, cut in every way
// of splits, writes the bytes of a scrape that is not split, plain and
// deflated.
func requireSameByParts(t *testing.T, st *store.Store, opts Options, scheme model.EscapingScheme) {
	t.Helper()
	for _, f := range []Format{Text, OpenMetrics, Protobuf} {
		req := Request{Format: f, Escaping: scheme, Options: opts}
		var want bytes.Buffer
		require.NoError(t, Write(&want, st, req))
		for _, split := range splits {
			var got bytes.Buffer
			req.Parts = Parts{Codec: plainCodec{}, Workers: split.workers, PartLines: split.lines}
			require.NoError(t, Write(&got, st, req))
			require.True(t, bytes.Equal(want.Bytes(), got.Bytes()), "%s by parts %+v, %s: bytes differ", f, split, scheme)
			var zipped bytes.Buffer
			req.Parts.Codec = flateCodec{}
			require.NoError(t, Write(&zipped, st, req))
			unzipped, err := io.ReadAll(flate.NewReader(&zipped))
			require.NoError(t, err, "%s by deflated parts %+v", f, split)
			require.True(t, bytes.Equal(want.Bytes(), unzipped), "%s by deflated parts %+v, %s: bytes differ", f, split, scheme)
		}
	}
}

// partsStore holds families that parts cut anywhere: families of many
// parts, families whose last series, or all of whose series, are hidden
// (a family that goes on in a part but shows nothing more), and a family
// whose length takes four bytes.
func partsStore(t *testing.T) *testStore {
	ts := newTestStore(t)
	hide := func(s *store.Series) { s.RunStarted = 1000 } // shown by no release of the tests
	for i := range 300 {
		ts.add("many", prommodel.KindGauge, fmt.Sprintf(`i="%d"`, i), func(s *store.Series) { s.Value = float64(i) })
	}
	for i := range 5 {
		ts.add("hidden_end_total", prommodel.KindCounter, fmt.Sprintf(`i="%d"`, i), func(s *store.Series) {
			s.Value, s.Start = float64(i), 1_600_000_000_000_000_000
			if i >= 2 {
				hide(s)
			}
		})
	}
	for i := range 200 {
		ts.add("histogram", prommodel.KindHistogram, fmt.Sprintf(`i="%d"`, i), func(s *store.Series) {
			s.Count, s.Value = 3, 1.5
			s.Histogram = &store.Histogram{Bounds: testBounds, Cumulative: []uint64{1, 2, 3}}
			s.SetExemplars([]store.Exemplar{{Labels: exemplarLabels(`trace_id="ab"`), Value: 0.7}, {Labels: exemplarLabels(`trace_id="cd"`), Value: 9}})
			if i >= 130 {
				hide(s)
			}
		})
	}
	for i := range 40 {
		ts.add("all_hidden", prommodel.KindGauge, fmt.Sprintf(`i="%d"`, i), hide)
	}
	ts.add("one", prommodel.KindSummary, `a="1"`, func(s *store.Series) {
		s.Count = 2
		s.SetQuantiles([]store.Quantile{{Quantile: 0.5, Value: 1}})
	})
	value := strings.Repeat("x", 1100)
	for i := range 2000 { // 2.2 MB: the family's length takes four bytes
		ts.add("large", prommodel.KindGauge, fmt.Sprintf(`i="%d",v="%s"`, i, value), func(s *store.Series) {})
	}
	ts.add("last", prommodel.KindGauge, `a="1"`, func(s *store.Series) {})
	for i := range 30 {
		ts.add("last_hidden", prommodel.KindGauge, fmt.Sprintf(`i="%d"`, i), hide)
	}
	return ts
}

func TestScrapeByPartsCutsFamiliesAnywhere(t *testing.T) {
	ts := partsStore(t)
	opts := Options{TargetInfoName: "target_info", Release: store.Release{Zero: 100, Value: 50}, CreatedSamples: true}
	for _, scheme := range []model.EscapingScheme{model.UnderscoreEscaping, model.NoEscaping} {
		requireSameByParts(t, ts.st, opts, scheme)
	}
	requireSameAsEncoded(t, ts.st, opts, model.UnderscoreEscaping)
}

func TestScrapeByPartsOfAFamilyUnshownAtItsEnd(t *testing.T) {
	ts := newTestStore(t)
	for i := range 300 {
		ts.add("g", prommodel.KindGauge, fmt.Sprintf(`i="%d"`, i), func(s *store.Series) {
			if i >= 100 {
				s.RunStarted = 1000
			}
		})
	}
	requireSameByParts(t, ts.st, Options{TargetInfoName: "target_info", Release: store.Release{Zero: 100, Value: 50}}, model.UnderscoreEscaping)
}

// failAfter fails every write after the first n bytes.
type failAfter struct{ n int }

func (w *failAfter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		n := w.n
		w.n = 0
		return n, errGone
	}
	w.n -= len(p)
	return len(p), nil
}

// A protobuf scrape by parts returns the failure of its writer wherever it
// happens, with families held for their beginning or not.
func TestProtobufByPartsStopsOnAWriteError(t *testing.T) {
	ts := partsStore(t)
	opts := Options{TargetInfoName: "target_info"}
	var whole bytes.Buffer
	require.NoError(t, Write(&whole, ts.st, Request{Format: Protobuf, Options: opts, Escaping: model.UnderscoreEscaping}))
	for _, at := range []int{0, 1, 100, whole.Len() / 3, whole.Len() / 2, whole.Len() - 1} {
		for _, split := range splits {
			err := Write(&failAfter{n: at}, ts.st, Request{Format: Protobuf, Options: opts, Escaping: model.UnderscoreEscaping, Parts: Parts{Codec: plainCodec{}, Workers: split.workers, PartLines: split.lines}})
			assert.ErrorIs(t, err, errGone, "failing after %d bytes, parts %+v", at, split)
		}
	}
}
