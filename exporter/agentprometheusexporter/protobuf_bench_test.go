package agentprometheusexporter

import (
	"context"
	"io"
	"runtime"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/exposition"
)

// BenchmarkWriteProtobuf writes the protobuf exposition of 100 agents × 1000
// series (100k OTLP series, the workload of BenchmarkScrapeText) with the
// direct writer and, for comparison in the same run, through client_model
// and expfmt (WriteEncoded). ns/op is per scrape; ns/sample and
// allocs/sample divide by the sample lines of the text exposition, as
// bench/exporterbench counts them.
func BenchmarkWriteProtobuf(b *testing.B) {
	exp := benchExporter(b)
	for a := range 100 {
		_ = exp.consumeMetrics(context.Background(), agentBatch(a, 100))
	}
	samples := textSamples(b, exp)
	format := expfmt.NewFormat(expfmt.TypeProtoDelim).WithEscapingScheme(model.UnderscoreEscaping)
	for _, writer := range []struct {
		name  string
		write func(io.Writer) error
	}{
		{"direct", func(w io.Writer) error {
			return exposition.WriteProtobuf(w, exp.store, exp.expo, model.UnderscoreEscaping)
		}},
		{"expfmt", func(w io.Writer) error { return exposition.WriteEncoded(w, format, exp.store, exp.expo) }},
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

// textSamples counts the sample lines of the exporter's text exposition.
func textSamples(tb testing.TB, exp *agentPrometheusExporter) int {
	var c lineCounter
	if err := exposition.WriteText(&c, exp.store, exp.expo, model.UnderscoreEscaping); err != nil {
		tb.Fatal(err)
	}
	return c.samples
}

// lineCounter counts the lines written to it that are not comments.
type lineCounter struct {
	samples int
	inLine  bool
}

func (c *lineCounter) Write(p []byte) (int, error) {
	for _, b := range p {
		switch {
		case !c.inLine:
			c.inLine = true
			if b != '#' {
				c.samples++
			}
			if b == '\n' {
				c.inLine = false
			}
		case b == '\n':
			c.inLine = false
		}
	}
	return len(p), nil
}
