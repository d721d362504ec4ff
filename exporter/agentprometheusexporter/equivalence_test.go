package agentprometheusexporter

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"google.golang.org/protobuf/proto"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/exposition"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/metadata"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
	"github.com/statsgate/statsgate/internal/otlprand"
)

// The direct writers must write what expfmt writes for the families
// WriteEncoded builds from the same store: for the text format, both
// outputs decode with expfmt's text parser to equal families; for
// OpenMetrics, the bytes are expfmt's. Both are checked for every escaping
// scheme, with timestamps sent or not, with new runs of deltas held back,
// shown as their zero or with their value, and (OpenMetrics) with and
// without _created samples.

var (
	allStrategies = []TranslationStrategy{UnderscoreEscapingWithSuffixes, UnderscoreEscapingWithoutSuffixes, NoUTF8EscapingWithSuffixes, NoTranslation}
	allSchemes    = []model.EscapingScheme{model.NoEscaping, model.UnderscoreEscaping, model.DotsEscaping, model.ValueEncodingEscaping}
	// releases show a new run of deltas (store.Series.Shown) in each of its steps.
	releases = []struct {
		name    string
		release store.Release
	}{
		{"new runs held back", store.Release{}},
		{"new runs as zero", store.Release{Zero: math.MaxInt64}},
		{"new runs with value", store.Release{Zero: math.MaxInt64, Value: math.MaxInt64}},
	}
)

func TestDirectWritersWriteWhatExpfmtWrites(t *testing.T) {
	seeds := uint64(40)
	if testing.Short() || raceEnabled {
		seeds = 10 // the writers share nothing between goroutines to race on
	}
	for seed := range seeds {
		g := otlprand.New(seed)
		batches := []pmetric.Metrics{g.Batch(0), g.Batch(1), g.Batch(3)}
		for _, strategy := range allStrategies {
			e := storeOf(t, strategy, batches...)
			if err := compareWriters(e.store, e.expo); err != nil {
				t.Fatalf("seed %d, %s: %v", seed, strategy, err)
			}
		}
	}
}

// storeOf is an exporter, not started, that has consumed batches a minute
// apart on a clock of its own.
func storeOf(t testing.TB, strategy TranslationStrategy, batches ...pmetric.Metrics) *agentPrometheusExporter {
	t.Helper()
	cfg := createDefaultConfig().(*Config)
	cfg.TranslationStrategy = strategy
	clk := newFakeClock()
	e, err := newAgentPrometheusExporter(exportertest.NewNopSettings(metadata.Type), cfg, clk.clock())
	if err != nil {
		t.Fatal(err)
	}
	for _, md := range batches {
		if err := e.consumeMetrics(context.Background(), md); err != nil {
			t.Fatal(err)
		}
		clk.advance(time.Minute)
	}
	return e
}

// compareWriters checks every text-ish format written from st against
// expfmt, in every combination of scrape settings.
func compareWriters(st *store.Store, base exposition.Options) error {
	for _, r := range releases {
		for _, timestamps := range []bool{false, true} {
			for _, scheme := range allSchemes {
				opts := base
				opts.Release, opts.SendTimestamps = r.release, timestamps
				what := fmt.Sprintf("%s, timestamps %v, escaping=%s", r.name, timestamps, scheme)
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
	if err := exposition.WriteText(&ours, st, opts, scheme); err != nil {
		return err
	}
	if err := exposition.WriteEncoded(&ref, expfmt.FmtText.WithEscapingScheme(scheme), st, opts); err != nil {
		return fmt.Errorf("expfmt: %w", err)
	}
	got, gotErr := decodeText(ours.Bytes())
	want, wantErr := decodeText(ref.Bytes())
	if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
		return fmt.Errorf("parsing ours: %v, parsing expfmt's: %v\n%s", gotErr, wantErr, firstDifference(ours.Bytes(), ref.Bytes()))
	}
	for _, name := range sortedKeys(got, want) {
		if !proto.Equal(got[name], want[name]) {
			return fmt.Errorf("family %q decodes differently:\nours:   %v\nexpfmt: %v\n%s", name, got[name], want[name], firstDifference(ours.Bytes(), ref.Bytes()))
		}
	}
	// The writer writes expfmt's bytes too; checked after the families, so
	// that a difference that matters is reported as one, and also where
	// neither output parses.
	if !bytes.Equal(ours.Bytes(), ref.Bytes()) {
		return fmt.Errorf("bytes differ\n%s", firstDifference(ours.Bytes(), ref.Bytes()))
	}
	return nil
}

func compareOpenMetrics(st *store.Store, opts exposition.Options, scheme model.EscapingScheme) error {
	var ours, ref bytes.Buffer
	if err := exposition.WriteOpenMetrics(&ours, st, opts, scheme); err != nil {
		return err
	}
	var encOpts []expfmt.EncoderOption
	if opts.CreatedSamples {
		encOpts = append(encOpts, expfmt.WithCreatedLines())
	}
	if err := exposition.WriteEncoded(&ref, expfmt.FmtOpenMetrics_1_0_0.WithEscapingScheme(scheme), st, opts, encOpts...); err != nil {
		return fmt.Errorf("expfmt: %w", err)
	}
	if !bytes.Equal(ours.Bytes(), ref.Bytes()) {
		return fmt.Errorf("bytes differ\n%s", firstDifference(ours.Bytes(), ref.Bytes()))
	}
	return nil
}

// decodeText decodes a text exposition as Prometheus would with UTF-8 names
// allowed (a superset of what every scheme writes).
func decodeText(body []byte) (map[string]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(bytes.NewReader(body))
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

// firstDifference shows the first line where two expositions differ.
func firstDifference(ours, ref []byte) string {
	a, b := strings.Split(string(ours), "\n"), strings.Split(string(ref), "\n")
	for i := range max(len(a), len(b)) {
		var x, y string
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			return fmt.Sprintf("line %d:\nours:   %q\nexpfmt: %q", i+1, x, y)
		}
	}
	return "same bytes"
}
