package exporterbench

import (
	"fmt"
	"io"
	"testing"

	"github.com/statsgate/statsgate/bench/internal/promscrape"
	"github.com/statsgate/statsgate/bench/internal/workload"
)

// BenchmarkScrape measures one whole /metrics response over loopback HTTP,
// read to the end by the client, for the gateway workload (1000 OTLP series
// per agent) at each size, in every format a Prometheus server negotiates
// (promscrape.Formats: text 0.0.4, text with UTF-8 names, OpenMetrics,
// protobuf, each asked for with the Accept header under which Prometheus
// gets it), uncompressed and with Accept-Encoding: gzip. A gzip response is
// read as it comes over the wire: decompressing it is the scraper's work.
//
// ns/op, B/op and allocs/op are per scrape; B/op and allocs/op include the
// server's goroutines and the client (runtime.MemStats is process-wide), the
// same for both exporters. ns/series, B/series and allocs/series divide by
// the OTLP series; ns/sample and allocs/sample by the sample lines of the
// text exposition (counted once per exporter and size), in every format.
// B/response is the size of the response as received.
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

// scrapeSize loads one exporter with sz and runs a sub-benchmark per format
// and encoding; the setup is shared by them and by every round of -count.
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
	for _, f := range promscrape.Formats {
		// One response of each format and encoding, untimed, is decoded as
		// Prometheus would and is the reference size of the later ones.
		// Here rather than in the sub-benchmark, which runs for every b.N.
		refSize := map[string]int64{}
		for _, enc := range encodings {
			what := fmt.Sprintf("%s at %s series, %s, %s", name, sz.Name, f.Name, enc)
			refSize[enc] = in.checkFormat(b, f, enc, samples, textBytes, what)
		}
		b.Run("format="+f.Name, func(b *testing.B) {
			for _, enc := range encodings {
				b.Run("encoding="+enc, func(b *testing.B) {
					scrapeFormat(b, in, f, enc, samples, float64(sz.Series), refSize[enc])
				})
			}
		})
		in.noteLogs("scraping " + f.Name + " at " + sz.Name + " series")
	}
}

func scrapeFormat(b *testing.B, in *instance, f promscrape.Format, enc string, samples int, series float64, refSize int64) {
	m := newMeter(b)
	m.start()
	for range b.N {
		n, err := in.scrape(f, enc, io.Discard)
		if err != nil {
			m.stop()
			b.Fatal(err)
		}
		// The values do not change, so neither does an uncompressed
		// response's size; compressed, the order of the series may change
		// it a little.
		if enc == "identity" && n != refSize {
			note("%s: a response had %d bytes, the first %d (partial response?)", b.Name(), n, refSize)
		}
	}
	m.stop()
	m.report("series", series)
	b.ReportMetric(float64(m.elapsed.Nanoseconds())/float64(b.N)/float64(samples), "ns/sample")
	b.ReportMetric(float64(m.mallocs)/float64(b.N)/float64(samples), "allocs/sample")
	b.ReportMetric(float64(refSize), "B/response")
}
