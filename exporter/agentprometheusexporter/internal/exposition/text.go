// Package exposition writes the store as a Prometheus exposition.
//
// Text format 0.0.4 is written directly from the stored, pre-rendered label
// sets: no descriptors, const metrics or Gather pass per scrape. Other formats
// (OpenMetrics, protobuf for native histograms) go through client_model
// families and expfmt's encoders.
package exposition // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/exposition"

import (
	"bufio"
	"math"
	"strconv"
	"strings"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
)

// Options are the scrape settings.
type Options struct {
	SendTimestamps bool
	TargetInfoName string
}

// WriteText writes every family in text format 0.0.4.
//
// It assumes what the store guarantees: names are valid legacy Prometheus
// names, label sets are rendered, escaped and sorted, and no series appears
// twice in a family. It neither sorts nor checks anything.
func WriteText(w *bufio.Writer, st *store.Store, opts Options) error {
	t := textWriter{w: w, opts: opts}
	if infos := st.TargetInfos(); len(infos) > 0 {
		t.header(opts.TargetInfoName, "Target metadata", store.KindGauge)
		for _, labels := range infos {
			t.floatSample(opts.TargetInfoName, labels, "", 1, 0)
		}
	}
	for _, f := range st.Families() {
		t.family(f)
	}
	return w.Flush()
}

type textWriter struct {
	w     *bufio.Writer
	opts  Options
	num   [32]byte // scratch for number formatting
	extra []byte   // scratch for the le or quantile label value
	// the family name with each suffix, built once per family and scrape
	bucket, sum, count string
}

func (t *textWriter) header(name, help string, kind store.Kind) {
	if help != "" {
		t.w.WriteString("# HELP ")
		t.w.WriteString(name)
		t.w.WriteByte(' ')
		writeEscapedHelp(t.w, help)
		t.w.WriteByte('\n')
	}
	t.w.WriteString("# TYPE ")
	t.w.WriteString(name)
	t.w.WriteByte(' ')
	t.w.WriteString(kind.String())
	t.w.WriteByte('\n')
}

func (t *textWriter) family(f *store.Family) {
	if f.Len() == 0 {
		return
	}
	t.header(f.Name, f.Help, f.Kind)
	t.bucket, t.sum, t.count = f.Name+"_bucket", f.Name+"_sum", f.Name+"_count"
	f.Range(func(s *store.Series) {
		ts := s.Timestamp
		switch f.Kind {
		case store.KindHistogram:
			if h := s.Histogram; h != nil {
				for i, c := range h.Cumulative {
					t.extra = append(t.extra[:0], h.Bounds.Text[i]...)
					t.uintSample(t.bucket, s.Labels, "le", c, ts)
				}
			}
			t.extra = append(t.extra[:0], "+Inf"...)
			t.uintSample(t.bucket, s.Labels, "le", s.Count, ts)
			t.floatSample(t.sum, s.Labels, "", s.Value, ts)
			t.uintSample(t.count, s.Labels, "", s.Count, ts)
		case store.KindSummary:
			for _, q := range s.Quantiles {
				t.extra = appendFloat(t.extra[:0], q.Quantile)
				t.floatSample(f.Name, s.Labels, "quantile", q.Value, ts)
			}
			t.floatSample(t.sum, s.Labels, "", s.Value, ts)
			t.uintSample(t.count, s.Labels, "", s.Count, ts)
		default:
			t.floatSample(f.Name, s.Labels, "", s.Value, ts)
		}
	})
}

// open writes the name and the label set, with extraName="t.extra" appended
// when extraName is set; no braces for an empty set.
func (t *textWriter) open(name, labels, extraName string) {
	t.w.WriteString(name)
	if labels == "" && extraName == "" {
		return
	}
	t.w.WriteByte('{')
	t.w.WriteString(labels)
	if extraName != "" {
		if labels != "" {
			t.w.WriteByte(',')
		}
		t.w.WriteString(extraName)
		t.w.WriteString(`="`)
		t.w.Write(t.extra)
		t.w.WriteByte('"')
	}
	t.w.WriteByte('}')
}

func (t *textWriter) floatSample(name, labels, extraName string, v float64, ts int64) {
	t.open(name, labels, extraName)
	t.w.WriteByte(' ')
	t.w.Write(appendFloat(t.num[:0], v))
	t.end(ts)
}

func (t *textWriter) uintSample(name, labels, extraName string, v uint64, ts int64) {
	t.open(name, labels, extraName)
	t.w.WriteByte(' ')
	t.w.Write(strconv.AppendUint(t.num[:0], v, 10))
	t.end(ts)
}

func (t *textWriter) end(ts int64) {
	if t.opts.SendTimestamps && ts != 0 {
		t.w.WriteByte(' ')
		t.w.Write(strconv.AppendInt(t.num[:0], ts/1e6, 10))
	}
	t.w.WriteByte('\n')
}

// appendFloat renders a value as client_golang's text encoder does.
func appendFloat(b []byte, f float64) []byte {
	switch {
	case f == 1:
		return append(b, '1')
	case f == 0:
		return append(b, '0')
	case f == -1:
		return append(b, "-1"...)
	case math.IsNaN(f):
		return append(b, "NaN"...)
	case math.IsInf(f, 1):
		return append(b, "+Inf"...)
	case math.IsInf(f, -1):
		return append(b, "-Inf"...)
	default:
		return strconv.AppendFloat(b, f, 'g', -1, 64)
	}
}

var helpEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`)

func writeEscapedHelp(w *bufio.Writer, help string) {
	if strings.ContainsAny(help, "\\\n") {
		help = helpEscaper.Replace(help)
	}
	w.WriteString(help)
}
