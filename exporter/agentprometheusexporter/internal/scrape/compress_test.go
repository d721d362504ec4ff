package scrape

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestNegotiateEncoding(t *testing.T) {
	for _, tc := range []struct {
		header string
		want   Encoding
	}{
		{"", EncodingIdentity},
		{"gzip", EncodingGzip},
		{"GZIP", EncodingGzip},
		{"x-gzip", EncodingGzip},
		{"gzip;q=0.5", EncodingGzip},
		{"gzip; q=0.001", EncodingGzip},
		{"gzip;q=0", EncodingIdentity},
		{"gzip;q=0.0", EncodingIdentity},
		{"gzip;q=bad", EncodingIdentity},
		{"gzip;q=2", EncodingIdentity},
		{"zstd", EncodingZstd},
		{"gzip, zstd", EncodingGzip},
		{"zstd, gzip", EncodingGzip},
		{"zstd;q=1, gzip;q=0.5", EncodingZstd},
		{"gzip;q=0.5, zstd;q=0", EncodingGzip},
		{"deflate, br", EncodingIdentity},
		{"identity", EncodingIdentity},
		{"identity;q=1, gzip;q=0.5", EncodingIdentity},
		{"identity;q=0.5, gzip", EncodingGzip},
		{"*", EncodingGzip},
		{"*;q=0.5, gzip;q=0", EncodingZstd},
		{"*;q=0, identity", EncodingIdentity},
	} {
		assert.Equal(t, tc.want, NegotiateEncoding(tc.header), "Accept-Encoding: %q", tc.header)
	}
}
