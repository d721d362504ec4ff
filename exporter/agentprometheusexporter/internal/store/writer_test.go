package store

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/prommodel"
)

func TestWriterFindsSeriesByPositionAndLabels(t *testing.T) {
	st := New(10, 10, prommodel.Claims{})
	res := st.Resource([]byte("j\xffi"), 0)
	var w Writer
	put := func(now int64, labels ...string) []*Series {
		require.True(t, st.Write(&w, "m", prommodel.KindGauge, "", "", res, now))
		defer w.Close()
		var out []*Series
		for _, l := range labels {
			if l == "" {
				w.Skip()
				out = append(out, nil)
				continue
			}
			s, _ := w.Put(parsed(t, l))
			out = append(out, s)
		}
		return out
	}
	first := put(1, `k="a"`, `k="b"`)
	again := put(2, `k="a"`, `k="b"`)
	assert.Equal(t, first, again, "the same shape finds the same series")
	// A batch of another shape must not take a hinted series with other labels.
	swapped := put(3, `k="b"`, `k="a"`)
	assert.Same(t, first[1], swapped[0])
	assert.Same(t, first[0], swapped[1])
	// A skipped point keeps the positions after it aligned.
	skipped := put(4, "", `k="a"`)
	assert.Same(t, first[0], skipped[1])

	require.True(t, st.Write(&w, "m", prommodel.KindGauge, "", "", res, 5))
	w.Skip()
	assert.True(t, w.Delete(parsed(t, `k="a"`)))
	w.Close()
	recreated := put(6, `k="b"`, `k="a"`)
	assert.NotSame(t, first[0], recreated[1], "a deleted series is not reused from the hints")
	assert.Equal(t, `k="a"`, recreated[1].Labels.Text())
}

func TestWriterRefusesClashesAndSkipsSweptFamilies(t *testing.T) {
	st := New(2, 2, prommodel.Claims{})
	res := st.Resource([]byte("j\xffi"), 0)
	var w Writer
	require.True(t, st.Write(&w, "m", prommodel.KindGauge, "", "", res, 1))
	old := w.Family()
	_, out := w.Put(parsed(t, `k="a"`))
	assert.Equal(t, Created, out)
	w.Close()
	assert.False(t, st.Write(&w, "m", prommodel.KindCounter, "", "", res, 1), "another type")

	st.Sweep(2) // m is emptied and removed; a writer must get a new family
	require.True(t, st.Write(&w, "m", prommodel.KindGauge, "", "", res, 3))
	assert.NotSame(t, old, w.Family())
	_, out = w.Put(parsed(t, `k="a"`))
	assert.Equal(t, Created, out)
	_, out = w.Put(parsed(t, `k="b"`))
	assert.Equal(t, Created, out)
	_, out = w.Put(parsed(t, `k="c"`))
	assert.Equal(t, RefusedMaxSeries, out)
	w.Close()
}

// A set is one series however its values are kept: shared or not, under
// one set of names or another of the same names.
func TestSharedValuesAreTheSameSeries(t *testing.T) {
	st := New(10, 10, prommodel.Claims{})
	res := st.Resource([]byte("j\xffi"), 0)
	names := []string{"a", "b", "c", "d"}
	sharedBD := NewSharedLabelNames(names, 0b1010)
	shared := string(AppendValue(AppendValue(nil, "2"), "4"))
	own := AppendValue(AppendValue(nil, "1"), "3")
	plain := &Labels{Names: NewLabelNames(names), Own: AppendValue(AppendValue(AppendValue(AppendValue(nil, "1"), "2"), "3"), "4")}
	split := &Labels{Names: sharedBD, Shared: &shared, Own: own}
	otherCopy := shared
	again := &Labels{Names: sharedBD, Shared: &otherCopy, Own: own}

	assert.Equal(t, plain.hash(), split.hash(), "the hash is of the values in name order")
	var w Writer
	require.True(t, st.Write(&w, "m", prommodel.KindGauge, "", "", res, 1))
	s, out := w.Put(split)
	require.Equal(t, Created, out)
	w.Skip() // no position hint for the next two
	byPlain, out := w.Put(plain)
	assert.Equal(t, Updated, out)
	assert.Same(t, s, byPlain)
	w.Close()
	require.True(t, st.Write(&w, "m", prommodel.KindGauge, "", "", res, 2))
	w.Skip()
	w.Skip()
	w.Skip()
	byCopy, out := w.Put(again)
	assert.Equal(t, Updated, out)
	assert.Same(t, s, byCopy)
	w.Close()

	assert.Equal(t, `a="1",b="2",c="3",d="4"`, s.Labels.Text())
	var pairs []string
	for name, value := range s.Labels.All() {
		pairs = append(pairs, name+"="+value)
	}
	assert.Equal(t, []string{"a=1", "b=2", "c=3", "d=4"}, pairs)
	assert.Zero(t, CompareSets(s.Labels, NewLabelSet(plain.Names, plain.Own)))
	require.True(t, st.Write(&w, "m", prommodel.KindGauge, "", "", res, 3))
	assert.True(t, w.Delete(plain), "deleted by the same labels kept otherwise")
	w.Close()
}
