package exposition // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/exposition"

import (
	"strconv"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/prommodel"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/promtext"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
)

// openMetrics writes every family in OpenMetrics 1.0 (and 0.0.1, which
// expfmt writes alike), names escaped by the scrape's scheme.
//
// It writes what expfmt's OpenMetrics encoder writes for the same families
// (MetricFamilyToOpenMetrics after
// model.EscapeMetricFamily, then # EOF): a counter's family named without
// _total (TYPE unknown for a counter without it), HELP escaped as a quoted
// string, no UNIT (the families carry no Prometheus unit), values and
// bounds as OpenMetrics floats, counts as integers, timestamps in seconds.
// Exemplars follow a counter's sample (its latest exemplar) and the bucket
// each exemplar of a classic histogram falls in, as expfmt places them; one without labels is not written. A native histogram has no
// buckets in this format: its +Inf bucket, sum and count are written, as
// expfmt writes the same family. _created samples are written when
// Options.CreatedSamples is set, for the series with a created time.
type openMetrics struct{}

// openMetricsState is what the writer keeps for OpenMetrics between lines.
type openMetricsState struct {
	// the last timestamps rendered, in the unit they come in: the series of
	// a batch share their timestamp and often their start time, and a
	// shortest float rendering costs more than the rest of a line.
	stampMs, createdNs     int64
	stampText, createdText []byte
	// bucketExemplar holds, per bucket of the current histogram, the index
	// of the exemplar it carries, -1 for none (prommodel.BucketExemplars).
	bucketExemplar []int
}

func (openMetrics) begin(t *writer, help string) {
	t.headerLine("HELP", &t.names.family)
	t.buf = append(t.buf, ' ')
	t.buf = promtext.AppendEscaped(t.buf, help)
	t.buf = append(t.buf, '\n')
	t.headerLine("TYPE", &t.names.family)
	typ := t.kind.String()
	if t.kind == prommodel.KindCounter && !t.names.total {
		typ = "unknown" // OpenMetrics' counters end in _total
	}
	t.buf = append(t.buf, ' ')
	t.buf = append(t.buf, typ...)
	t.buf = append(t.buf, '\n')
}

func (openMetrics) series(t *writer, s *store.Snapshot) {
	om := &t.om
	t.stamp = t.stamp[:0]
	if t.stamped(s) {
		if ms := s.Timestamp / 1e6; ms != om.stampMs || len(om.stampText) == 0 {
			om.stampMs = ms
			om.stampText = promtext.AppendOpenMetricsFloat(om.stampText[:0], float64(ms)/1000)
		}
		t.stamp = append(append(t.stamp, ' '), om.stampText...)
	}
	n := &t.names
	switch t.kind {
	case prommodel.KindCounter:
		t.sample(&n.sample)
		t.omFloat(s.Value)
		if e := counterExemplar(s); e != nil {
			t.omExemplar(e)
		}
		t.buf = append(t.buf, '\n')
		t.omCreated(s)
	case prommodel.KindHistogram:
		t.omHistogram(s)
	case prommodel.KindSummary:
		t.setPrefix(&n.sample)
		for i, q := range s.Quantiles {
			t.buf = append(t.buf, t.prefix...)
			t.buf = append(t.buf, `quantile="`...)
			t.buf = promtext.OpenMetricsFromText(t.buf, t.quantile(i, q.Quantile))
			t.buf = append(t.buf, `"}`...)
			t.omFloat(q.Value)
			t.buf = append(t.buf, '\n')
		}
		t.omSumCount(s)
	default:
		t.sample(&n.sample)
		t.omFloat(s.Value)
		t.buf = append(t.buf, '\n')
	}
}

func (openMetrics) end(*writer)     {}
func (openMetrics) close(t *writer) { t.buf = append(t.buf, "# EOF\n"...) }

func (t *writer) omHistogram(s *store.Snapshot) {
	n := &t.names
	var bounds []float64
	if s.Bounds != nil {
		bounds = s.Bounds.Values
	}
	ex := bucketExemplars(t.om.bucketExemplar, s)
	t.om.bucketExemplar = ex
	t.setPrefix(&n.bucket)
	for i, c := range s.Cumulative {
		t.buf = append(t.buf, t.prefix...)
		t.buf = append(t.buf, `le="`...)
		t.buf = promtext.OpenMetricsFromText(t.buf, s.Bounds.Text[i])
		t.buf = append(t.buf, `"}`...)
		t.omUint(c)
		if len(ex) > 0 && ex[i] >= 0 {
			t.omExemplar(&s.Exemplars[ex[i]])
		}
		t.buf = append(t.buf, '\n')
	}
	t.buf = append(t.buf, t.prefix...)
	t.buf = append(t.buf, `le="+Inf"}`...)
	t.omUint(s.Count)
	if len(ex) > 0 && ex[len(bounds)] >= 0 {
		t.omExemplar(&s.Exemplars[ex[len(bounds)]])
	}
	t.buf = append(t.buf, '\n')
	t.omSumCount(s)
}

// omSumCount writes the _sum, _count and _created samples of a histogram
// or summary.
func (t *writer) omSumCount(s *store.Snapshot) {
	t.sample(&t.names.sum)
	t.omFloat(s.Value)
	t.buf = append(t.buf, '\n')
	t.sample(&t.names.count)
	t.omUint(s.Count)
	t.buf = append(t.buf, '\n')
	t.omCreated(s)
}

// omFloat appends a value and the timestamp; the caller ends the line.
func (t *writer) omFloat(v float64) {
	t.buf = append(t.buf, ' ')
	t.buf = promtext.AppendOpenMetricsFloat(t.buf, v)
	t.buf = append(t.buf, t.stamp...)
}

// omUint appends a count and the timestamp; the caller ends the line.
func (t *writer) omUint(v uint64) {
	t.buf = append(t.buf, ' ')
	t.buf = strconv.AppendUint(t.buf, v, 10)
	t.buf = append(t.buf, t.stamp...)
}

// omExemplar appends ` # {labels} value timestamp`, nothing for an exemplar
// without labels.
func (t *writer) omExemplar(e *store.Exemplar) {
	if e.Labels.Empty() {
		return
	}
	t.buf = append(t.buf, " # {"...)
	t.buf = t.sets.appendExemplar(t.buf, e.Labels)
	t.buf = append(t.buf, "} "...)
	t.buf = promtext.AppendOpenMetricsFloat(t.buf, e.Value)
	if e.Timestamp != 0 {
		t.buf = append(t.buf, ' ')
		t.buf = promtext.AppendOpenMetricsFloat(t.buf, float64(e.Timestamp)/1e9)
	}
}

// omCreated writes the _created sample of a counter, histogram or summary
// when they are asked for and the series has a created time
// (prommodel.Created).
func (t *writer) omCreated(s *store.Snapshot) {
	created, ok := createdOf(s)
	if !t.opts.CreatedSamples || !ok {
		return
	}
	om := &t.om
	if created != om.createdNs || len(om.createdText) == 0 {
		om.createdNs = created
		om.createdText = promtext.AppendOpenMetricsFloat(om.createdText[:0], float64(created)/1e9)
	}
	t.sample(&t.names.created)
	t.buf = append(t.buf, ' ')
	t.buf = append(t.buf, om.createdText...)
	t.buf = append(t.buf, '\n')
}
