package scrape

import (
	"io"
	"runtime"

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
	// GzipLevel is the deflate level of gzip responses, 1 to 9
	// (DefaultGzipLevel unless the configuration sets another).
	GzipLevel int
}

// For is the encoding of format, compressed as negotiated. Text,
// OpenMetrics and delimited protobuf take the direct writers, by parts when
// gzip; the protobuf text forms go through expfmt.
func (x *Encoder) For(format Format, enc Encoding) Encode {
	byParts := enc == EncodingGzip && format.Exposition != exposition.ProtobufText && format.Exposition != exposition.ProtobufCompact
	write := func(w io.Writer, began int64) error {
		opts := x.Options
		opts.Release = x.Scrapers.Release(began)
		opts.Release.Horizon = x.Store.Horizon()
		switch format.Exposition {
		case exposition.Text:
			if byParts {
				return exposition.WriteTextParts(w, x.Store, opts, format.Escaping, gzipByParts(x.GzipLevel, partLines))
			}
			return exposition.WriteText(w, x.Store, opts, format.Escaping)
		case exposition.OpenMetrics:
			if byParts {
				return exposition.WriteOpenMetricsParts(w, x.Store, opts, format.Escaping, gzipByParts(x.GzipLevel, partLines))
			}
			return exposition.WriteOpenMetrics(w, x.Store, opts, format.Escaping)
		case exposition.Protobuf:
			if byParts {
				return exposition.WriteProtobufParts(w, x.Store, opts, format.Escaping, gzipByParts(x.GzipLevel, partLines))
			}
			return exposition.WriteProtobuf(w, x.Store, opts, format.Escaping)
		}
		return exposition.WriteEncoded(w, format.ContentType, x.Store, opts)
	}
	if byParts {
		return write
	}
	return Compressed(write, enc, x.GzipLevel)
}

// DefaultGzipLevel is the deflate level of gzip responses unless
// scrape::gzip_level sets another, for every format.
//
// Chosen from BenchmarkGzipLevels (time and body of every level and part
// size, without HTTP) and the response sizes of bench/exporterbench
// BenchmarkScrape against contrib's; figures in BENCHMARKS.md ("Design
// measurements"). Level 1: a scrape's time is CPU-bound on every core, and
// the levels whose body is within 1.3 times contrib's (5 and up for text, 6
// and up for protobuf) make a text scrape much slower than it is, and a
// protobuf scrape slower than it was with pgzip; the levels between cost
// time for a body a few percent smaller, or larger. An operator who pays
// for bytes rather than cores sets scrape::gzip_level.
const DefaultGzipLevel = 1

// partLines is how a gzip scrape by parts is cut: parts of about partLines
// text lines' worth of series. Larger parts shrink the body by 1–3%
// (BenchmarkGzipLevels) but leave a small store's scrape fewer parts than
// cores.
const partLines = 4096

// gzipByParts is a gzip scrape by parts of about lines text lines' worth of
// series each, deflated at level, with a worker per core.
func gzipByParts(level, lines int) exposition.Parts {
	return exposition.Parts{Codec: &gzipParts{level: level}, Workers: runtime.GOMAXPROCS(0), PartLines: lines}
}
