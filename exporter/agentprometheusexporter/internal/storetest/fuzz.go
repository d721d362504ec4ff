package storetest

import (
	"testing"

	"go.opentelemetry.io/collector/pdata/pmetric"
)

// AddSeeds adds each batch, marshalled as OTLP, to f's seed corpus;
// maxBytes > 0 leaves out larger ones.
func AddSeeds(f *testing.F, maxBytes int, seeds ...pmetric.Metrics) {
	for _, md := range seeds {
		b, err := (&pmetric.ProtoMarshaler{}).MarshalMetrics(md)
		if err != nil {
			f.Fatal(err)
		}
		if maxBytes <= 0 || len(b) <= maxBytes {
			f.Add(b)
		}
	}
}
