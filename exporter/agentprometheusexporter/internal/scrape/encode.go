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

// For is the encoding of format, compressed as negotiated: gzip by parts on
// every core for text, OpenMetrics and delimited protobuf, a compressor
// around the exposition otherwise.
func (x *Encoder) For(format Format, enc Encoding) Encode {
	req := exposition.Request{Format: format.Exposition, Escaping: format.Escaping, Options: x.Options}
	if enc == EncodingGzip && format.Exposition != exposition.ProtobufText && format.Exposition != exposition.ProtobufCompact {
		req.Parts, enc = gzipByParts(x.GzipLevel, partLines), EncodingIdentity // the parts are the gzip stream
	}
	return Compressed(enc, x.GzipLevel, func(w io.Writer, began int64) error {
		req := req
		req.Options.Release = x.Scrapers.Release(began)
		req.Options.Release.Horizon = x.Store.Horizon()
		return exposition.Write(w, x.Store, req)
	})
}

// DefaultGzipLevel is the deflate level of gzip responses unless
// scrape::gzip_level sets another, for every format.
//
// Chosen from BenchmarkGzipLevels (time and body of every level and part
// size, without HTTP) and the response sizes of bench/exporterbench
// BenchmarkScrape against contrib's; figures in BENCHMARKS.md ("Design
// measurements"). Level 1: a scrape's time is CPU-bound on every core, and
// the levels whose body comes close to contrib's make a scrape much slower;
// the levels between cost time for a body little smaller. An operator who
// pays for bytes rather than cores sets scrape::gzip_level.
const DefaultGzipLevel = 1

// partLines is how a gzip scrape by parts is cut: parts of about partLines
// text lines' worth of series. Larger parts shrink the body little
// (BenchmarkGzipLevels) but leave a small store's scrape fewer parts than
// cores.
const partLines = 4096

// gzipByParts is a gzip scrape by parts of about lines text lines' worth of
// series each, deflated at level, with a worker per core.
func gzipByParts(level, lines int) exposition.Parts {
	return exposition.Parts{Codec: &gzipParts{level: level}, Workers: runtime.GOMAXPROCS(0), PartLines: lines}
}
