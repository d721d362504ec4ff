package exposition_test

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"google.golang.org/protobuf/proto"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/exposition"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/storetest"
	"github.com/statsgate/statsgate/internal/otlprand"
)

// The direct writers must write what expfmt writes for the families
// WriteReference builds from the same store: for the text format, both
// outputs decode with expfmt's text parser to equal families; for
// OpenMetrics, the bytes are expfmt's. Both are checked for every escaping
// scheme, with timestamps sent or not, with new runs of deltas held back,
// shown as their zero or with their value, and (OpenMetrics) with and
// without _created samples.

func TestDirectWritersWriteWhatExpfmtWrites(t *testing.T) {
	seeds := uint64(40)
	if testing.Short() || storetest.RaceEnabled {
		seeds = 10 // the writers share nothing between goroutines to race on
	}
	for seed := range seeds {
		g := otlprand.New(seed)
		batches := []pmetric.Metrics{g.Batch(0), g.Batch(1), g.Batch(3)}
		for _, strategy := range storetest.AllNamings {
			e := storetest.Of(t, strategy, batches...)
			if err := compareWriters(e.Store, e.Expo); err != nil {
				t.Fatalf("seed %d, %s: %v", seed, strategy, err)
			}
		}
	}
}

// compareWriters checks every text-ish format written from st against
// expfmt, in every combination of scrape settings.
func compareWriters(st *store.Store, base exposition.Options) error {
	for _, r := range storetest.Releases {
		for _, timestamps := range []bool{false, true} {
			for _, scheme := range storetest.AllSchemes {
				opts := base
				opts.Release, opts.SendTimestamps = r.Release, timestamps
				what := fmt.Sprintf("%s, timestamps %v, escaping=%s", r.Name, timestamps, scheme)
				if err := compareText(st, opts, scheme); err != nil {
					return fmt.Errorf("text, %s: %w", what, err)
				}
				for _, created := range []bool{false, true} {
					opts.CreatedSamples = created
					if err := compareOpenMetrics(st, opts, scheme); err != nil {
						return fmt.Errorf("OpenMetrics, %s, created samples %v: %w", what, created, err)
					}
				}
			}
		}
	}
	return nil
}

func compareText(st *store.Store, opts exposition.Options, scheme model.EscapingScheme) error {
	var ours, ref bytes.Buffer
	if err := exposition.Write(&ours, st, exposition.Request{Format: exposition.Text, Options: opts, Escaping: scheme}); err != nil {
		return err
	}
	if err := exposition.WriteReference(&ref, expfmt.FmtText.WithEscapingScheme(scheme), st, opts); err != nil {
		return fmt.Errorf("expfmt: %w", err)
	}
	got, gotErr := storetest.DecodeText(ours.Bytes())
	want, wantErr := storetest.DecodeText(ref.Bytes())
	if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
		return fmt.Errorf("parsing ours: %v, parsing expfmt's: %v\n%s", gotErr, wantErr, storetest.FirstDifference(ours.Bytes(), ref.Bytes()))
	}
	for _, name := range sortedKeys(got, want) {
		if !proto.Equal(got[name], want[name]) {
			return fmt.Errorf("family %q decodes differently:\nours:   %v\nexpfmt: %v\n%s", name, got[name], want[name], storetest.FirstDifference(ours.Bytes(), ref.Bytes()))
		}
	}
	// The writer writes expfmt's bytes too; checked after the families, so
	// that a difference that matters is reported as one, and also where
	// neither output parses.
	if !bytes.Equal(ours.Bytes(), ref.Bytes()) {
		return fmt.Errorf("bytes differ\n%s", storetest.FirstDifference(ours.Bytes(), ref.Bytes()))
	}
	return nil
}

func compareOpenMetrics(st *store.Store, opts exposition.Options, scheme model.EscapingScheme) error {
	var ours, ref bytes.Buffer
	if err := exposition.Write(&ours, st, exposition.Request{Format: exposition.OpenMetrics, Options: opts, Escaping: scheme}); err != nil {
		return err
	}
	var encOpts []expfmt.EncoderOption
	if opts.CreatedSamples {
		encOpts = append(encOpts, expfmt.WithCreatedLines())
	}
	if err := exposition.WriteReference(&ref, expfmt.FmtOpenMetrics_1_0_0.WithEscapingScheme(scheme), st, opts, encOpts...); err != nil {
		return fmt.Errorf("expfmt: %w", err)
	}
	if !bytes.Equal(ours.Bytes(), ref.Bytes()) {
		return fmt.Errorf("bytes differ\n%s", storetest.FirstDifference(ours.Bytes(), ref.Bytes()))
	}
	return nil
}

func sortedKeys(a, b map[string]*dto.MetricFamily) []string {
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}
