package exporterbench

import (
	"io"
	"testing"

	"github.com/statsgate/statsgate/bench/internal/workload"
)

// BenchmarkScrape measures one whole /metrics response over loopback HTTP,
// read to the end by the client, for the gateway workload (1000 OTLP series
// per agent) at each size, in each format, without compression.
//
// ns/op, B/op and allocs/op are per scrape; B/op and allocs/op include the
// server's goroutines and the client (runtime.MemStats is process-wide), the
// same for both exporters. ns/series, B/series and allocs/series divide by
// the OTLP series; ns/sample and allocs/sample by the sample lines of the
// text exposition (counted once per exporter and size). B/response is the
// size of the response body.
func BenchmarkScrape(b *testing.B) {
	for _, name := range exporterNames {
		b.Run("exporter="+name, func(b *testing.B) {
			for _, sz := range sizes() {
				b.Run("series="+sz.Name, func(b *testing.B) {
					if skipContrib1M(name, sz) {
						b.Skip("BENCH_CONTRIB_1M=0")
					}
					scrapeSize(b, name, sz)
				})
			}
		})
	}
}

// scrapeSize loads one exporter with sz and runs a sub-benchmark per format;
// the setup is shared by the formats and by every round of -count.
func scrapeSize(b *testing.B, name string, sz workload.Size) {
	in := start(b, name, settings{})
	defer in.shutdown(b)
	agents := sz.Agents(workload.Gateway)
	in.load(b, workload.Gateway, agents, 0)
	in.noteLogs("loading " + sz.Name + " series")

	// One text scrape, untimed: counts the samples and warms the server up.
	samples, textBytes := in.countSamples(b)
	if want := textSamples(workload.Gateway, agents); samples != want {
		note("%s at %s series: the text scrape has %d samples, want %d", name, sz.Name, samples, want)
	}
	for _, f := range formats {
		// The first full response of each format is the reference size of
		// later ones: the values do not change, so neither does the size.
		var refSize int64
		if f.name == "text" {
			refSize = textBytes
		}
		b.Run("format="+f.name, func(b *testing.B) {
			m := newMeter(b)
			m.start()
			for range b.N {
				n, err := in.scrape(f, io.Discard)
				if err != nil {
					m.stop()
					in.noteLogs("scraping " + f.name)
					b.Fatal(err)
				}
				if refSize == 0 {
					refSize = n
				} else if n != refSize {
					note("%s at %s series: a %s response had %d bytes, an earlier one %d (partial response?)", name, sz.Name, f.name, n, refSize)
				}
			}
			m.stop()
			m.report("series", float64(sz.Series))
			b.ReportMetric(float64(m.elapsed.Nanoseconds())/float64(b.N)/float64(samples), "ns/sample")
			b.ReportMetric(float64(m.mallocs)/float64(b.N)/float64(samples), "allocs/sample")
			b.ReportMetric(float64(refSize), "B/response")
		})
		in.noteLogs("scraping " + f.name + " at " + sz.Name + " series")
	}
}
