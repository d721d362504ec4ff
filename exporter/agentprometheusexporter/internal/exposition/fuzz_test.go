package exposition_test

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/prometheus/common/model"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/exposition"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/storetest"
	"github.com/statsgate/statsgate/internal/otlprand"
)

// fuzzSeeds are random batches of every metric type, with exemplars, start
// times, deltas, awkward names and values.
func fuzzSeeds() []pmetric.Metrics {
	var seeds []pmetric.Metrics
	for seed := range uint64(6) {
		seeds = append(seeds, otlprand.New(seed).Batch(0))
	}
	return seeds
}

// FuzzTextEquivalence stores arbitrary OTLP metrics, twice so that updates
// and runs of deltas happen, with legacy and with UTF-8 names, and checks
// that the direct writers write what expfmt writes from the same store in
// every text-ish format, scheme and setting (compareWriters), and that a
// scrape by parts writes what the sequential writers write.
func FuzzTextEquivalence(f *testing.F) {
	storetest.AddSeeds(f, 0, fuzzSeeds()...)
	f.Fuzz(func(t *testing.T, data []byte) {
		md, err := (&pmetric.ProtoUnmarshaler{}).UnmarshalMetrics(data)
		if err != nil {
			t.Skip("not OTLP")
		}
		for _, naming := range []storetest.Naming{storetest.UnderscoreEscapingWithSuffixes, storetest.NoUTF8EscapingWithSuffixes} {
			e := storetest.Of(t, naming, md, md)
			if err := compareWriters(e.Store, e.Expo); err != nil {
				t.Fatalf("%s: %v", naming, err)
			}
			for _, scheme := range storetest.AllSchemes {
				if err := compareParts(e.Store, e.Expo, scheme); err != nil {
					t.Fatalf("%s, escaping=%s: %v", naming, scheme, err)
				}
			}
		}
	})
}

// FuzzProtobufEquivalence stores arbitrary OTLP metrics under both
// translation strategies and checks that WriteProtobuf writes what
// WriteEncoded writes through expfmt (see requireSameProtobuf).
func FuzzProtobufEquivalence(f *testing.F) {
	storetest.AddSeeds(f, 0, fuzzSeeds()...)
	f.Fuzz(func(t *testing.T, data []byte) {
		md, err := (&pmetric.ProtoUnmarshaler{}).UnmarshalMetrics(data)
		if err != nil {
			t.Skip("not OTLP")
		}
		for _, naming := range []storetest.Naming{storetest.UnderscoreEscapingWithSuffixes, storetest.NoUTF8EscapingWithSuffixes} {
			e := protobufTestStore(t, naming)
			for range 2 {
				e.Consume(md)
			}
			requireSameProtobuf(t, naming.String(), e.Store, e.Expo)
		}
	})
}

// plainParts is a Codec that writes the parts as they are: a scrape by
// parts must write the bytes of a sequential one.
type plainParts struct{}

type plainPart struct{ bytes.Buffer }

func (*plainPart) Close() error { return nil }

func (plainParts) Begin(io.Writer) error { return nil }
func (plainParts) Part() io.WriteCloser  { return new(plainPart) }
func (plainParts) End(io.Writer) error   { return nil }
func (plainParts) Emit(w io.Writer, p io.WriteCloser) error {
	_, err := w.Write(p.(*plainPart).Bytes())
	return err
}

// compareParts checks that a scrape by parts, text, OpenMetrics and
// protobuf, writes what the sequential writers write, split in several
// ways: a part per series line on more workers than cores, parts of a few
// lines, and as shipped.
func compareParts(st *store.Store, opts exposition.Options, scheme model.EscapingScheme) error {
	for _, f := range []struct {
		name  string
		whole func(io.Writer) error
		parts func(io.Writer, exposition.Parts) error
	}{
		{"text", func(w io.Writer) error { return exposition.WriteText(w, st, opts, scheme) },
			func(w io.Writer, p exposition.Parts) error { return exposition.WriteTextParts(w, st, opts, scheme, p) }},
		{"OpenMetrics", func(w io.Writer) error { return exposition.WriteOpenMetrics(w, st, opts, scheme) },
			func(w io.Writer, p exposition.Parts) error {
				return exposition.WriteOpenMetricsParts(w, st, opts, scheme, p)
			}},
		{"protobuf", func(w io.Writer) error { return exposition.WriteProtobuf(w, st, opts, scheme) },
			func(w io.Writer, p exposition.Parts) error {
				return exposition.WriteProtobufParts(w, st, opts, scheme, p)
			}},
	} {
		var want bytes.Buffer
		if err := f.whole(&want); err != nil {
			return err
		}
		for _, split := range []struct{ workers, lines int }{{4, 1}, {3, 5}, {1, 7}, {2, 4096}} {
			var got bytes.Buffer
			if err := f.parts(&got, exposition.Parts{Codec: plainParts{}, Workers: split.workers, PartLines: split.lines}); err != nil {
				return err
			}
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				return fmt.Errorf("%s by parts %+v: bytes differ\n%s", f.name, split, storetest.FirstDifference(got.Bytes(), want.Bytes()))
			}
		}
	}
	return nil
}
