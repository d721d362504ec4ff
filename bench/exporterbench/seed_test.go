package exporterbench

import (
	"fmt"
	"io"
	"testing"

	"github.com/statsgate/statsgate/bench/internal/workload"
)

// seedCases are the per-series conversion cases of the coder
// metrics-aggregator seed: base labels come from the resource (job,
// instance, and host_name, cloud_region for 4), extra labels are point
// attributes.
var seedCases = []struct{ base, extra int }{
	{4, 0}, {4, 2}, {4, 5}, {4, 10}, {2, 5},
}

// seedAgents × 100 families × 1 series = 10k series.
const seedAgents = 100

// BenchmarkSeed measures a text scrape of 10k series of each seed label
// shape: 100 agents × 100 gauge families with one series each, so that
// every series has exactly base+extra labels. ns/series, B/series and
// allocs/series are per OTLP series.
func BenchmarkSeed(b *testing.B) {
	for _, name := range exporterNames {
		b.Run("exporter="+name, func(b *testing.B) {
			for _, c := range seedCases {
				b.Run(fmt.Sprintf("labels=%dbase+%dextra", c.base, c.extra), func(b *testing.B) {
					seedCase(b, name, workload.Seed(c.base, c.extra))
				})
			}
		})
	}
}

func seedCase(b *testing.B, name string, s workload.Shape) {
	// Set up anew on each call with a larger b.N: 10k series load quickly.
	in := start(b, name, settings{})
	defer in.shutdown(b)
	in.load(b, s, seedAgents, 0)
	samples, _ := in.countSamples(b)
	if want := textSamples(s, seedAgents); samples != want {
		note("%s seed %d+%d: the text scrape has %d samples, want %d", name, s.BaseLabels, s.ExtraLabels, samples, want)
	}
	series := float64(seedAgents * s.SeriesPerAgent())

	m := newMeter(b)
	m.start()
	for range b.N {
		if _, err := in.scrape(textFormat, "identity", io.Discard); err != nil {
			m.stop()
			b.Fatal(err)
		}
	}
	m.stop()
	m.report("series", series)
	in.noteLogs(fmt.Sprintf("seed case %d+%d", s.BaseLabels, s.ExtraLabels))
}
