package store

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLabelClashKeepsTheFirstSeries(t *testing.T) {
	for _, tt := range []struct {
		name, first string
		clashing    []string
	}{
		{"a UTF-8 name first", `a.b="x"`, []string{`a-b="x"`, `a_b="x"`}},
		// The family has only plain names until the second series: the
		// record starts from the series it has.
		{"a plain name first", `a_b="x"`, []string{`a.b="x"`, `a-b="x"`}},
		{"names joined", `a-b="y",a.b="x"`, []string{`a_b="y;x"`, `a-b="y",a_b="x"`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := New(100, 100, Claims{})
			f, ok := st.Family("g", KindGauge, "", "")
			require.True(t, ok)
			res := st.Resource([]byte("job\xffinst"), 0)
			f.lock()

			first, out := upsertText(t, f, tt.first, res, 1)
			if !assert.Equal(t, Created, out) {
				f.mu.Unlock()
				return
			}
			for _, labels := range tt.clashing {
				s, out := upsertText(t, f, labels, res, 2)
				assert.Equal(t, RefusedLabelClash, out, labels)
				assert.Nil(t, s)
			}
			again, out := upsertText(t, f, tt.first, res, 3)
			assert.Equal(t, Updated, out)
			assert.Same(t, first, again)
			other, out := upsertText(t, f, `a.b="z"`, res, 3)
			assert.Equal(t, Created, out, "a series other names write apart is kept")
			assert.Equal(t, int64(2), st.SeriesCount(), "a refused series is not counted")

			// Once the first is gone, the next takes the labels.
			assert.True(t, deleteText(t, f, tt.first))
			next, out := upsertText(t, f, tt.clashing[0], res, 4)
			assert.Equal(t, Created, out)
			_, out = upsertText(t, f, tt.first, res, 5)
			assert.Equal(t, RefusedLabelClash, out, "the record follows the series created after a removal")
			assert.True(t, deleteText(t, f, `a.b="z"`))
			assert.NotSame(t, other, next)
			f.mu.Unlock()
			assert.Equal(t, []string{tt.clashing[0]}, labelsOf(f))
		})
	}
}

func TestAppendUnderscoredWritesAsTheExpositionDoes(t *testing.T) {
	for text, want := range map[string]string{
		``:                           ``,
		`a_b="x"`:                    `a_b="x"`,
		`a.b="x",c="y"`:              `a_b="x",c="y"`,
		`a-b="y",a.b="x"`:            `a_b="y;x"`, // joined in name order
		`a\"b="q\"",a\\b="\\"`:       `a_b="q\";\\"`,
		`1a="x",b="y"`:               `_a="x",b="y"`,
		`__name__x="x",é="y",ü="z"`:  `_="y;z",__name__x="x"`,
		`z.z="1",zz="2",é.é="3"`:     `___="3",z_z="1",zz="2"`, // sorted as written
		`a.b="y",a\nb="x",a_b="z"`:   `a_b="x;y;z"`,            // joined in the order of the unescaped names
		`__name__="n",a="v"`:         `__name__="n",a="v"`,     // plain: as stored (the converter renames it)
		`_.name__="n",__name__.="v"`: `__name___="v",exported___name__="n"`,
	} {
		set, ok := ParseLabels(text)
		require.True(t, ok, text)
		assert.Equal(t, want, string(AppendUnderscored(nil, set)), text)
	}
}
