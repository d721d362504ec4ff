package cardinality // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/cardinality"

import (
	"math"
	"math/bits"
)

// exactLimit is how many distinct values of one label are counted exactly;
// beyond it a HyperLogLog sketch estimates the count, so that a label with a
// million values costs 16 KiB rather than a set of a million hashes.
const exactLimit = 10_000

// hllBits is the sketch's precision: 2^14 registers, ~0.8% standard error.
const hllBits = 14

// distinct counts the distinct value hashes of one label.
type distinct struct {
	exact map[uint64]struct{}
	regs  []uint8 // the sketch, once exact is past exactLimit
}

func (d *distinct) add(h uint64) {
	if d.regs != nil {
		d.sketch(h)
		return
	}
	if d.exact == nil {
		d.exact = map[uint64]struct{}{}
	}
	d.exact[h] = struct{}{}
	if len(d.exact) > exactLimit {
		d.regs = make([]uint8, 1<<hllBits)
		for h := range d.exact {
			d.sketch(h)
		}
		d.exact = nil
	}
}

func (d *distinct) sketch(h uint64) {
	i := h >> (64 - hllBits)
	// The rank of the remaining bits: leading zeros + 1, with a stop bit so
	// that it is at most 64-hllBits+1.
	rank := uint8(bits.LeadingZeros64(h<<hllBits|1<<(hllBits-1))) + 1
	d.regs[i] = max(d.regs[i], rank)
}

// count returns the number of distinct values and whether it is an estimate.
func (d *distinct) count() (n int64, estimated bool) {
	if d.regs == nil {
		return int64(len(d.exact)), false
	}
	const m = float64(1 << hllBits)
	sum, zeros := 0.0, 0
	for _, r := range d.regs {
		sum += math.Ldexp(1, -int(r))
		if r == 0 {
			zeros++
		}
	}
	est := 0.7213 / (1 + 1.079/m) * m * m / sum
	if est <= 2.5*m && zeros > 0 {
		est = m * math.Log(m/float64(zeros)) // linear counting for the small range
	}
	// The exact count is a lower bound of the estimate.
	return max(int64(math.Round(est)), exactLimit+1), true
}
