package fleet

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/statsgate/statsgate/test/internal/promtest"
)

// chartLine is one series a panel's query returned.
type chartLine struct {
	label  string
	points []promtest.Point
}

// chartPanel is one panel of the dashboard with what its queries returned.
type chartPanel struct {
	title, unit string
	lines       []chartLine
}

// dashboardPalette is Grafana's classic palette.
var dashboardPalette = []string{"#7EB26D", "#EAB839", "#6ED0E0", "#EF843C", "#E24D42", "#1F78C1", "#BA43A9", "#705DA0", "#508642", "#CCA300", "#447EBC", "#C15C17"}

// dashboardChart draws the panels two to a row, as the dashboard lays them
// out: a line per series against the time since start, the legend below.
// Hand-written SVG in the style of scalingChart.
func dashboardChart(title, subtitle string, start, end time.Time, panels []chartPanel) string {
	const (
		cols          = 2
		panelW, plotH = 560, 190
		left0, top0   = 80, 80
		gapX          = 110
		legendRows    = 4
		rowH          = plotH + 60 + legendRows*16 + 30
	)
	rows := (len(panels) + cols - 1) / cols
	width := left0 + cols*panelW + (cols-1)*gapX + 40
	height := top0 + rows*rowH
	span := end.Sub(start).Seconds()

	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	w(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	w(`<text x="%d" y="28" font-size="16" font-weight="bold">%s</text>`+"\n", left0, scalingEscape(title))
	w(`<text x="%d" y="48" font-size="12" fill="#555">%s</text>`+"\n", left0, scalingEscape(subtitle))

	for i, p := range panels {
		left := float64(left0 + (i%cols)*(panelW+gapX))
		top := float64(top0 + (i/cols)*rowH + 20)
		pw, ph := float64(panelW), float64(plotH)
		// The axis in the unit's display scale (MiB, ms), for round ticks.
		scale := unitScale(p.unit)
		maxY := 0.0
		for _, l := range p.lines {
			for _, pt := range l.points {
				if !math.IsNaN(pt.V) && !math.IsInf(pt.V, 0) {
					maxY = math.Max(maxY, pt.V/scale)
				}
			}
		}
		step := scalingStep(maxY * 1.1 / 4)
		y1 := math.Ceil(maxY*1.1/step) * step
		if y1 <= 0 {
			y1, step = 1, 0.25
		}
		px := func(t time.Time) float64 { return left + t.Sub(start).Seconds()/span*pw }
		py := func(y float64) float64 { return top + (1-y/y1)*ph }
		pv := func(v float64) float64 { return py(v / scale) }

		w(`<g class="panel">` + "\n")
		w(`<text x="%.0f" y="%.0f" font-size="14" font-weight="bold">%s</text>`+"\n", left, top-10, scalingEscape(p.title))
		w(`<g stroke="#e5e5e5" stroke-width="1">` + "\n")
		for y := 0.0; y <= y1+step/2; y += step {
			w(`<line x1="%.0f" y1="%.1f" x2="%.0f" y2="%.1f"/>`+"\n", left, py(y), left+pw, py(y))
		}
		xStep := scalingStep(span / 6)
		for s := 0.0; s <= span; s += xStep {
			x := left + s/span*pw
			w(`<line x1="%.1f" y1="%.0f" x2="%.1f" y2="%.0f"/>`+"\n", x, top, x, top+ph)
		}
		w("</g>\n")
		w(`<rect x="%.0f" y="%.0f" width="%.0f" height="%.0f" fill="none" stroke="#333"/>`+"\n", left, top, pw, ph)
		for y := 0.0; y <= y1+step/2; y += step {
			w(`<text x="%.0f" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", left-6, py(y), formatUnit(y, p.unit))
		}
		for s := 0.0; s <= span; s += xStep {
			w(`<text x="%.1f" y="%.0f" text-anchor="middle">%s</text>`+"\n", left+s/span*pw, top+ph+16, strconv.FormatFloat(s, 'f', -1, 64)+" s")
		}

		for j, l := range p.lines {
			color := dashboardPalette[j%len(dashboardPalette)]
			// A line through the finite values; NaN (no data) breaks it.
			var segs, dots []string
			var cur []string
			flush := func() {
				switch len(cur) {
				case 0:
					return
				case 1: // a point alone: a dot
					dots = append(dots, cur[0])
				default:
					segs = append(segs, "M"+strings.Join(cur, " L"))
				}
				cur = nil
			}
			for _, pt := range l.points {
				if math.IsNaN(pt.V) || math.IsInf(pt.V, 0) {
					flush()
					continue
				}
				cur = append(cur, fmt.Sprintf("%.1f,%.1f", px(pt.T), pv(pt.V)))
			}
			flush()
			w(`<path class="line" data-label="%s" fill="none" stroke="%s" stroke-width="1.8" d="%s"/>`+"\n", scalingEscape(l.label), color, strings.Join(segs, " "))
			for _, d := range dots {
				x, y, _ := strings.Cut(d, ",")
				w(`<circle cx="%s" cy="%s" r="2" fill="%s"/>`+"\n", x, y, color)
			}
		}
		// The legend: as many entries as fit in its rows, then how many more.
		lx, ly := left, top+ph+36
		shown := 0
		for j, l := range p.lines {
			label := l.label
			wLabel := 30 + 6.5*float64(len([]rune(label)))
			if lx+wLabel > left+pw {
				lx, ly = left, ly+16
			}
			if ly > top+ph+36+float64(legendRows-1)*16 {
				w(`<text x="%.0f" y="%.0f" fill="#555">… and %d more</text>`+"\n", left+pw-90, top+ph+36+float64(legendRows-1)*16, len(p.lines)-shown)
				break
			}
			color := dashboardPalette[j%len(dashboardPalette)]
			w(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="3"/>`+"\n", lx, ly-4, lx+16, ly-4, color)
			w(`<text x="%.1f" y="%.1f" font-size="11">%s</text>`+"\n", lx+20, ly, scalingEscape(label))
			lx += wLabel
			shown++
		}
		w("</g>\n")
	}
	w("</svg>\n")
	return b.String()
}

// unitScale is the display scale of a Grafana unit: bytes in MiB,
// seconds in ms.
func unitScale(unit string) float64 {
	switch unit {
	case "bytes":
		return 1 << 20
	case "s":
		return 1e-3
	}
	return 1
}

// formatUnit renders an axis value, in the unit's display scale: MiB, ms,
// other numbers with k and M.
func formatUnit(v float64, unit string) string {
	g := func(x float64) string { return strconv.FormatFloat(x, 'g', 4, 64) }
	switch unit {
	case "bytes":
		return g(v) + " MiB"
	case "s":
		return g(v) + " ms"
	}
	switch {
	case v >= 1e6:
		return g(v/1e6) + "M"
	case v >= 1e3:
		return g(v/1e3) + "k"
	}
	return g(v)
}
