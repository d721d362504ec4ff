package main

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

type point struct{ x, y float64 }

// scrapeChart draws time per text scrape against series count for both
// exporters, on log-log axes.
func scrapeChart(r *results) string {
	series := map[string][]point{}
	for _, rw := range r.rowsOf("Scrape") {
		// Uncompressed text (earlier runs have no encoding key).
		if rw.vals["format"] != "text" || (rw.vals["encoding"] != "" && rw.vals["encoding"] != "identity") {
			continue
		}
		x := seriesCount(rw.vals["series"])
		for _, e := range []string{"ours", "contrib"} {
			if v, n := r.median(rw.id, e, "ns/op"); n > 0 && x > 0 {
				series[e] = append(series[e], point{x, v / 1e9})
			}
		}
	}
	return drawLogLog(series)
}

func drawLogLog(series map[string][]point) string {
	const (
		width, height = 720, 460
		left, right   = 90, 30
		top, bottom   = 50, 70
	)
	pw, ph := float64(width-left-right), float64(height-top-bottom)

	// Decades covering the data.
	minX, maxX, minY, maxY := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, ps := range series {
		for _, p := range ps {
			minX, maxX = math.Min(minX, p.x), math.Max(maxX, p.x)
			minY, maxY = math.Min(minY, p.y), math.Max(maxY, p.y)
		}
	}
	if math.IsInf(minX, 1) {
		minX, maxX, minY, maxY = 1e4, 1e6, 1e-3, 1
	}
	// Some room around the points on x; whole decades on y.
	x0, x1 := math.Log10(minX)-0.15, math.Log10(maxX)+0.15
	y0, y1 := math.Floor(math.Log10(minY)-0.1), math.Ceil(math.Log10(maxY)+0.1)
	px := func(x float64) float64 { return float64(left) + (math.Log10(x)-x0)/(x1-x0)*pw }
	py := func(y float64) float64 { return float64(top) + (1-(math.Log10(y)-y0)/(y1-y0))*ph }

	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="13">`+"\n", width, height, width, height)
	w(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	w(`<text x="%d" y="28" font-size="16" font-weight="bold">Time per /metrics scrape, text format (lower is better)</text>`+"\n", left)

	// Grid, ticks and tick labels.
	w(`<g stroke="#ddd" stroke-width="1">` + "\n")
	for d := math.Floor(x0); d <= x1; d++ {
		for m := 1.0; m < 10; m++ {
			if l := d + math.Log10(m); l < x0 || l > x1 {
				continue
			}
			x := px(m * math.Pow(10, d))
			stroke := ""
			if m != 1 {
				stroke = ` stroke="#f0f0f0"`
			}
			w(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d"%s/>`+"\n", x, top, x, height-bottom, stroke)
		}
	}
	for d := y0; d <= y1; d++ {
		for m := 1.0; m < 10; m++ {
			if d+math.Log10(m) > y1 {
				continue
			}
			y := py(m * math.Pow(10, d))
			stroke := ""
			if m != 1 {
				stroke = ` stroke="#f0f0f0"`
			}
			w(`<line x1="%d" y1="%.1f" x2="%d" y2="%.1f"%s/>`+"\n", left, y, width-right, y, stroke)
		}
	}
	w("</g>\n")
	w(`<rect x="%d" y="%d" width="%.0f" height="%.0f" fill="none" stroke="#333"/>`+"\n", left, top, pw, ph)
	for d := math.Ceil(x0); d <= x1; d++ {
		x := px(math.Pow(10, d))
		w(`<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x, height-bottom+20, countLabel(math.Pow(10, d)))
	}
	for d := y0; d <= y1; d++ {
		y := py(math.Pow(10, d))
		w(`<text x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", left-8, y, tickSeconds(math.Pow(10, d)))
	}
	// Axis titles.
	w(`<text x="%.1f" y="%d" text-anchor="middle">OTLP series held (log scale)</text>`+"\n", float64(left)+pw/2, height-22)
	w(`<text transform="translate(22 %.1f) rotate(-90)" text-anchor="middle">time per scrape (log scale)</text>`+"\n", float64(top)+ph/2)

	// Lines and markers.
	styles := []struct{ name, label, color, marker string }{
		{"ours", "agentprometheus (ours)", "#1f77b4", "circle"},
		{"contrib", "contrib prometheusexporter", "#d62728", "square"},
	}
	for i, s := range styles {
		ps := slices.Clone(series[s.name])
		slices.SortFunc(ps, func(a, b point) int { return int(math.Copysign(1, a.x-b.x)) })
		if len(ps) > 0 {
			var pts []string
			for _, p := range ps {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(p.x), py(p.y)))
			}
			w(`<polyline fill="none" stroke="%s" stroke-width="2.5" points="%s"/>`+"\n", s.color, strings.Join(pts, " "))
			for _, p := range ps {
				marker(&b, s.marker, px(p.x), py(p.y), s.color)
				// Value labels right of the point, or left of it near the right edge.
				x, anchor := px(p.x)+8, "start"
				if px(p.x) > float64(left)+0.85*pw {
					x, anchor = px(p.x)-8, "end"
				}
				w(`<text x="%.1f" y="%.1f" font-size="11" fill="%s" text-anchor="%s">%s</text>`+"\n", x, py(p.y)-8, s.color, anchor, secondsLabel(p.y))
			}
		}
		// Legend, in the plot's top left corner, which the rising lines leave free.
		if i == 0 {
			w(`<rect x="%d" y="%d" width="250" height="%d" fill="white" stroke="#999"/>`+"\n", left+12, top+12, 24*len(styles)+12)
		}
		ly := float64(top) + 30 + float64(i)*24
		lx := float64(left) + 22
		w(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2.5"/>`+"\n", lx, ly, lx+24, ly, s.color)
		marker(&b, s.marker, lx+12, ly, s.color)
		w(`<text x="%.1f" y="%.1f" font-size="12" dominant-baseline="middle">%s</text>`+"\n", lx+30, ly, legendLabel(s.label))
	}
	w("</svg>\n")
	return b.String()
}

func legendLabel(s string) string {
	s = strings.ReplaceAll(s, "&", "&amp;")
	s = strings.ReplaceAll(s, "<", "&lt;")
	return s
}

func marker(b *strings.Builder, kind string, x, y float64, color string) {
	if kind == "square" {
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="9" height="9" fill="%s"/>`+"\n", x-4.5, y-4.5, color)
		return
	}
	fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="5" fill="%s"/>`+"\n", x, y, color)
}

func countLabel(v float64) string {
	g := func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
	switch {
	case v >= 1e6:
		return g(v/1e6) + "M"
	case v >= 1e3:
		return g(v/1e3) + "k"
	}
	return g(v)
}

// tickSeconds labels a decade of seconds: 1 ms, 10 ms, 100 ms, 1 s, ...
func tickSeconds(s float64) string {
	g := func(f float64) string { return strconv.FormatFloat(math.Round(f), 'g', -1, 64) }
	switch {
	case s >= 1:
		return g(s) + " s"
	case s >= 1e-3:
		return g(s*1e3) + " ms"
	case s >= 1e-6:
		return g(s*1e6) + " µs"
	}
	return g(s*1e9) + " ns"
}

func secondsLabel(s float64) string {
	return fmtDuration(s * 1e9)
}
