package agentprometheusexporter // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter"

import (
	"compress/gzip"
	"io"
	"sync"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/scrape"
)

// Compressors are pooled: a fresh one per scrape would be most of its garbage.
var gzipPool = sync.Pool{New: func() any {
	// BestSpeed: a gateway's exposition is large and highly redundant;
	// level 1 already shrinks it ~10x at a fraction of the default's CPU.
	w, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	return w
}}

// compressed wraps write in gzip when gz is set.
func compressed(write scrape.Encode, gz bool) scrape.Encode {
	if !gz {
		return write
	}
	return func(w io.Writer, began int64) error {
		zw := gzipPool.Get().(*gzip.Writer)
		zw.Reset(w)
		err := write(zw, began)
		if cerr := zw.Close(); err == nil {
			err = cerr
		}
		zw.Reset(nil)
		gzipPool.Put(zw)
		return err
	}
}
