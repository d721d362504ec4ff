package exposition // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/exposition"

import (
	"strconv"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/prommodel"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/promtext"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
)

// textFormat writes every family in the text format 0.0.4, names escaped by
// the scrape's scheme. It is also what a scraper that asks for text 1.0.0
// gets: the same lines, where escaping=allow-utf-8 (model.NoEscaping) lets
// names that are not legacy names through, quoted inside the braces.
//
// It writes what expfmt's text encoder writes for the same families:
// MetricFamilyToText after model.EscapeMetricFamily, HELP on every family,
// values and bucket counts as client_golang renders floats, timestamps in
// milliseconds. Exemplars and created timestamps have no place in this
// format.
type textFormat struct{}

func (textFormat) begin(t *writer, help string) {
	t.headerLine("HELP", &t.names.family)
	t.buf = append(t.buf, ' ')
	t.buf = promtext.AppendEscapedHelp(t.buf, help)
	t.buf = append(t.buf, '\n')
	t.headerLine("TYPE", &t.names.family)
	t.buf = append(t.buf, ' ')
	t.buf = append(t.buf, t.kind.String()...)
	t.buf = append(t.buf, '\n')
}

func (textFormat) series(t *writer, s *store.Snapshot) {
	t.stamp = t.stamp[:0]
	if t.stamped(s) {
		t.stamp = append(t.stamp, ' ')
		t.stamp = strconv.AppendInt(t.stamp, s.Timestamp/1e6, 10)
	}
	n := &t.names
	switch t.kind {
	case prommodel.KindHistogram:
		// Bounds are rendered as text once per layout (store.Bounds.Text).
		t.setPrefix(&n.bucket)
		if s.Bounds != nil {
			for i, c := range s.Cumulative {
				t.textLabelled("le", s.Bounds.Text[i], c)
			}
		}
		t.textLabelled("le", "+Inf", s.Count)
		t.sample(&n.sum)
		t.textValue(s.Value)
		t.sample(&n.count)
		t.textCount(s.Count)
	case prommodel.KindSummary:
		t.setPrefix(&n.sample)
		for i, q := range s.Quantiles {
			t.buf = append(t.buf, t.prefix...)
			t.buf = append(t.buf, `quantile="`...)
			t.buf = append(t.buf, t.quantile(i, q.Quantile)...)
			t.buf = append(t.buf, `"}`...)
			t.textValue(q.Value)
		}
		t.sample(&n.sum)
		t.textValue(s.Value)
		t.sample(&n.count)
		t.textCount(s.Count)
	default:
		t.sample(&n.sample)
		t.textValue(s.Value)
	}
}

func (textFormat) end(*writer)   {}
func (textFormat) close(*writer) {}

// textLabelled appends a line with one more label: `prefix` + `le="0.5"} 3`.
func (t *writer) textLabelled(label, value string, count uint64) {
	t.buf = append(t.buf, t.prefix...)
	t.buf = append(t.buf, label...)
	t.buf = append(t.buf, `="`...)
	t.buf = append(t.buf, value...)
	t.buf = append(t.buf, `"}`...)
	t.textCount(count)
}

// textValue ends a line with its value and timestamp.
func (t *writer) textValue(v float64) {
	t.buf = append(t.buf, ' ')
	t.buf = promtext.AppendFloat(t.buf, v)
	t.buf = append(t.buf, t.stamp...)
	t.buf = append(t.buf, '\n')
}

// textCount ends a line with a count, written as a float, and timestamp.
func (t *writer) textCount(c uint64) {
	t.buf = append(t.buf, ' ')
	t.buf = promtext.AppendCount(t.buf, c)
	t.buf = append(t.buf, t.stamp...)
	t.buf = append(t.buf, '\n')
}
