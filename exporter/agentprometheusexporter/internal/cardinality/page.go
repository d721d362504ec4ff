package cardinality // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/cardinality"

import (
	_ "embed"
	"html/template"
	"io"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// page.html is the report as a page: server-rendered, with its style and
// a small script that sorts the tables inline, so that it needs nothing
// but this response (no network, no external assets).
//
//go:embed page.html
var pageHTML string

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{
	"num":      formatCount,
	"pct":      formatPercent,
	"bar":      barWidth,
	"heat":     heat,
	"ms":       func(s float64) string { return strconv.FormatFloat(s*1000, 'f', 1, 64) + " ms" },
	"minute":   func(t time.Time) string { return t.Format("15:04") },
	"stamp":    func(t time.Time) string { return t.Format("2006-01-02 15:04:05 MST") },
	"orNone":   orNone,
	"refusals": func(r Refused) int64 { return r.Total() },
	"inc":      func(i int) int { return i + 1 },
	"plural": func(n int, one, many string) string {
		if n == 1 {
			return one
		}
		return many
	},
	"height":   barHeight,
	"times":    formatReduction,
	"grouping": groupingOf,
	"cell": func(n, of int64, class string) activityCell {
		return activityCell{N: n, Ratio: ratio(n, of), Class: class}
	},
}).Parse(pageHTML))

// pageData is what the template reads: the report and links built from
// the request's path.
type pageData struct {
	Report
	path string
	top  int
}

// ResourceURL and FamilyURL link to the report of a resource or a family,
// scrolled to its labels; JSONURL to this report as JSON.
func (p pageData) ResourceURL(ref ResourceRef) string {
	return p.link(url.Values{"job": {ref.Job}, "instance": {ref.Instance}}) + "#selection"
}

func (p pageData) FamilyURL(name string) string {
	return p.link(url.Values{"family": {name}}) + "#selection"
}

func (p pageData) JSONURL() string {
	v := url.Values{"format": {"json"}}
	if s := p.Selection; s != nil && s.Family != nil {
		v.Set("family", s.Family.Name)
	} else if s != nil && s.Resource != nil {
		v.Set("job", s.Resource.Job)
		v.Set("instance", s.Resource.Instance)
	}
	return p.link(v)
}

func (p pageData) link(v url.Values) string {
	if p.top != 0 {
		v.Set("top", strconv.Itoa(p.top))
	}
	return p.path + "?" + v.Encode()
}

// MaxMinute is the largest count of one minute, which the activity bars scale to.
func (p pageData) MaxMinute() int64 {
	var m int64
	for _, c := range p.Activity.Minutes {
		m = max(m, c.Created, c.Expired+c.Ended, c.Refused.Total())
	}
	return m
}

func renderPage(w io.Writer, r Report, path string, requestedTop int) error {
	return pageTemplate.Execute(w, pageData{Report: r, path: path, top: requestedTop})
}

// formatCount writes a count (int or int64) with thin spaces between thousands.
func formatCount(v any) string {
	var n int64
	switch v := v.(type) {
	case int:
		n = int64(v)
	case int64:
		n = v
	}
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteString("\u202f")
		}
		b.WriteRune(c)
	}
	return b.String()
}

func formatPercent(r float64) string {
	switch p := r * 100; {
	case p == 0:
		return "0%"
	case p < 0.1:
		return "<0.1%"
	case p < 10:
		return strconv.FormatFloat(p, 'f', 1, 64) + "%"
	default:
		return strconv.FormatFloat(math.Round(p), 'f', 0, 64) + "%"
	}
}

// barWidth is the CSS width of a bar for a ratio, at least a sliver when
// the ratio is not zero.
func barWidth(r float64) template.CSS {
	p := min(max(r*100, 0), 100)
	if r > 0 {
		p = max(p, 0.5)
	}
	return template.CSS("width:" + strconv.FormatFloat(p, 'f', 1, 64) + "%")
}

// barHeight is the CSS height of a vertical bar for a ratio, nothing for 0.
func barHeight(r float64) template.CSS {
	p := min(max(r*100, 0), 100)
	if r > 0 {
		p = max(p, 5)
	}
	return template.CSS("height:" + strconv.FormatFloat(p, 'f', 1, 64) + "%")
}

// formatReduction writes how many agents' series one served series stands
// for: "120×", "2.5×"; a dash while the rule serves nothing.
func formatReduction(r float64) string {
	switch {
	case r <= 0:
		return "–"
	case r < 10:
		return strconv.FormatFloat(r, 'f', 1, 64) + "×"
	default:
		return formatCount(int64(math.Round(r))) + "×"
	}
}

// grouping is how a rule groups: the keys it keeps (by) or sums away
// (without).
type grouping struct {
	Word string
	Keys []string
}

func groupingOf(a Aggregate) grouping {
	if a.Without != nil {
		return grouping{"without", a.Without}
	}
	return grouping{"by", a.By}
}

// activityCell is one count of the activity table and its bar.
type activityCell struct {
	N     int64
	Ratio float64
	Class string
}

// heat classes a ratio of a limit: near it is warm, at it hot.
func heat(r float64) string {
	switch {
	case r >= 0.9:
		return "hot"
	case r >= 0.7:
		return "warm"
	default:
		return ""
	}
}

// orNone shows an empty job or instance.
func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
