package scrape

import (
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/klauspost/compress/zstd"
	"github.com/klauspost/pgzip"
)

// Encoding is how a scrape's body is compressed.
type Encoding uint8

const (
	EncodingIdentity Encoding = iota
	EncodingGzip
	EncodingZstd
)

// String is the Content-Encoding value; identity has none.
func (c Encoding) String() string {
	switch c {
	case EncodingGzip:
		return "gzip"
	case EncodingZstd:
		return "zstd"
	default:
		return ""
	}
}

// NegotiateEncoding picks the compression of a scrape from its
// Accept-Encoding header, with the offers of client_golang's promhttp
// (gzip and zstd): the coding with the highest q wins, "*" stands for any,
// q=0 refuses. On a tie gzip wins, then zstd; identity only when the scraper
// prefers it outright. Prometheus asks for gzip.
func NegotiateEncoding(acceptEncoding string) Encoding {
	q := [3]float64{-1, -1, -1} // per Encoding; -1 is unnamed
	star := -1.0
	for entry := range strings.SplitSeq(acceptEncoding, ",") {
		coding, params, _ := strings.Cut(entry, ";")
		weight, ok := qValue(params)
		if !ok {
			continue
		}
		switch strings.ToLower(strings.TrimSpace(coding)) {
		case "gzip", "x-gzip":
			q[EncodingGzip] = weight
		case "zstd":
			q[EncodingZstd] = weight
		case "identity":
			q[EncodingIdentity] = weight
		case "*":
			star = weight
		}
	}
	for i := range q {
		if q[i] < 0 {
			q[i] = star
		}
	}
	best, bestQ := EncodingIdentity, 0.0
	for _, c := range []Encoding{EncodingGzip, EncodingZstd} {
		if q[c] > bestQ {
			best, bestQ = c, q[c]
		}
	}
	if q[EncodingIdentity] > bestQ {
		return EncodingIdentity
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
// garbage. Text, OpenMetrics and protobuf scrapes compress gzip by parts
// instead (gzipParts); pgzip serves the formats expfmt writes.
// klauspost's parallel gzip (pgzip) rather than the standard library: gzip
// is what Prometheus asks for, and a gateway's exposition is tens to
// hundreds of MiB, so compression is most of a gzip scrape's time. pgzip
// compresses 1 MiB blocks on goroutines of their own, each primed with the
// end of the block before (one gzip stream, the ratio of a serial one),
// while the writer formats the next: faster than klauspost's serial gzip
// on the writer's goroutine for the same body (BenchmarkCompressedScrape),
// which is itself faster than the standard library's for a smaller body
// (BenchmarkCompress); figures in BENCHMARKS.md.
var (
	// gzipPools keep the pgzip writers of each level (Encoder.GzipLevel).
	gzipPools [pgzip.BestCompression + 1]sync.Pool
	zstdPool  = sync.Pool{New: func() any {
		w, _ := zstd.NewWriter(nil, zstdOptions...)
		return w
	}}
)

const gzipBlockSize = 1 << 20

func init() {
	for level := pgzip.BestSpeed; level <= pgzip.BestCompression; level++ {
		gzipPools[level].New = func() any {
			w, _ := pgzip.NewWriterLevel(nil, level)
			// Two blocks in flight: one per core of a small gateway, and 1
			// MiB blocks, since handing a block over costs a goroutine
			// wake-up.
			_ = w.SetConcurrency(gzipBlockSize, 2)
			return w
		}
	}
}

// zstdOptions: the fastest level on the calling goroutine (the coalescer
// already encodes on one of its own); a 1 MiB window keeps an idle pooled
// encoder several times smaller for the same body size (BENCHMARKS.md,
// "Design measurements").
var zstdOptions = []zstd.EOption{
	zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1),
	zstd.WithWindowSize(1 << 20), zstd.WithLowerEncoderMem(true),
}

// compressor is what pgzip.Writer and zstd.Encoder share.
type compressor interface {
	io.WriteCloser
	Reset(w io.Writer)
}

// Compressed wraps write in the negotiated compression, gzip at gzipLevel.
func Compressed(write Encode, enc Encoding, gzipLevel int) Encode {
	var pool *sync.Pool
	switch enc {
	case EncodingGzip:
		pool = &gzipPools[gzipLevel]
	case EncodingZstd:
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
