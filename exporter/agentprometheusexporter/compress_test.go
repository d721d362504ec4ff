package agentprometheusexporter

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNegotiateEncoding(t *testing.T) {
	for _, tc := range []struct {
		header string
		want   contentEncoding
	}{
		{"", encodingIdentity},
		{"gzip", encodingGzip},
		{"GZIP", encodingGzip},
		{"x-gzip", encodingGzip},
		{"gzip;q=0.5", encodingGzip},
		{"gzip; q=0.001", encodingGzip},
		{"gzip;q=0", encodingIdentity},
		{"gzip;q=0.0", encodingIdentity},
		{"gzip;q=bad", encodingIdentity},
		{"gzip;q=2", encodingIdentity},
		{"zstd", encodingZstd},
		{"gzip, zstd", encodingGzip},
		{"zstd, gzip", encodingGzip},
		{"zstd;q=1, gzip;q=0.5", encodingZstd},
		{"gzip;q=0.5, zstd;q=0", encodingGzip},
		{"deflate, br", encodingIdentity},
		{"identity", encodingIdentity},
		{"identity;q=1, gzip;q=0.5", encodingIdentity},
		{"identity;q=0.5, gzip", encodingGzip},
		{"*", encodingGzip},
		{"*;q=0.5, gzip;q=0", encodingZstd},
		{"*;q=0, identity", encodingIdentity},
	} {
		assert.Equal(t, tc.want, negotiateEncoding(tc.header), "Accept-Encoding: %q", tc.header)
	}
}

// TestScrapeCompressed scrapes with each coding and checks the body
// decompresses to what an uncompressed scrape returns.
func TestScrapeCompressed(t *testing.T) {
	te := startExporter(t, nil)
	te.consume(agentBatch(0, 20))
	fetch := func(acceptEncoding string) ([]byte, http.Header) {
		req, err := http.NewRequest(http.MethodGet, "http://"+te.endpoint+metricsPath, nil)
		require.NoError(t, err)
		req.Header.Set("Accept-Encoding", acceptEncoding)
		// A transport of its own, so that Go's client does not unpack gzip.
		resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return body, resp.Header
	}
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
