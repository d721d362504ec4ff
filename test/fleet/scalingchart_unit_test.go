package fleet

import (
	"encoding/xml"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scalingSVG is what the chart test reads of the SVG.
type scalingSVG struct {
	root      xml.StartElement
	polylines []map[string]string // attributes
	markers   []map[string]string
	legend    int
	reference int
	texts     []string
}

func parseScalingSVG(t *testing.T, svg string) scalingSVG {
	t.Helper()
	var s scalingSVG
	d := xml.NewDecoder(strings.NewReader(svg))
	var inText bool
	for depth := 0; ; {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			require.Zero(t, depth, "unclosed elements")
			return s
		}
		require.NoError(t, err, "well-formed XML")
		switch e := tok.(type) {
		case xml.StartElement:
			if depth == 0 {
				s.root = e
			}
			depth++
			attrs := map[string]string{}
			for _, a := range e.Attr {
				attrs[a.Name.Local] = a.Value
			}
			switch {
			case e.Name.Local == "polyline":
				s.polylines = append(s.polylines, attrs)
			case attrs["class"] == "marker":
				s.markers = append(s.markers, attrs)
			case attrs["class"] == "legend-marker":
				s.legend++
			case attrs["class"] == "reference":
				s.reference++
			}
			inText = e.Name.Local == "text"
		case xml.EndElement:
			depth--
			inText = false
		case xml.CharData:
			if inText {
				s.texts = append(s.texts, string(e))
			}
		}
	}
}

// polylinePoints parses a polyline's points attribute.
func polylinePoints(t *testing.T, attr string) [][2]float64 {
	t.Helper()
	var out [][2]float64
	for _, p := range strings.Fields(attr) {
		xs, ys, ok := strings.Cut(p, ",")
		require.True(t, ok, p)
		x, err := strconv.ParseFloat(xs, 64)
		require.NoError(t, err)
		y, err := strconv.ParseFloat(ys, 64)
		require.NoError(t, err)
		out = append(out, [2]float64{x, y})
	}
	return out
}

func TestScalingChartDrawsEachLineInBothPanels(t *testing.T) {
	lines := []scalingChartLine{
		{Label: "departure on", Color: "#1f77b4", Marker: "circle", Points: []scalingChartPoint{
			{Replicas: 5, Copies: 1.2, HeapMiB: 20}, {Replicas: 2, Copies: 1.1, HeapMiB: 40}, {Replicas: 3, Copies: 1.15, HeapMiB: 30}}},
		{Label: "departure off", Color: "#d62728", Marker: "square", Points: []scalingChartPoint{
			{Replicas: 2, Copies: 2, HeapMiB: 60}, {Replicas: 3, Copies: 2.9, HeapMiB: 61}, {Replicas: 5, Copies: 4.6, HeapMiB: 62}}},
		{Label: "not measured", Color: "#000", Marker: "circle"},
	}
	s := parseScalingSVG(t, scalingChart("Copies & heap <per replica>", "40 agents", lines))

	assert.Equal(t, "svg", s.root.Name.Local)
	require.Len(t, s.polylines, 4, "a line per measured family in each of the two panels")
	assert.Len(t, s.markers, 12, "a marker per point in each panel")
	assert.Equal(t, 3, s.legend, "a legend entry per family, measured or not")
	assert.Equal(t, 2, s.reference, "the copies panel's guides")
	all := strings.Join(s.texts, "\n")
	for _, want := range []string{"Copies & heap <per replica>", "replicas", "copies per series (held ÷ distinct)", "heap per replica, MiB (mean)",
		"departure on", "departure off", "every replica holds every agent", "1.15", "62.0 MiB"} {
		assert.Contains(t, all, want)
	}

	// Each panel: the off line above the on line's copies, points left to
	// right by replica count, and higher values drawn higher (smaller y).
	for panel := range 2 {
		on, off := polylinePoints(t, s.polylines[2*panel]["points"]), polylinePoints(t, s.polylines[2*panel+1]["points"])
		assert.Equal(t, "departure on", s.polylines[2*panel]["data-label"])
		require.Len(t, on, 3)
		require.Len(t, off, 3)
		for i := 1; i < 3; i++ {
			assert.Greater(t, on[i][0], on[i-1][0], "x rises with the replicas")
			assert.Equal(t, on[i][0], off[i][0], "both lines share the x axis")
		}
		for i := range 3 {
			assert.Less(t, off[i][1], on[i][1], "panel %d point %d: off is higher", panel, i)
		}
	}
	copiesOn := polylinePoints(t, s.polylines[0]["points"])
	assert.Less(t, copiesOn[2][1], copiesOn[1][1], "copies 1.2 at 5 replicas drawn above 1.15 at 3")
	heapOn := polylinePoints(t, s.polylines[2]["points"])
	assert.Greater(t, heapOn[2][1], heapOn[0][1], "heap 20 at 5 replicas drawn below 40 at 2")
}

func TestScalingChartWithoutPoints(t *testing.T) {
	s := parseScalingSVG(t, scalingChart("empty", "", nil))
	assert.Empty(t, s.polylines)
	assert.Empty(t, s.markers)
}

func TestScalingStep(t *testing.T) {
	for raw, want := range map[float64]float64{0.44: 0.5, 1: 1, 1.1: 2, 3: 5, 7: 10, 13: 20, 0: 1} {
		assert.InDelta(t, want, scalingStep(raw), 1e-9, "scalingStep(%v)", raw)
	}
}
