package agentprometheusexporter

import (
	"testing"

	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/statsgate/statsgate/internal/otlprand"
)

// FuzzTextEquivalence stores arbitrary OTLP metrics, twice so that updates
// and runs of deltas happen, with legacy and with UTF-8 names, and checks
// that the direct writers write what expfmt writes from the same store in
// every text-ish format, scheme and setting (compareWriters), and that a
// scrape by parts writes what the sequential writers write (compareParts).
func FuzzTextEquivalence(f *testing.F) {
	var seeds []pmetric.Metrics
	for seed := range uint64(4) {
		seeds = append(seeds, otlprand.New(seed).Batch(0))
	}
	addOTLPSeeds(f, 0, append(seeds, fuzzSeeds()[0])...)
	f.Fuzz(func(t *testing.T, data []byte) {
		md, err := (&pmetric.ProtoUnmarshaler{}).UnmarshalMetrics(data)
		if err != nil {
			t.Skip("not OTLP")
		}
		for _, strategy := range []TranslationStrategy{UnderscoreEscapingWithSuffixes, NoUTF8EscapingWithSuffixes} {
			e := storeOf(t, strategy, md, md)
			if err := compareWriters(e.store, e.expo); err != nil {
				t.Fatalf("%s: %v", strategy, err)
			}
			for _, scheme := range allSchemes {
				if err := compareParts(e.store, e.expo, scheme); err != nil {
					t.Fatalf("%s, escaping=%s: %v", strategy, scheme, err)
				}
			}
		}
	})
}
