package agentprometheusexporter

import (
	"context"
	"testing"

	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/statsgate/statsgate/internal/otlprand"
)

// FuzzProtobufEquivalence stores arbitrary OTLP metrics under both
// translation strategies and checks that WriteProtobuf writes what
// WriteEncoded writes through expfmt (see requireSameProtobuf).
func FuzzProtobufEquivalence(f *testing.F) {
	seeds := []pmetric.Metrics{fuzzSeeds()[0]}
	for seed := range uint64(4) {
		seeds = append(seeds, otlprand.New(seed).Batch(0))
	}
	addOTLPSeeds(f, 0, seeds...)
	f.Fuzz(func(t *testing.T, data []byte) {
		md, err := (&pmetric.ProtoUnmarshaler{}).UnmarshalMetrics(data)
		if err != nil {
			t.Skip("not OTLP")
		}
		for _, strategy := range []TranslationStrategy{UnderscoreEscapingWithSuffixes, NoUTF8EscapingWithSuffixes} {
			e := protobufTestExporter(t, strategy)
			for range 2 {
				if err := e.consumeMetrics(context.Background(), md); err != nil {
					t.Fatal(err)
				}
			}
			requireSameProtobuf(t, string(strategy), e.store, e.expo)
		}
	})
}
