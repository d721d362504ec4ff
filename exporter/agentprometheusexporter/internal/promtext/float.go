package promtext // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/promtext"

import (
	"math"
	"strconv"
)

// AppendFloat appends f as the text format 0.0.4 writes it (expfmt's
// writeFloat): NaN, +Inf, -Inf, 0 for either zero, otherwise strconv's
// shortest 'g' rendering.
func AppendFloat(b []byte, f float64) []byte {
	switch {
	case f == 0:
		return append(b, '0')
	case math.IsNaN(f):
		return append(b, "NaN"...)
	case math.IsInf(f, 1):
		return append(b, "+Inf"...)
	case math.IsInf(f, -1):
		return append(b, "-Inf"...)
	}
	return appendShortest(b, f)
}

// AppendCount appends a count (of a histogram bucket, of observations) as
// the text format 0.0.4 writes it, as a float: AppendFloat(b, float64(c)),
// which below 1e6 is the integer itself.
func AppendCount(b []byte, c uint64) []byte {
	if c < 1e6 {
		return strconv.AppendUint(b, c, 10)
	}
	return AppendFloat(b, float64(c))
}

// AppendOpenMetricsFloat appends f as OpenMetrics 1.0 writes it (expfmt's
// writeOpenMetricsFloat): as AppendFloat, with ".0" after a whole number
// that would otherwise read as an integer.
func AppendOpenMetricsFloat(b []byte, f float64) []byte {
	b = AppendFloat(b, f)
	if isWholeBelow1e6(f) {
		b = append(b, ".0"...)
	}
	return b
}

// OpenMetricsFromText appends the OpenMetrics rendering of a float that
// AppendFloat rendered as text: text plus ".0" when it is all digits.
// Bucket bounds are rendered once, as text, and reused by both formats.
func OpenMetricsFromText[T string | []byte](b []byte, text T) []byte {
	b = append(b, text...)
	for i := 0; i < len(text); i++ {
		if c := text[i]; (c < '0' || c > '9') && (c != '-' || i > 0) {
			return b
		}
	}
	return append(b, ".0"...)
}

// isWholeBelow1e6 reports whether strconv's shortest 'g' writes f without a
// point or exponent: whole numbers below 1e6 in magnitude (it switches to
// the exponent form from 1e6 on).
func isWholeBelow1e6(f float64) bool { return f == math.Trunc(f) && math.Abs(f) < 1e6 }

// appendShortest is strconv.AppendFloat(b, f, 'g', -1, 64) for finite f.
// Whole numbers, the values of counters and the counts of histograms, skip
// the shortest-digits search: below 2^53 their shortest digits are their
// own, so they are written from strconv.AppendInt in the form 'g' chooses.
func appendShortest(b []byte, f float64) []byte {
	if f != math.Trunc(f) || math.Abs(f) >= 1e15 {
		return strconv.AppendFloat(b, f, 'g', -1, 64)
	}
	n := int64(f)
	if n > -1e6 && n < 1e6 {
		return strconv.AppendInt(b, n, 10)
	}
	// %e with the trailing zeros dropped: 1234500 is 1.2345e+06.
	if n < 0 {
		b = append(b, '-')
		n = -n
	}
	var d [20]byte
	digits := strconv.AppendInt(d[:0], n, 10)
	exp := len(digits) - 1
	for digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
	}
	b = append(b, digits[0])
	if len(digits) > 1 {
		b = append(b, '.')
		b = append(b, digits[1:]...)
	}
	b = append(b, 'e', '+')
	if exp < 10 {
		b = append(b, '0')
	}
	return strconv.AppendInt(b, int64(exp), 10)
}
