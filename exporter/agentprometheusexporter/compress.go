package agentprometheusexporter // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter"

import (
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/klauspost/compress/zstd"
	"github.com/klauspost/pgzip"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/scrape"
)

// contentEncoding is how a scrape's body is compressed.
type contentEncoding uint8

const (
	encodingIdentity contentEncoding = iota
	encodingGzip
	encodingZstd
)

// String is the Content-Encoding value; identity has none.
func (c contentEncoding) String() string {
	switch c {
	case encodingGzip:
		return "gzip"
	case encodingZstd:
		return "zstd"
	default:
		return ""
	}
}

// negotiateEncoding picks the compression of a scrape from its
// Accept-Encoding header, with the offers of client_golang's promhttp
// (gzip and zstd): the coding with the highest q wins, "*" stands for any,
// q=0 refuses. On a tie gzip wins, then zstd; identity only when the scraper
// prefers it outright. Prometheus asks for gzip.
func negotiateEncoding(acceptEncoding string) contentEncoding {
	q := [3]float64{-1, -1, -1} // per contentEncoding; -1 is unnamed
	star := -1.0
	for entry := range strings.SplitSeq(acceptEncoding, ",") {
		coding, params, _ := strings.Cut(entry, ";")
		weight, ok := qValue(params)
		if !ok {
			continue
		}
		switch strings.ToLower(strings.TrimSpace(coding)) {
		case "gzip", "x-gzip":
			q[encodingGzip] = weight
		case "zstd":
			q[encodingZstd] = weight
		case "identity":
			q[encodingIdentity] = weight
		case "*":
			star = weight
		}
	}
	for i := range q {
		if q[i] < 0 {
			q[i] = star
		}
	}
	best, bestQ := encodingIdentity, 0.0
	for _, c := range []contentEncoding{encodingGzip, encodingZstd} {
		if q[c] > bestQ {
			best, bestQ = c, q[c]
		}
	}
	if q[encodingIdentity] > bestQ {
		return encodingIdentity
	}
	return best
}

// qValue reads the q parameter of an Accept-Encoding entry (1 when absent);
// ok is false when it does not parse, and the entry is ignored.
func qValue(params string) (q float64, ok bool) {
	for param := range strings.SplitSeq(params, ";") {
		key, value, _ := strings.Cut(param, "=")
		if strings.TrimSpace(key) != "q" {
			continue
		}
		q, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil || q < 0 || q > 1 {
			return 0, false
		}
		return q, true
	}
	return 1, true
}

// Compressors are pooled: a fresh one per scrape would be most of its
// garbage. Text and OpenMetrics scrapes compress gzip by parts instead
// (gzipParts, measured there); these serve protobuf and the formats expfmt
// writes. klauspost's parallel gzip (pgzip) rather than the standard
// library: gzip is what Prometheus asks for, and a gateway's exposition is
// tens to hundreds of MiB, so compression is most of a gzip scrape's time.
// pgzip compresses 1 MiB blocks on goroutines of their own, each primed with
// the end of the block before (one gzip stream, the ratio of a serial one),
// while the writer formats the next. On the 100k-series expositions
// (BenchmarkCompressedScrape) a protobuf scrape takes 40 ns per sample
// where klauspost's serial gzip on the writer's goroutine takes 55, for the
// same body size; the serial one was already 1.8× the standard library's
// speed for a 10% smaller body (BenchmarkCompress).
var (
	gzipPool = sync.Pool{New: func() any {
		// BestSpeed: a gateway's exposition is large and highly redundant;
		// level 1 already shrinks it ~30x at a fraction of the default's CPU.
		w, _ := pgzip.NewWriterLevel(nil, pgzip.BestSpeed)
		// Two blocks in flight: one per core of a small gateway, and 1 MiB
		// blocks, since handing a block over costs a goroutine wake-up.
		_ = w.SetConcurrency(gzipBlockSize, 2)
		return w
	}}
	zstdPool = sync.Pool{New: func() any {
		w, _ := zstd.NewWriter(nil, zstdOptions...)
		return w
	}}
)

const gzipBlockSize = 1 << 20

// zstdOptions: the fastest level on the calling goroutine (the coalescer
// already encodes on one of its own); a 1 MiB window keeps an idle pooled
// encoder at ~0.5 MiB instead of ~3 MiB for the same body size.
var zstdOptions = []zstd.EOption{
	zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1),
	zstd.WithWindowSize(1 << 20), zstd.WithLowerEncoderMem(true),
}

// compressor is what pgzip.Writer and zstd.Encoder share.
type compressor interface {
	io.WriteCloser
	Reset(w io.Writer)
}

// compressed wraps write in the negotiated compression.
func compressed(write scrape.Encode, enc contentEncoding) scrape.Encode {
	var pool *sync.Pool
	switch enc {
	case encodingGzip:
		pool = &gzipPool
	case encodingZstd:
		pool = &zstdPool
	default:
		return write
	}
	return func(w io.Writer, began int64) error {
		zw := pool.Get().(compressor)
		zw.Reset(w)
		err := write(zw, began)
		if cerr := zw.Close(); err == nil {
			err = cerr
		}
		zw.Reset(nil)
		pool.Put(zw)
		return err
	}
}
