package promtext

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestEscapeRoundTrip(t *testing.T) {
	for _, s := range []string{"", "plain", `q"uote`, `back\slash\`, "new\nline", "é", `\n`, `\\"`} {
		escaped := string(AppendEscaped(nil, s))
		assert.NotContains(t, strings.ReplaceAll(escaped, `\"`, ""), `"`, s)
		assert.Equal(t, s, string(AppendUnescaped(nil, escaped)), s)
		assert.Equal(t, s, Unescaped(escaped), s)
	}
	assert.Equal(t, "a\uFFFDb", string(AppendEscaped(nil, "a\xffb")), "invalid UTF-8 is replaced")
}

func TestCompareUnescaped(t *testing.T) {
	words := []string{"", "a", "a\"", "a#", "a\\", "a\n", "a\nb", "ab", "b", "a\"b", "\\"}
	for _, x := range words {
		for _, y := range words {
			want := strings.Compare(x, y)
			got := CompareUnescaped(string(AppendEscaped(nil, x)), string(AppendEscaped(nil, y)))
			assert.Equal(t, want < 0, got < 0, "%q %q", x, y)
			assert.Equal(t, want == 0, got == 0, "%q %q", x, y)
		}
	}
}

func TestClosingQuote(t *testing.T) {
	// As a scan that skips the character after each backslash.
	scan := func(s string, from int) int {
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
	words := []string{``, `"`, `\"`, `\\"`, `\\\"x"`, `ab\"c\\"`, `a\`, `\\\\`, `x"y"`, `\x"`, `a="b\"c",d="e"`}
	r := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		b := make([]byte, r.IntN(12))
		for i := range b {
			b[i] = `\"a`[r.IntN(3)]
		}
		words = append(words, string(b))
	}
	for _, s := range words {
		for from := 0; from <= len(s); from++ {
			assert.Equal(t, scan(s, from), ClosingQuote(s, from), "%q from %d", s, from)
		}
	}
	assert.Equal(t, 4, ClosingQuote(`ab\""x"`, 0))
	assert.Equal(t, 3, ClosingQuote(`a\""`, 1))
	assert.Equal(t, -1, ClosingQuote(`a\"`, 0))
}

func TestAppendEscapedHelp(t *testing.T) {
	assert.Equal(t, `a \\ "b" \n`, string(AppendEscapedHelp(nil, "a \\ \"b\" \n")))
}
