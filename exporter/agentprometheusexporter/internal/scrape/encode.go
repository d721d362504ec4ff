package scrape

import (
	"io"
	"runtime"

	"github.com/prometheus/common/expfmt"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/exposition"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
)

// Encoder writes a store's exposition as a scrape asks for it.
type Encoder struct {
	Store *store.Store
	// Options are the scrape settings but Release, which each scrape takes
	// from Scrapers as it begins.
	Options  exposition.Options
	Scrapers *Scrapers
}

// For is the encoding of format, compressed as negotiated. Text (every
// escaping scheme), OpenMetrics 1.0 and delimited protobuf take the direct
// writers, by parts when gzip; every other format goes through expfmt.
func (x *Encoder) For(format expfmt.Format, enc Encoding) Encode {
	write := func(w io.Writer, began int64) error {
		opts := x.Options
		opts.Release = x.Scrapers.Release(began)
		opts.Release.Horizon = x.Store.Horizon()
		switch format.FormatType() {
		case expfmt.TypeTextPlain:
			if enc == EncodingGzip {
				return exposition.WriteTextParts(w, x.Store, opts, format.ToEscapingScheme(), gzipText.parts())
			}
			return exposition.WriteText(w, x.Store, opts, format.ToEscapingScheme())
		case expfmt.TypeOpenMetrics:
			if format.Version() != expfmt.OpenMetricsVersion_2_0_0 {
				if enc == EncodingGzip {
					return exposition.WriteOpenMetricsParts(w, x.Store, opts, format.ToEscapingScheme(), gzipText.parts())
				}
				return exposition.WriteOpenMetrics(w, x.Store, opts, format.ToEscapingScheme())
			}
		case expfmt.TypeProtoDelim:
			// Names escaped as negotiate settled.
			if enc == EncodingGzip {
				return exposition.WriteProtobufParts(w, x.Store, opts, format.ToEscapingScheme(), gzipProtobuf.parts())
			}
			return exposition.WriteProtobuf(w, x.Store, opts, format.ToEscapingScheme())
		}
		var encOpts []expfmt.EncoderOption
		if opts.CreatedSamples {
			encOpts = append(encOpts, expfmt.WithCreatedLines())
		}
		return exposition.WriteEncoded(w, format, x.Store, opts, encOpts...)
	}
	if enc == EncodingGzip && byParts(format) {
		return write
	}
	return Compressed(write, enc)
}

// byParts reports whether a gzip scrape of format is formatted in parts.
func byParts(format expfmt.Format) bool {
	switch format.FormatType() {
	case expfmt.TypeTextPlain:
		return true
	case expfmt.TypeOpenMetrics:
		return format.Version() != expfmt.OpenMetricsVersion_2_0_0
	case expfmt.TypeProtoDelim:
		return true
	}
	return false
}

// gzipSettings are how a format's gzip scrape is cut and compressed: parts
// of about partLines text lines' worth of series, deflated at level.
//
// Chosen per format from BenchmarkGzipLevels (time and body of every level
// and part size, without HTTP) and the response sizes of
// bench/exporterbench BenchmarkScrape against contrib's; figures in
// BENCHMARKS.md ("Design measurements"). Both formats stay at level 1: a
// scrape's time is CPU-bound on every core, and the levels whose body is
// within 1.3 times contrib's (5 and up for text, 6 and up for protobuf)
// make a text scrape much slower than it is, and a protobuf scrape slower
// than it was with pgzip; the levels between cost time for a body a few
// percent smaller, or larger. Larger parts shrink the body by 1–3% but
// leave a small store's scrape fewer parts than cores.
type gzipSettings struct{ level, partLines int }

var (
	// gzipText is for text and OpenMetrics.
	gzipText = gzipSettings{level: 1, partLines: 4096}
	// gzipProtobuf is for delimited protobuf.
	gzipProtobuf = gzipSettings{level: 1, partLines: 4096}
)

// parts: a worker per core.
func (s gzipSettings) parts() exposition.Parts {
	return exposition.Parts{Codec: &gzipParts{level: s.level}, Workers: runtime.GOMAXPROCS(0), PartLines: s.partLines}
}
