package agentprometheusexporter

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pmetric"
)

// TestFuzzSeedsAreCompared runs FuzzIngestScrape's checks over its seeds
// (fuzzSeeds and the corpus in testdata) and requires that most of them,
// in every configuration, are compared with the reference rather than
// skipped as out of its scope, and that the compared ones hold every type
// of family, native histograms and created timestamps: a reference that
// skipped everything, or compared nothing, would let any scrape pass.
func TestFuzzSeedsAreCompared(t *testing.T) {
	seeds := map[string]pmetric.Metrics{}
	for i, md := range fuzzSeeds() {
		b, err := (&pmetric.ProtoMarshaler{}).MarshalMetrics(md)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) <= 8<<10 { // as FuzzIngestScrape adds them
			seeds["seed#"+strconv.Itoa(i)] = md
		}
	}
	files, err := filepath.Glob(filepath.Join("testdata", "fuzz", "FuzzIngestScrape", "*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		if md, ok := readCorpusFile(t, file); ok {
			seeds[filepath.Base(file)] = md
		}
	}

	for _, fc := range fuzzConfigs {
		skipped := map[string]int{}
		compared := 0
		covered := map[string]bool{}
		for name, md := range seeds {
			var skip string
			t.Run(name+"/"+string(fc.strategy), func(t *testing.T) { skip = checkIngestScrape(t, md, fc) })
			if skip != "" {
				skipped[skip]++
				continue
			}
			compared++
			want, _ := fuzzReference(md, fc)
			for _, typ := range want.types {
				covered[typ] = true
			}
			covered["native histograms"] = covered["native histograms"] || len(want.natives) > 0
			covered["created timestamps"] = covered["created timestamps"] || len(want.created) > 0
		}
		t.Logf("%s: %d of %d seeds compared with the reference; skipped: %v", fc, compared, len(seeds), skipped)
		if compared*2 <= len(seeds) {
			t.Errorf("%s: only %d of %d seeds are compared with the reference", fc, compared, len(seeds))
		}
		for _, what := range []string{"gauge", "counter", "histogram", "summary", "native histograms", "created timestamps"} {
			if !covered[what] {
				t.Errorf("%s: no seed compared with the reference has %s", fc, what)
			}
		}
	}
}

// readCorpusFile reads a corpus file of a []byte fuzz target; false for an
// input that is not OTLP, which the target skips.
func readCorpusFile(t *testing.T, file string) (pmetric.Metrics, bool) {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	header, value, _ := strings.Cut(strings.TrimSpace(string(raw)), "\n")
	literal, ok := strings.CutPrefix(value, "[]byte(")
	literal, ok2 := strings.CutSuffix(literal, ")")
	if header != "go test fuzz v1" || !ok || !ok2 {
		t.Fatalf("%s: not a corpus file of one []byte", file)
	}
	data, err := strconv.Unquote(literal)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	md, err := (&pmetric.ProtoUnmarshaler{}).UnmarshalMetrics([]byte(data))
	return md, err == nil
}
