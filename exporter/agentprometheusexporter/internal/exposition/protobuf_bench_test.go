package exposition_test

import (
	"io"
	"runtime"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/exposition"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/storetest"
)

// BenchmarkWriteProtobuf writes the protobuf exposition of 100 agents × 1000
// series (100k OTLP series, the workload of BenchmarkScrapeText) with the
// direct writer and, for comparison in the same run, through client_model
// and expfmt (WriteReference). ns/op is per scrape; ns/sample and
// allocs/sample divide by the sample lines of the text exposition, as
// bench/exporterbench counts them.
func BenchmarkWriteProtobuf(b *testing.B) {
	exp := storetest.New(b, storetest.Options{ResourceLabels: []string{"host.name", "cloud.region"}, WithoutScopeInfo: true})
	for a := range 100 {
		exp.Consume(storetest.AgentBatch(a, 100))
	}
	var lines storetest.SampleLines
	if err := exposition.Write(&lines, exp.Store, exposition.Request{Format: exposition.Text, Options: exp.Expo, Escaping: model.UnderscoreEscaping}); err != nil {
		b.Fatal(err)
	}
	samples := lines.Samples
	format := expfmt.NewFormat(expfmt.TypeProtoDelim).WithEscapingScheme(model.UnderscoreEscaping)
	for _, writer := range []struct {
		name  string
		write func(io.Writer) error
	}{
		{"direct", func(w io.Writer) error {
			return exposition.Write(w, exp.Store, exposition.Request{Format: exposition.Protobuf, Options: exp.Expo, Escaping: model.UnderscoreEscaping})
		}},
		{"expfmt", func(w io.Writer) error { return exposition.WriteReference(w, format, exp.Store, exp.Expo) }},
	} {
		b.Run("writer="+writer.name, func(b *testing.B) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			b.ResetTimer()
			for range b.N {
				if err := writer.write(io.Discard); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(samples), "ns/sample")
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(b.N)/float64(samples), "allocs/sample")
		})
	}
}
