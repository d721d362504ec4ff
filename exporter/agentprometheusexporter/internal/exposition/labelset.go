package exposition // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/exposition"

import "strings"

// pairReader reads the pairs of a rendered label set (store.Series.Labels)
// in order, without allocating: `a="x",b="y\"z"`. Names and values stay as
// rendered, escaped as text-format label values (names are escaped alike
// when UTF-8 names are allowed, see convert); unescape them for formats that
// carry raw strings.
type pairReader struct{ rest string }

func readPairs(labels string) pairReader { return pairReader{rest: labels} }

// next returns the next pair; ok is false at the end or on a malformed set,
// which ends the pairs rather than the scrape.
func (r *pairReader) next() (name, value string, ok bool) {
	s := r.rest
	i := unescapedQuote(s, 0)
	if i < 1 || s[i-1] != '=' {
		r.rest = ""
		return "", "", false
	}
	j := unescapedQuote(s, i+1)
	if j < 0 {
		r.rest = ""
		return "", "", false
	}
	name, value = s[:i-1], s[i+1:j]
	r.rest = strings.TrimPrefix(s[j+1:], ",")
	return name, value, true
}

// unescapedQuote is the index of the first double quote in s at or after
// from that no backslash escapes, -1 for none.
func unescapedQuote(s string, from int) int {
	for i := from; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
}

// appendUnescaped appends a rendered name or value with its text-format
// escaping undone: \\, \" and \n.
func appendUnescaped(b []byte, s string) []byte {
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
