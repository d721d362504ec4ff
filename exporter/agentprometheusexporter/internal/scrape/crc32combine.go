package scrape

import "hash/crc32"

// crc32Combine returns the CRC-32 (IEEE) of a+b from the CRC-32 of a, that
// of b and the length of b, as zlib's crc32_combine: the parts of a gzip
// scrape are checksummed where they are formatted, and the stream's
// checksum is theirs combined. hash/crc32 has no combine.
func crc32Combine(crcA, crcB uint32, lenB int64) uint32 {
	return multModP(xPow8N(lenB), crcA) ^ crcB
}

// CRC-32 arithmetic modulo the polynomial, bit-reflected as crc32.IEEE:
// the high bit is x^0.
const crcOne = uint32(1) << 31

// x2n holds x^(2^k) modulo the polynomial, for k = 0..31.
var x2n = func() (t [32]uint32) {
	p := crcOne >> 1 // x^1
	t[0] = p
	for k := 1; k < len(t); k++ {
		p = multModP(p, p)
		t[k] = p
	}
	return t
}()

// multModP multiplies a and b modulo the polynomial.
func multModP(a, b uint32) uint32 {
	var p uint32
	for m := crcOne; m != 0; m >>= 1 {
		if a&m != 0 {
			p ^= b
			if a&(m-1) == 0 {
				break
			}
		}
		if b&1 != 0 {
			b = b>>1 ^ crc32.IEEE
		} else {
			b >>= 1
		}
	}
	return p
}

// xPow8N is x^(8n) modulo the polynomial: the shift of n bytes.
func xPow8N(n int64) uint32 {
	p := crcOne
	for k := 3; n != 0; n, k = n>>1, k+1 {
		if n&1 != 0 {
			p = multModP(x2n[k&31], p)
		}
	}
	return p
}
