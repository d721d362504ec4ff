package promtext

import (
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
	assert.Equal(t, 4, ClosingQuote(`ab\""x"`, 0))
	assert.Equal(t, 3, ClosingQuote(`a\""`, 1))
	assert.Equal(t, -1, ClosingQuote(`a\"`, 0))
}

func TestAppendEscapedHelp(t *testing.T) {
	assert.Equal(t, `a \\ "b" \n`, string(AppendEscapedHelp(nil, "a \\ \"b\" \n")))
}
