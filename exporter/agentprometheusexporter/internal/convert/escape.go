package convert // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/convert"

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// appendEscaped appends s as a text-format label value: backslash, double
// quote and newline escaped, invalid UTF-8 replaced by U+FFFD, so that every
// exposition parses whatever an agent sends.
func appendEscaped[T string | []byte](b []byte, s T) []byte {
	for i := 0; i < len(s); i++ {
		if needsEscape[s[i]] {
			return appendEscapedSlow(b, string(s))
		}
	}
	return append(b, s...)
}

// needsEscape marks the bytes that send a value down the slow path: one table
// load per byte instead of four comparisons.
var needsEscape = func() (t [256]bool) {
	for c := utf8.RuneSelf; c < 256; c++ {
		t[c] = true
	}
	t['\\'], t['"'], t['\n'] = true, true, true
	return t
}()

func appendEscapedSlow(b []byte, s string) []byte {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			b = append(b, `\\`...)
		case '"':
			b = append(b, `\"`...)
		case '\n':
			b = append(b, `\n`...)
		default:
			b = append(b, c)
		}
	}
	return b
}

// appendRaw appends an attribute value as pcommon.Value.AsString renders it,
// unescaped; strings, ints and bools without allocating.
func appendRaw(b []byte, v pcommon.Value) []byte {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return append(b, v.Str()...)
	case pcommon.ValueTypeInt:
		return strconv.AppendInt(b, v.Int(), 10)
	case pcommon.ValueTypeBool:
		return strconv.AppendBool(b, v.Bool())
	default:
		return append(b, v.AsString()...)
	}
}

// appendValue appends an attribute value as pcommon.Value.AsString renders
// it, escaped; strings, ints and bools without allocating.
func appendValue(b []byte, v pcommon.Value) []byte {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return appendEscaped(b, v.Str())
	case pcommon.ValueTypeInt:
		return strconv.AppendInt(b, v.Int(), 10)
	case pcommon.ValueTypeBool:
		return strconv.AppendBool(b, v.Bool())
	default:
		return appendEscaped(b, v.AsString())
	}
}
