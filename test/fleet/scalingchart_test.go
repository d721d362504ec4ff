package fleet

import (
	"encoding/xml"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// scalingChartPoint is one configuration's figures at a replica count.
type scalingChartPoint struct {
	Replicas int
	Copies   float64
	HeapMiB  float64
}

// scalingChartLine is a family of configurations (departure on, or off)
// measured at several replica counts: a line in each panel.
type scalingChartLine struct {
	Label  string
	Color  string
	Marker string // "circle" or "square"
	Points []scalingChartPoint
}

// scalingPanel is one of the chart's two plots.
type scalingPanel struct {
	title, yTitle string
	value         func(scalingChartPoint) float64
	label         func(float64) string
	// reference draws the copies panel's guides: one copy, and every
	// replica holding every agent (copies = replicas).
	reference bool
}

// scalingChart draws copies per series and Go heap per replica against the
// replica count, a line per family, in two panels side by side, in the
// style of bench/cmd/benchreport's chart (hand-written SVG, no library).
func scalingChart(title, subtitle string, lines []scalingChartLine) string {
	const (
		width, height = 980, 500
		panelW        = 380 // plot area of a panel
		top, plotH    = 120, 300
	)
	lefts := [2]int{80, 80 + panelW + 110}
	panels := [2]scalingPanel{
		{title: "Copies per series (lower is better)", yTitle: "copies per series (held ÷ distinct)", reference: true,
			value: func(p scalingChartPoint) float64 { return p.Copies },
			label: func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }},
		{title: "Go heap per replica (lower is better)", yTitle: "heap per replica, MiB (mean)",
			value: func(p scalingChartPoint) float64 { return p.HeapMiB },
			label: func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) + " MiB" }},
	}

	// The replica counts measured, for the x axis shared by both panels.
	minN, maxN := math.MaxInt, 0
	for _, l := range lines {
		for _, p := range l.Points {
			minN, maxN = min(minN, p.Replicas), max(maxN, p.Replicas)
		}
	}
	if maxN == 0 {
		minN, maxN = 2, 5
	}
	x0, x1 := float64(minN)-0.5, float64(maxN)+0.5

	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="13">`+"\n", width, height, width, height)
	w(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	w(`<text x="%d" y="28" font-size="16" font-weight="bold">%s</text>`+"\n", lefts[0], scalingEscape(title))
	if subtitle != "" {
		w(`<text x="%d" y="48" font-size="12" fill="#555">%s</text>`+"\n", lefts[0], scalingEscape(subtitle))
	}
	scalingLegend(&b, lines, float64(lefts[0]), 72)

	for i, pn := range panels {
		left := lefts[i]
		pw, ph := float64(panelW), float64(plotH)
		maxY := 0.0
		for _, l := range lines {
			for _, p := range l.Points {
				maxY = math.Max(maxY, pn.value(p))
			}
		}
		if pn.reference {
			maxY = math.Max(maxY, float64(maxN))
		}
		step := scalingStep(maxY * 1.1 / 5)
		y1 := math.Ceil(maxY*1.1/step) * step
		if y1 <= 0 {
			y1, step = 1, 0.2
		}
		px := func(x float64) float64 { return float64(left) + (x-x0)/(x1-x0)*pw }
		py := func(y float64) float64 { return float64(top) + (1-y/y1)*ph }

		w(`<g class="panel">` + "\n")
		w(`<text x="%d" y="%d" font-size="14" font-weight="bold">%s</text>`+"\n", left, top-12, scalingEscape(pn.title))
		// Grid, ticks and tick labels.
		w(`<g stroke="#ddd" stroke-width="1">` + "\n")
		for n := minN; n <= maxN; n++ {
			w(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d"/>`+"\n", px(float64(n)), top, px(float64(n)), top+plotH)
		}
		for y := 0.0; y <= y1+step/2; y += step {
			w(`<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f"/>`+"\n", left, py(y), float64(left)+pw, py(y))
		}
		w("</g>\n")
		w(`<rect x="%d" y="%d" width="%.0f" height="%.0f" fill="none" stroke="#333"/>`+"\n", left, top, pw, ph)
		for n := minN; n <= maxN; n++ {
			w(`<text x="%.1f" y="%d" text-anchor="middle">%d</text>`+"\n", px(float64(n)), top+plotH+20, n)
		}
		for y := 0.0; y <= y1+step/2; y += step {
			w(`<text x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", left-8, py(y), strconv.FormatFloat(y, 'g', 4, 64))
		}
		w(`<text x="%.1f" y="%d" text-anchor="middle">replicas</text>`+"\n", float64(left)+pw/2, top+plotH+44)
		w(`<text transform="translate(%d %.1f) rotate(-90)" text-anchor="middle">%s</text>`+"\n", left-50, float64(top)+ph/2, scalingEscape(pn.yTitle))

		if pn.reference {
			// Where a replica holds every agent (copies = replicas), and one copy.
			xe := math.Min(x1, y1)
			w(`<line class="reference" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#888" stroke-width="1.5" stroke-dasharray="6 4"/>`+"\n",
				px(x0), py(x0), px(xe), py(xe))
			w(`<line class="reference" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#888" stroke-width="1" stroke-dasharray="2 3"/>`+"\n",
				px(x0), py(1), px(x1), py(1))
		}

		for _, l := range lines {
			ps := slices.Clone(l.Points)
			slices.SortFunc(ps, func(a, b scalingChartPoint) int { return a.Replicas - b.Replicas })
			if len(ps) == 0 {
				continue
			}
			var pts []string
			for _, p := range ps {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(float64(p.Replicas)), py(pn.value(p))))
			}
			w(`<polyline class="line" data-label="%s" fill="none" stroke="%s" stroke-width="2.5" points="%s"/>`+"\n", scalingEscape(l.Label), l.Color, strings.Join(pts, " "))
			for _, p := range ps {
				x, y := px(float64(p.Replicas)), py(pn.value(p))
				scalingMarker(&b, "marker", l.Marker, x, y, l.Color)
				// Value labels above the point when no other line is higher
				// there, else below it: off the other line.
				ly := y - 10
				if scalingBelow(lines, l, p, pn.value) {
					ly = y + 19
				}
				w(`<text x="%.1f" y="%.1f" font-size="11" fill="%s" text-anchor="middle" stroke="white" stroke-width="3" paint-order="stroke">%s</text>`+"\n", x, ly, l.Color, pn.label(pn.value(p)))
			}
		}
		w("</g>\n")
	}
	w("</svg>\n")
	return b.String()
}

// scalingBelow reports whether another line is higher than l at p's
// replica count.
func scalingBelow(lines []scalingChartLine, l scalingChartLine, p scalingChartPoint, value func(scalingChartPoint) float64) bool {
	for _, o := range lines {
		if o.Label == l.Label {
			continue
		}
		for _, q := range o.Points {
			if q.Replicas == p.Replicas && value(q) > value(p) {
				return true
			}
		}
	}
	return false
}

// scalingLegend is a row above the panels: each line, and the copies
// panel's guides.
func scalingLegend(b *strings.Builder, lines []scalingChartLine, x, y float64) {
	for _, l := range lines {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2.5"/>`+"\n", x, y, x+24, y, l.Color)
		scalingMarker(b, "legend-marker", l.Marker, x+12, y, l.Color)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="12" dominant-baseline="middle">%s</text>`+"\n", x+30, y, scalingEscape(l.Label))
		x += 40 + 7*float64(len([]rune(l.Label)))
	}
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#888" stroke-width="1.5" stroke-dasharray="6 4"/>`+"\n", x, y, x+24, y)
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="12" dominant-baseline="middle">every replica holds every agent</text>`+"\n", x+30, y)
	x += 40 + 7*float64(len("every replica holds every agent"))
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#888" stroke-width="1" stroke-dasharray="2 3"/>`+"\n", x, y, x+24, y)
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="12" dominant-baseline="middle">one copy</text>`+"\n", x+30, y)
}

func scalingMarker(b *strings.Builder, class, kind string, x, y float64, color string) {
	if kind == "square" {
		fmt.Fprintf(b, `<rect class="%s" x="%.1f" y="%.1f" width="9" height="9" fill="%s"/>`+"\n", class, x-4.5, y-4.5, color)
		return
	}
	fmt.Fprintf(b, `<circle class="%s" cx="%.1f" cy="%.1f" r="5" fill="%s"/>`+"\n", class, x, y, color)
}

// scalingStep rounds a tick step up to 1, 2 or 5 times a power of ten.
func scalingStep(raw float64) float64 {
	if raw <= 0 || math.IsNaN(raw) || math.IsInf(raw, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

func scalingEscape(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}
