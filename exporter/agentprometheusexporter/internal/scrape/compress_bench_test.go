package scrape

import (
	"bytes"
	stdgzip "compress/gzip"
	"fmt"
	"io"
	"net/http"
	"testing"

	kgzip "github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/klauspost/pgzip"
	"github.com/prometheus/common/model"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/exposition"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/storetest"
)

// BenchmarkCompress compresses a real exposition (the text and protobuf
// scrapes of 100k OTLP series of the gateway workload) with each candidate
// at its fastest level: throughput in MB/s of exposition, and the
// compressed size in bytes per exposition byte.
func BenchmarkCompress(b *testing.B) {
	exp := benchStore(b)
	var text, proto bytes.Buffer
	if err := exposition.Write(&text, exp.Store.Store, exposition.Request{Format: exposition.Text, Options: exp.Expo, Escaping: model.UnderscoreEscaping}); err != nil {
		b.Fatal(err)
	}
	if err := exposition.Write(&proto, exp.Store.Store, exposition.Request{Format: exposition.Protobuf, Options: exp.Expo, Escaping: model.UnderscoreEscaping}); err != nil {
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
		{"klauspost-pgzip", func() (io.WriteCloser, func(io.Writer)) {
			w := gzipPools[DefaultGzipLevel].New().(*pgzip.Writer) // as shipped: parallel blocks
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

// BenchmarkCompressedScrape measures whole compressed scrapes of the
// 100k-series workload without HTTP, in ns per text sample (and in CPU
// time per text sample, every thread's): the writer alone as the floor;
// klauspost's serial gzip on the writer's goroutine; pgzip, which
// compresses the blocks the writer hands it on goroutines of its own (as
// the formats expfmt writes ship); and the scrape by parts as it ships,
// each part formatted and deflated on one of GOMAXPROCS workers.
func BenchmarkCompressedScrape(b *testing.B) {
	exp := benchStore(b)
	var text bytes.Buffer
	if err := exposition.Write(&text, exp.Store.Store, exposition.Request{Format: exposition.Text, Options: exp.Expo, Escaping: model.UnderscoreEscaping}); err != nil {
		b.Fatal(err)
	}
	samples := bytes.Count(text.Bytes(), []byte("\n")) - bytes.Count(text.Bytes(), []byte("# "))
	for _, f := range []struct{ name, accept string }{
		{"text", "text/plain;version=0.0.4"},
		{"protobuf", "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited"},
	} {
		format := Negotiate(http.Header{"Accept": []string{f.accept}}, false)
		identity := exp.encoder.For(format, EncodingIdentity)
		modes := []struct {
			name   string
			encode Encode
		}{
			{"identity", identity},
			{"gzip-serial", serialGzip(identity)},
			{"gzip-pgzip", Compressed(EncodingGzip, DefaultGzipLevel, identity)},
		}
		modes = append(modes, struct {
			name   string
			encode Encode
		}{"gzip-parts", exp.encoder.For(format, EncodingGzip)})
		for _, mode := range modes {
			b.Run("format="+f.name+"/mode="+mode.name, func(b *testing.B) {
				var out countingWriter
				b.ReportAllocs()
				cpu := cpuTime()
				for b.Loop() {
					out = 0
					if err := mode.encode(&out, 0); err != nil {
						b.Fatal(err)
					}
				}
				cpu = cpuTime() - cpu
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(samples), "ns/sample")
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/float64(samples), "cpu-ns/sample")
				b.ReportMetric(float64(out), "B/response")
			})
		}
	}
}

// serialGzip compresses with klauspost's gzip on the writer's goroutine.
func serialGzip(write Encode) Encode {
	zw, _ := kgzip.NewWriterLevel(nil, kgzip.BestSpeed)
	return func(w io.Writer, began int64) error {
		zw.Reset(w)
		err := write(zw, began)
		if cerr := zw.Close(); err == nil {
			err = cerr
		}
		return err
	}
}

type countingWriter int64

func (c *countingWriter) Write(p []byte) (int, error) {
	*c += countingWriter(len(p))
	return len(p), nil
}

// benchStore holds the 100k series of the gateway workload: 100 agents of
// storetest.AgentBatch(a, 100), two resource labels, no scope labels.
type benchStoreEncoder struct {
	*storetest.Store
	encoder *Encoder
}

func benchStore(b *testing.B) benchStoreEncoder {
	st := storetest.New(b, storetest.Options{ResourceLabels: []string{"host.name", "cloud.region"}, WithoutScopeInfo: true})
	for a := range 100 {
		st.Consume(storetest.AgentBatch(a, 100))
	}
	return benchStoreEncoder{st, &Encoder{Store: st.Store, Options: st.Expo, Scrapers: NewScrapers(), GzipLevel: DefaultGzipLevel}}
}

// BenchmarkGzipLevels measures the gzip scrape by parts of the 100k-series
// workload without HTTP, as BenchmarkCompressedScrape does, at each level
// of klauspost's flate and part size, for text and protobuf: ns per text
// sample, the response's bytes, and its size against the same exposition
// compressed whole by compress/gzip at its default level, as contrib's
// exporter (promhttp) compresses. DefaultGzipLevel and partLines are
// chosen from it.
func BenchmarkGzipLevels(b *testing.B) {
	exp := benchStore(b)
	var text bytes.Buffer
	if err := exposition.Write(&text, exp.Store.Store, exposition.Request{Format: exposition.Text, Options: exp.Expo, Escaping: model.UnderscoreEscaping}); err != nil {
		b.Fatal(err)
	}
	samples := bytes.Count(text.Bytes(), []byte("\n")) - bytes.Count(text.Bytes(), []byte("# "))
	for _, f := range []struct {
		name  string
		write func(io.Writer, exposition.Parts) error
		whole func(io.Writer) error
	}{
		{"text", func(w io.Writer, p exposition.Parts) error {
			return exposition.Write(w, exp.Store.Store, exposition.Request{Format: exposition.Text, Options: exp.Expo, Escaping: model.UnderscoreEscaping, Parts: p})
		}, func(w io.Writer) error {
			return exposition.Write(w, exp.Store.Store, exposition.Request{Format: exposition.Text, Options: exp.Expo, Escaping: model.UnderscoreEscaping})
		}},
		{"protobuf", func(w io.Writer, p exposition.Parts) error {
			return exposition.Write(w, exp.Store.Store, exposition.Request{Format: exposition.Protobuf, Options: exp.Expo, Escaping: model.UnderscoreEscaping, Parts: p})
		}, func(w io.Writer) error {
			return exposition.Write(w, exp.Store.Store, exposition.Request{Format: exposition.Protobuf, Options: exp.Expo, Escaping: model.UnderscoreEscaping})
		}},
	} {
		var contrib countingWriter
		zw := stdgzip.NewWriter(&contrib)
		if err := f.whole(zw); err != nil {
			b.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			b.Fatal(err)
		}
		for _, partLines := range []int{4096, 16384, 65536} {
			for level := 1; level <= 9; level++ {
				b.Run(fmt.Sprintf("format=%s/lines=%d/level=%d", f.name, partLines, level), func(b *testing.B) {
					parts := gzipByParts(level, partLines)
					var out countingWriter
					b.ReportAllocs()
					cpu := cpuTime()
					for b.Loop() {
						out = 0
						if err := f.write(&out, parts); err != nil {
							b.Fatal(err)
						}
					}
					cpu = cpuTime() - cpu
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(samples), "ns/sample")
					b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/float64(samples), "cpu-ns/sample")
					b.ReportMetric(float64(out), "B/response")
					b.ReportMetric(float64(out)/float64(contrib), "x-gzip-default")
				})
			}
		}
	}
}
