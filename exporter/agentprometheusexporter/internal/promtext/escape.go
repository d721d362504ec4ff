package promtext // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/promtext"

import (
	"strings"
	"unicode/utf8"
)

// AppendEscaped appends s as a quoted string of the text formats — a label
// value, a quoted name, an OpenMetrics HELP text — without its quotes:
// backslash, double quote and newline escaped, invalid UTF-8 replaced by
// U+FFFD, so that every exposition parses whatever an agent sends.
func AppendEscaped[T string | []byte](b []byte, s T) []byte {
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

// AppendUnescaped appends a string escaped by AppendEscaped with the
// escaping undone: \\, \" and \n.
func AppendUnescaped(b []byte, s string) []byte {
	if strings.IndexByte(s, '\\') < 0 {
		return append(b, s...)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) {
			i++
			if c = s[i]; c == 'n' {
				c = '\n'
			}
		}
		b = append(b, c)
	}
	return b
}

// Unescaped is AppendUnescaped as a string; it copies only when s holds an
// escape.
func Unescaped(s string) string {
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	return string(AppendUnescaped(nil, s))
}

// CompareUnescaped orders two escaped strings as their unescaped forms
// order, without unescaping them.
func CompareUnescaped(a, b string) int {
	for len(a) > 0 && len(b) > 0 {
		var ca, cb byte
		ca, a = firstUnescaped(a)
		cb, b = firstUnescaped(b)
		if ca != cb {
			if ca < cb {
				return -1
			}
			return 1
		}
	}
	return len(a) - len(b) // only the sign matters: the one left over is longer
}

func firstUnescaped(s string) (byte, string) {
	if s[0] == '\\' && len(s) > 1 {
		if s[1] == 'n' {
			return '\n', s[2:]
		}
		return s[1], s[2:]
	}
	return s[0], s[1:]
}

// ClosingQuote is the index of the first double quote at or after from that
// no backslash escapes, -1 for none. A quote is escaped when the backslashes
// right before it, from from on, are odd in number.
func ClosingQuote(s string, from int) int {
	for i := from; i <= len(s); {
		j := strings.IndexByte(s[i:], '"') // vectorised: values are most of a label set
		if j < 0 {
			return -1
		}
		j += i
		k := j
		for k > from && s[k-1] == '\\' {
			k--
		}
		if (j-k)%2 == 0 {
			return j
		}
		i = j + 1
	}
	return -1
}

// AppendEscapedHelp appends a HELP text as the text format 0.0.4 escapes it:
// backslash and newline, not the double quote.
func AppendEscapedHelp(b []byte, help string) []byte {
	if strings.IndexByte(help, '\\') < 0 && strings.IndexByte(help, '\n') < 0 {
		return append(b, help...)
	}
	for i := 0; i < len(help); i++ {
		switch c := help[i]; c {
		case '\\':
			b = append(b, `\\`...)
		case '\n':
			b = append(b, `\n`...)
		default:
			b = append(b, c)
		}
	}
	return b
}
