package exposition_test

import (
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
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/exposition"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/storetest"
	"github.com/statsgate/statsgate/internal/otlprand"
)

// protobufReleases show new runs of deltas as their values, as their zeros, and
// not at all (store.Series.Shown).
var protobufReleases = []store.Release{{Zero: math.MaxInt64, Value: math.MaxInt64}, {Zero: math.MaxInt64}, {}}

// TestProtobufWriterWritesWhatExpfmtWrites stores random batches (every
// metric type, exemplars, start times, deltas, awkward names and values)
// under both translation strategies and checks, for every escaping scheme,
// with and without timestamps, with new runs of deltas shown as values, as
// zeros or not at all, that WriteProtobuf writes the families WriteReference
// writes through expfmt.
func TestProtobufWriterWritesWhatExpfmtWrites(t *testing.T) {
	for seed := range uint64(40) {
		for _, strategy := range []storetest.Naming{storetest.UnderscoreEscapingWithSuffixes, storetest.NoUTF8EscapingWithSuffixes} {
			e := protobufTestStore(t, strategy)
			// The same series twice: cumulative points move on, aligned deltas accumulate.
			g := otlprand.New(seed)
			for i := range 2 {
				e.Consume(g.Batch(i))
			}
			requireSameProtobuf(t, fmt.Sprintf("seed %d, %s", seed, strategy), e.Store, e.Expo)
		}
	}
}

// protobufTestStore has two resource attributes as labels, one of them dotted.
func protobufTestStore(t testing.TB, naming storetest.Naming) *storetest.Store {
	return storetest.New(t, storetest.Options{Naming: naming, ResourceLabels: []string{"k.dotted", "code"}})
}

// requireSameProtobuf compares WriteProtobuf with WriteReference for every
// escaping scheme, release and timestamp setting.
func requireSameProtobuf(t testing.TB, what string, st *store.Store, expo exposition.Options) {
	t.Helper()
	for _, scheme := range storetest.AllSchemes {
		for _, release := range protobufReleases {
			for _, send := range []bool{false, true} {
				opts := expo
				opts.SendTimestamps, opts.Release = send, release
				if err := sameProtobuf(st, opts, scheme); err != nil {
					t.Fatalf("%s, escaping %s, release %+v, timestamps %v: %v", what, scheme, release, send, err)
				}
			}
		}
	}
}

// sameProtobuf writes st both ways and decodes both with expfmt's decoder:
// the families must be equal by proto.Equal, and so must the bytes.
func sameProtobuf(st *store.Store, opts exposition.Options, scheme model.EscapingScheme) error {
	format := expfmt.NewFormat(expfmt.TypeProtoDelim).WithEscapingScheme(scheme)
	var want, got bytes.Buffer
	if err := exposition.WriteReference(&want, format, st, opts); err != nil {
		return fmt.Errorf("WriteReference: %w", err)
	}
	if err := exposition.Write(&got, st, exposition.Request{Format: exposition.Protobuf, Options: opts, Escaping: scheme}); err != nil {
		return fmt.Errorf("WriteProtobuf: %w", err)
	}
	wantFamilies, wantErr := decodeFamilies(want.Bytes(), format)
	gotFamilies, gotErr := decodeFamilies(got.Bytes(), format)
	if fmt.Sprint(wantErr) != fmt.Sprint(gotErr) {
		return fmt.Errorf("decoding WriteReference's output: %v, WriteProtobuf's: %v", wantErr, gotErr)
	}
	if len(gotFamilies) != len(wantFamilies) {
		return fmt.Errorf("%d families, WriteReference wrote %d", len(gotFamilies), len(wantFamilies))
	}
	for i := range wantFamilies {
		if !proto.Equal(wantFamilies[i], gotFamilies[i]) {
			return fmt.Errorf("family %d differs\nwant %s\ngot  %s", i, prototext.Format(wantFamilies[i]), prototext.Format(gotFamilies[i]))
		}
	}
	if !bytes.Equal(want.Bytes(), got.Bytes()) {
		return errors.New("equal families, different bytes")
	}
	return nil
}

func decodeFamilies(b []byte, format expfmt.Format) ([]*dto.MetricFamily, error) {
	dec := expfmt.NewDecoder(bytes.NewReader(b), format)
	var out []*dto.MetricFamily
	for {
		mf := &dto.MetricFamily{}
		if err := dec.Decode(mf); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return out, err
		}
		out = append(out, mf)
	}
}

// TestWriteProtobufDoesNotAllocatePerSeries pins the protobuf scrape: a warm
// writer allocates a few slices per scrape (the sorted families and
// target_info series), nothing per family or series.
func TestWriteProtobufDoesNotAllocatePerSeries(t *testing.T) {
	if storetest.RaceEnabled {
		t.Skip("the race detector allocates")
	}
	exp := storetest.New(t, storetest.Options{ResourceLabels: []string{"host.name", "cloud.region"}})
	for a := range 10 {
		exp.Consume(storetest.AgentBatch(a, 100))
	}
	write := func() {
		if err := exposition.Write(io.Discard, exp.Store, exposition.Request{Format: exposition.Protobuf, Options: exp.Expo, Escaping: model.UnderscoreEscaping}); err != nil {
			t.Fatal(err)
		}
	}
	write()
	allocs := testing.AllocsPerRun(20, write)
	assert.LessOrEqual(t, allocs, 2.0, "allocations per scrape of %d series", exp.Store.SeriesCount())
}
