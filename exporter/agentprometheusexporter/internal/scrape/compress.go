package scrape

import (
	"io"
	"sync"

	"github.com/klauspost/compress/zstd"
	"github.com/klauspost/pgzip"
)

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
func Compressed(enc Encoding, gzipLevel int, write Encode) Encode {
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
