package exposition_test

import (
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
// WriteReference writes through expfmt (see requireSameProtobuf).
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

// compareParts checks that a scrape by parts writes what the sequential
// writers write (storetest.CompareParts).
func compareParts(st *store.Store, opts exposition.Options, scheme model.EscapingScheme) error {
	return storetest.CompareParts(st, opts, scheme, storetest.Plain, storetest.Undecoded)
}
