package agentprometheusexporter

import (
	"bytes"
	stdgzip "compress/gzip"
	"context"
	"io"
	"testing"

	kgzip "github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/prometheus/common/model"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/exposition"
)

// BenchmarkCompress compresses a real exposition (the text and protobuf
// scrapes of 100k OTLP series of the gateway workload) with each candidate
// at its fastest level: throughput in MB/s of exposition, and the
// compressed size in bytes per exposition byte.
func BenchmarkCompress(b *testing.B) {
	exp := benchExporter(b)
	for a := range 100 {
		_ = exp.consumeMetrics(context.Background(), agentBatch(a, 100))
	}
	var text, proto bytes.Buffer
	if err := exposition.WriteText(&text, exp.store, exp.expo, model.UnderscoreEscaping); err != nil {
		b.Fatal(err)
	}
	if err := exposition.WriteProtobuf(&proto, exp.store, exp.expo, model.UnderscoreEscaping); err != nil {
		b.Fatal(err)
	}
	candidates := []struct {
		name string
		new  func() (io.WriteCloser, func(io.Writer))
	}{
		{"stdlib-gzip", func() (io.WriteCloser, func(io.Writer)) {
			w, _ := stdgzip.NewWriterLevel(nil, stdgzip.BestSpeed)
			return w, w.Reset
		}},
		{"klauspost-gzip", func() (io.WriteCloser, func(io.Writer)) {
			w, _ := kgzip.NewWriterLevel(nil, kgzip.BestSpeed)
			return w, w.Reset
		}},
		{"klauspost-zstd", func() (io.WriteCloser, func(io.Writer)) {
			w, _ := zstd.NewWriter(nil, zstdOptions...)
			return w, w.Reset
		}},
	}
	for _, body := range []struct {
		name string
		data []byte
	}{{"text", text.Bytes()}, {"protobuf", proto.Bytes()}} {
		for _, c := range candidates {
			b.Run("body="+body.name+"/codec="+c.name, func(b *testing.B) {
				w, reset := c.new()
				var out countingWriter
				b.SetBytes(int64(len(body.data)))
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					out = 0
					reset(&out)
					if _, err := w.Write(body.data); err != nil {
						b.Fatal(err)
					}
					if err := w.Close(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(out)/float64(len(body.data)), "ratio")
			})
		}
	}
}

type countingWriter int64

func (c *countingWriter) Write(p []byte) (int, error) {
	*c += countingWriter(len(p))
	return len(p), nil
}
