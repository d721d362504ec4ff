package promtext

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
)

// expfmtText and expfmtOpenMetrics are expfmt's float rules (writeFloat,
// writeOpenMetricsFloat), written out as the reference.
func expfmtText(f float64) string {
	switch {
	case f == 1:
		return "1"
	case f == 0:
		return "0"
	case f == -1:
		return "-1"
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func expfmtOpenMetrics(f float64) string {
	switch {
	case f == 1:
		return "1.0"
	case f == 0:
		return "0.0"
	case f == -1:
		return "-1.0"
	case math.IsNaN(f), math.IsInf(f, 0):
		return expfmtText(f)
	}
	b := strconv.AppendFloat(nil, f, 'g', -1, 64)
	if !bytes.ContainsAny(b, "e.") {
		b = append(b, '.', '0')
	}
	return string(b)
}

func floatCases() []float64 {
	cases := []float64{
		0, math.Copysign(0, -1), 1, -1, 2, 10, 999999, 1e6, -1e6, 1234567, 1000001, 1.5e6, 120000,
		1e14, 1e15 - 1, 1e15, 1e15 + 2, 123456789012345, 1 << 53, 1e21, 1e22, -5e20,
		0.5, 0.005, 1e-5, 1e-4, 0.1 + 0.2, 12.5, -0.25, math.MaxFloat64, math.SmallestNonzeroFloat64,
		math.NaN(), math.Inf(1), math.Inf(-1), 1.7e9, 1700000000.123, 1700000000.001,
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		whole := float64(r.Int64N(1e16) - 5e15)
		cases = append(cases, whole, math.Trunc(whole/float64(int64(1)<<r.IntN(50))), r.NormFloat64()*math.Pow(10, float64(r.IntN(40)-20)))
	}
	return cases
}

func TestAppendFloatIsExpfmtText(t *testing.T) {
	for _, f := range floatCases() {
		if got, want := string(AppendFloat(nil, f)), expfmtText(f); got != want {
			t.Fatalf("%v: got %q, expfmt writes %q", f, got, want)
		}
	}
}

func TestAppendCountIsTheCountAsFloat(t *testing.T) {
	for _, c := range []uint64{0, 1, 999999, 1e6, 1234567, 1 << 53, 1<<53 + 1, math.MaxUint64} {
		assert.Equal(t, expfmtText(float64(c)), string(AppendCount(nil, c)), c)
	}
}

func TestAppendOpenMetricsFloatIsExpfmtOpenMetrics(t *testing.T) {
	for _, f := range floatCases() {
		want := expfmtOpenMetrics(f)
		if got := string(AppendOpenMetricsFloat(nil, f)); got != want {
			t.Fatalf("%v: got %q, expfmt writes %q", f, got, want)
		}
		if got := string(OpenMetricsFromText(nil, string(AppendFloat(nil, f)))); got != want {
			t.Fatalf("%v from text: got %q, expfmt writes %q", f, got, want)
		}
	}
}

func TestAppendFloatDoesNotAllocate(t *testing.T) {
	buf := make([]byte, 0, 64)
	allocs := testing.AllocsPerRun(100, func() {
		for _, f := range []float64{3, 1234567, 0.25, math.Inf(1)} {
			buf = AppendOpenMetricsFloat(AppendFloat(buf[:0], f), f)
		}
	})
	assert.Zero(t, allocs)
}

func BenchmarkAppendFloat(b *testing.B) {
	for _, f := range []float64{42, 1234567, 12345678901, 0.25, 1700000000.123} {
		b.Run(strconv.FormatFloat(f, 'g', -1, 64), func(b *testing.B) {
			buf := make([]byte, 0, 64)
			for range b.N {
				buf = AppendFloat(buf[:0], f)
			}
		})
	}
}
