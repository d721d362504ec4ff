package agentprometheusexporter

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/storetest"
)

// TestScrapeCompressed scrapes with each coding and checks the body
// decompresses to what an uncompressed scrape returns.
func TestScrapeCompressed(t *testing.T) {
	te := startExporter(t, nil)
	te.consume(storetest.AgentBatch(0, 20))
	fetch := func(acceptEncoding string) ([]byte, http.Header) { return te.scrapeEncoded("", acceptEncoding) }
	plain, h := fetch("identity")
	assert.Empty(t, h.Get("Content-Encoding"))
	assert.Equal(t, "Accept-Encoding", h.Get("Vary"))
	require.NotEmpty(t, plain)

	for _, tc := range []struct {
		acceptEncoding, contentEncoding string
		open                            func(io.Reader) (io.Reader, error)
	}{
		{"gzip", "gzip", func(r io.Reader) (io.Reader, error) { return gzip.NewReader(r) }},
		{"gzip;q=0.5", "gzip", func(r io.Reader) (io.Reader, error) { return gzip.NewReader(r) }},
		{"zstd", "zstd", func(r io.Reader) (io.Reader, error) { return zstd.NewReader(r) }},
	} {
		body, h := fetch(tc.acceptEncoding)
		require.Equal(t, tc.contentEncoding, h.Get("Content-Encoding"), tc.acceptEncoding)
		assert.Equal(t, "Accept-Encoding", h.Get("Vary"))
		r, err := tc.open(bytes.NewReader(body))
		require.NoError(t, err)
		got, err := io.ReadAll(r)
		require.NoError(t, err, tc.acceptEncoding)
		assert.Equal(t, string(plain), string(got), tc.acceptEncoding)
	}
}

// TestGzipLevelDeflatesEveryFormat: scrape::gzip_level is the deflate level
// of every gzip scrape, by parts (text, OpenMetrics, delimited protobuf) and
// through pgzip (the formats expfmt writes, protobuf text here): at level 9
// the body is smaller than at level 1, says so in its header (XFL 2,
// "maximum compression", against 4, "fastest"), and decompresses to the
// same exposition.
func TestGzipLevelDeflatesEveryFormat(t *testing.T) {
	start := func(level int) *testExporter {
		te := startExporter(t, func(c *Config) { c.EnableOpenMetrics = true; c.Scrape.GzipLevel = level })
		for a := range 10 {
			te.consume(storetest.AgentBatch(a, 50))
		}
		return te
	}
	levels := []int{1, 9}
	exporters := []*testExporter{start(levels[0]), start(levels[1])}
	for _, tc := range []struct{ accept, contentType string }{
		{"text/plain;version=0.0.4", "text/plain; version=0.0.4"},
		{"application/openmetrics-text;version=1.0.0", "application/openmetrics-text; version=1.0.0"},
		{"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited", "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited"},
		{"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=text", "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=text"},
	} {
		t.Run(tc.accept, func(t *testing.T) {
			var zipped, plain [2][]byte
			for i, te := range exporters {
				var h http.Header
				zipped[i], h = te.scrapeEncoded(tc.accept, "gzip")
				require.Equal(t, "gzip", h.Get("Content-Encoding"))
				require.True(t, strings.HasPrefix(h.Get("Content-Type"), tc.contentType), "Content-Type %q", h.Get("Content-Type"))
				require.Greater(t, len(zipped[i]), 10)
				assert.Equal(t, map[int]byte{1: 4, 9: 2}[levels[i]], zipped[i][8], "XFL at level %d", levels[i])
				zr, err := gzip.NewReader(bytes.NewReader(zipped[i]))
				require.NoError(t, err)
				plain[i], err = io.ReadAll(zr)
				require.NoError(t, err)
			}
			require.NotEmpty(t, plain[0])
			assert.Equal(t, string(plain[0]), string(plain[1]), "the same exposition at both levels")
			assert.Less(t, len(zipped[1]), len(zipped[0]), "level 9's body against level 1's")
			t.Logf("%d bytes: level 1 %d, level 9 %d", len(plain[0]), len(zipped[0]), len(zipped[1]))
		})
	}
}

// acceptPrometheus3Native: Prometheus 3.16 with scrape_native_histograms: true.
const acceptPrometheus3Native = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7," +
	"application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,application/openmetrics-text;version=0.0.1;q=0.5," +
	"text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2"

// TestUTF8NamesReachPrometheus3InProtobuf scrapes as Prometheus 3 does with
// native histograms on: the names of a UTF-8 translation strategy come out
// as they are, as in its OpenMetrics and text scrapes.
func TestUTF8NamesReachPrometheus3InProtobuf(t *testing.T) {
	for _, strategy := range []TranslationStrategy{NoUTF8EscapingWithSuffixes, NoTranslation} {
		t.Run(string(strategy), func(t *testing.T) {
			te := startExporter(t, func(c *Config) { c.TranslationStrategy = strategy })
			md, ms := batch(agent)
			gauge(ms, "café.queue.depth", 3, map[string]any{"café.table": "terrasse"})
			te.consume(md)

			body, hdr := te.scrapeRaw(acceptPrometheus3Native)
			require.Equal(t, "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited; escaping=allow-utf-8",
				hdr.Get("Content-Type"))
			// The decoder validates names by the escaping its format names.
			dec := expfmt.NewDecoder(strings.NewReader(body), expfmt.Format(hdr.Get("Content-Type")))
			var got []string
			for {
				var mf dto.MetricFamily
				err := dec.Decode(&mf)
				if errors.Is(err, io.EOF) {
					break
				}
				require.NoError(t, err)
				for _, m := range mf.GetMetric() {
					got = append(got, mf.GetName()+labelString(m.GetLabel()))
				}
			}
			assert.Contains(t, got, "café.queue.depth"+lbl("café.table=terrasse"))
		})
	}
}
