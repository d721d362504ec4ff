package exposition // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/exposition"

import (
	"io"
	"math"
	"sync"

	"github.com/prometheus/common/model"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/prommodel"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/promtext"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
)

// Options are the scrape settings.
type Options struct {
	SendTimestamps bool
	TargetInfoName string
	// Release says how new runs of deltas are written (store.Series.Shown).
	Release store.Release
	// CreatedSamples adds the _created samples of counters, histograms and
	// summaries to OpenMetrics (client_golang's
	// EnableOpenMetricsTextCreatedSamples); the text format has none.
	CreatedSamples bool
}

// targetInfoHelp is the HELP text of target_info.
const targetInfoHelp = "Target metadata"

// flushAt is how full the buffer of a scrape that is not split gets before
// it is written out: large writes keep syscalls and compressor calls few
// per scrape (BENCHMARKS.md, "Design measurements").
const flushAt = 1 << 20

// partFlushAt is flushAt for the workers of a scrape by parts: their
// output goes to a part's compressor, not a socket, and deflate takes its
// input a block at a time, so a larger buffer is only memory held per
// worker (BenchmarkCompressedScrape, mode=gzip-parts).
const partFlushAt = 64 << 10

// writerPool and partWriterPool recycle the writers and their buffers: a
// scrape of a large store writes hundreds of MB, and fresh buffers per
// scrape would be garbage.
var (
	writerPool     = newWriterPool(flushAt)
	partWriterPool = newWriterPool(partFlushAt)
)

// newWriterPool is a pool of writers that flush at flush; a writer goes
// back to the pool it came from.
func newWriterPool(flush int) *sync.Pool {
	p := &sync.Pool{}
	p.New = func() any { return &writer{buf: newBuffer(flush), flushAt: flush, pool: p} }
	return p
}

// newBuffer is a writer's buffer: room for a quarter more than flush, the
// series that crosses it.
func newBuffer(flush int) []byte { return make([]byte, 0, flush+flush/4) }

// format writes one exposition format with the writer's helpers. The
// writer walks the families that have a series to show: begin once before a
// family's first series, series once per series, end once after its last;
// close once after the last family.
type format interface {
	begin(t *writer, help string)
	series(t *writer, s *store.Snapshot)
	end(t *writer)
	close(t *writer)
}

// sizedFormat is a format that writes a family's length before it
// (delimited protobuf). Its begin and end leave the family in the buffer
// until it is whole (writer.hold). A family whose series a scrape by parts
// formats in more than one part is written without begin and end: each part
// writes its series, and head writes the family's beginning, for series of
// size bytes in all, once they are all formatted (partRun.emit).
type sizedFormat interface {
	format
	head(t *writer, help string, size int)
}

// writer is the core the formats share: it formats the series of a part
// (parts.go), renders the family's names and each series' label set for the
// scrape's escaping scheme, and appends to one buffer.
//
// It assumes what the store guarantees: label sets are rendered, escaped
// and sorted, and no series appears twice in a family. It neither sorts
// series nor checks them.
//
// Lines are appended to one buffer, not written piece by piece to a
// bufio.Writer, whose per-call overhead weighed on the scrape (BENCHMARKS.md,
// "Design measurements").
type writer struct {
	w      io.Writer
	err    error
	opts   Options
	scheme model.EscapingScheme
	format format
	sized  sizedFormat // format, when it is one
	// textual says that the format writes lines: the writer renders the
	// family's names and each series' label set for it.
	textual bool
	isOM    bool // OpenMetrics names its counter families without _total
	buf     []byte
	// skip is how many bytes at the start of buf are not written: room
	// that a family's length did not take (protobuf's end).
	skip int
	// hold keeps the buffer from being written out: a sized format's family
	// is not whole yet.
	hold bool
	// flushAt is flushAt or partFlushAt, that of pool, the writer's own.
	flushAt int
	pool    *sync.Pool
	out     int // bytes written out of buf since the writer was given w

	kind    prommodel.Kind // the current family's type
	famName string         // the current family's name, as stored
	names   familyNames    // the current family's names, rendered for scheme
	sets    labelSets      // the current series' label set, rendered for scheme
	memo    nameMemo       // names escaped for a scheme, kept across scrapes
	stamp   []byte         // the current series' timestamp as its lines end with it, " 1700000000000" or empty
	// prefix is `name{labels,` (or `{"name",labels,`) of the current
	// series' lines that add a label (buckets, quantiles), rendered once per
	// series and name.
	prefix  []byte
	scratch store.SnapshotScratch
	info    store.Snapshot // a target_info series
	// quantiles are, per position in a summary, the last quantile rendered
	// there as text: the series of a family have the same quantiles, and a
	// shortest float rendering costs more than the rest of a line.
	quantiles []renderedFloat

	om openMetricsState
	pb protobufState
}

// to directs the writer's output to w.
func (t *writer) to(w io.Writer) {
	t.w, t.err, t.buf, t.skip, t.hold, t.out = w, nil, t.buf[:0], 0, false, 0
}

func (t *writer) flush() {
	if t.err == nil && len(t.buf) > t.skip {
		_, t.err = t.w.Write(t.buf[t.skip:])
		t.out += len(t.buf) - t.skip
	}
	t.buf, t.skip = t.buf[:0], 0
}

// spill writes the buffer out once it is full and may be written.
func (t *writer) spill() {
	if len(t.buf) >= t.flushAt && !t.hold {
		t.flush()
	}
}

// written is how many bytes the writer has taken since it was given w.
func (t *writer) written() int { return t.out + len(t.buf) - t.skip }

// family begins a family: its names, then the format's beginning.
func (t *writer) family(name, help string, kind prommodel.Kind) {
	t.enter(name, kind)
	t.format.begin(t, help)
}

// enter makes a family the current one, without writing anything.
func (t *writer) enter(name string, kind prommodel.Kind) {
	t.kind, t.famName = kind, name
	if t.textual {
		t.names.render(name, kind, t.scheme, t.isOM, &t.memo)
	}
}

func (t *writer) series(s *store.Snapshot) {
	if t.textual {
		t.sets.series(s.Labels, t.scheme, &t.memo)
	}
	t.format.series(t, s)
}

// stamped reports whether the lines of s carry a timestamp: a held zero
// always does, other series when they have one.
func (t *writer) stamped(s *store.Snapshot) bool {
	return t.opts.SendTimestamps && (s.Held || s.Timestamp != 0)
}

// sample appends the series part of a line without an added label:
// `name{labels}`, `name` for no labels, `{"name",labels}` for a name that
// is not a legacy one.
func (t *writer) sample(n *name) {
	set := t.sets.set
	if n.quoted {
		t.buf = append(t.buf, '{')
		t.buf = append(t.buf, n.text...)
		if set != "" {
			t.buf = append(t.buf, ',')
			t.buf = append(t.buf, set...)
		}
		t.buf = append(t.buf, '}')
		return
	}
	t.buf = append(t.buf, n.text...)
	if set != "" {
		t.buf = append(t.buf, '{')
		t.buf = append(t.buf, set...)
		t.buf = append(t.buf, '}')
	}
}

// setPrefix renders the prefix of the current series' lines that add a
// label to name n: `name{labels,` or `{"name",labels,`.
func (t *writer) setPrefix(n *name) {
	if n.quoted {
		t.prefix = append(append(t.prefix[:0], '{'), n.text...)
		t.prefix = append(t.prefix, ',')
	} else {
		t.prefix = append(append(t.prefix[:0], n.text...), '{')
	}
	if set := t.sets.set; set != "" {
		t.prefix = append(t.prefix, set...)
		t.prefix = append(t.prefix, ',')
	}
}

// headerLine appends `# KEYWORD name` of the family's header lines.
func (t *writer) headerLine(keyword string, n *name) {
	t.buf = append(t.buf, "# "...)
	t.buf = append(t.buf, keyword...)
	t.buf = append(t.buf, ' ')
	t.buf = append(t.buf, n.text...)
}

type renderedFloat struct {
	bits uint64
	text []byte
}

// quantile is promtext.AppendFloat(q) for the quantile at position i of a
// summary, rendered once per position and run of series.
func (t *writer) quantile(i int, q float64) []byte {
	for len(t.quantiles) <= i {
		t.quantiles = append(t.quantiles, renderedFloat{})
	}
	r := &t.quantiles[i]
	if bits := math.Float64bits(q); r.bits != bits || len(r.text) == 0 {
		r.bits, r.text = bits, promtext.AppendFloat(r.text[:0], q)
	}
	return r.text
}
