package scrape

import (
	"hash/crc32"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCRC32Combine(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	for _, cut := range []int{0, 1, 7, 4096, 65537, len(data) - 1, len(data)} {
		a, b := data[:cut], data[cut:]
		got := crc32Combine(crc32.ChecksumIEEE(a), crc32.ChecksumIEEE(b), int64(len(b)))
		assert.Equal(t, crc32.ChecksumIEEE(data), got, "cut at %d", cut)
	}
	// Three parts, combined left to right as a scrape combines them.
	crc := uint32(0)
	for _, p := range [][]byte{data[:1000], data[1000:300000], data[300000:]} {
		crc = crc32Combine(crc, crc32.ChecksumIEEE(p), int64(len(p)))
	}
	assert.Equal(t, crc32.ChecksumIEEE(data), crc)
}
