package fleet

import (
	"encoding/xml"
	"errors"
	"io"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statsgate/statsgate/test/internal/promtest"
)

// The dashboard chart draws a path per series, broken where a value is
// NaN, in well-formed SVG, with each panel's title and its legend.
func TestDashboardChart(t *testing.T) {
	start := time.Unix(1000, 0)
	pts := func(vs ...float64) []promtest.Point {
		out := make([]promtest.Point, len(vs))
		for i, v := range vs {
			out[i] = promtest.Point{T: start.Add(time.Duration(i) * time.Second), V: v}
		}
		return out
	}
	panels := []chartPanel{
		{title: "Memory vs limit", unit: "bytes", lines: []chartLine{
			{label: "RSS replica-1", points: pts(50<<20, 60<<20, 70<<20)},
			{label: "GOMEMLIMIT", points: pts(1638<<20, 1638<<20, 1638<<20)},
		}},
		{title: "Scrape duration by format", unit: "s", lines: []chartLine{
			{label: "p99 text", points: pts(0.002, math.NaN(), 0.004)},
		}},
		{title: "Empty", unit: "short"},
	}
	svg := dashboardChart("title & more", "subtitle", start, start.Add(2*time.Second), panels)
	if out := os.Getenv("STATSGATE_DASHBOARD_CHART_SVG"); out != "" {
		require.NoError(t, os.WriteFile(out, []byte(svg), 0o644))
	}

	var paths []map[string]string
	var texts []string
	d := xml.NewDecoder(strings.NewReader(svg))
	inText := false
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, "well-formed XML")
		switch e := tok.(type) {
		case xml.StartElement:
			inText = e.Name.Local == "text"
			if e.Name.Local == "path" {
				attrs := map[string]string{}
				for _, a := range e.Attr {
					attrs[a.Name.Local] = a.Value
				}
				paths = append(paths, attrs)
			}
		case xml.CharData:
			if inText {
				texts = append(texts, string(e))
			}
		case xml.EndElement:
			inText = false
		}
	}
	require.Len(t, paths, 3, "a path per series")
	assert.Equal(t, "RSS replica-1", paths[0]["data-label"])
	assert.Equal(t, 1, strings.Count(paths[0]["d"], "M"), "one segment without NaN")
	assert.Empty(t, paths[2]["d"], "NaN breaks the line: two points alone")
	assert.Equal(t, 2, strings.Count(svg, "<circle"), "a dot for each point alone")
	for _, want := range []string{"title & more", "Memory vs limit", "Scrape duration by format", "Empty", "GOMEMLIMIT", "p99 text", "2 s"} {
		assert.Contains(t, texts, want)
	}
	assert.Contains(t, strings.Join(texts, "|"), "MiB", "bytes in MiB")
	assert.Contains(t, strings.Join(texts, "|"), " ms", "seconds in ms")
}
