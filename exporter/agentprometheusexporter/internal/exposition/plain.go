package exposition // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/exposition"

import (
	"io"
	"sync"
)

// plainPartLines is the size of a part of a scrape that is not split: its
// series are copied out of the store a part at a time, each part's into
// the writer's scratch. Parts of 256 and 1,024 lines were slower over HTTP
// than 8,192, and 32,768 no slower than the sequential writer
// (bench/exporterbench BenchmarkScrape, identity, 100k series).
const plainPartLines = 32768

// plainParts is how a scrape that is not split is written: the walk over
// parts with one worker, the parts written as they are.
var plainParts = Parts{Codec: plainCodec{}, Workers: 1, PartLines: plainPartLines}

// plainCodec writes the parts as they are: the codec of a scrape that is
// not split (Request.Parts unset). With one worker, each part is emitted
// as soon as it is formatted, so a part goes straight to the scrape's
// writer (directPart, through a writer that flushes at flushAt), as a
// sequential writer would write it; only what must wait is kept in a
// plainPart: a delimited protobuf family cut across parts, whose length
// goes first (partRun.emit).
type plainCodec struct{}

// plainPart is the bytes of a part that waits.
type plainPart struct{ b []byte }

var plainPartPool = sync.Pool{New: func() any { return new(plainPart) }}

func (p *plainPart) Write(b []byte) (int, error) {
	p.b = append(p.b, b...)
	return len(b), nil
}

func (*plainPart) Close() error { return nil }

// directPart is a part written straight to the scrape's writer.
type directPart struct{ w io.Writer }

func (d *directPart) Write(b []byte) (int, error) { return d.w.Write(b) }
func (*directPart) Close() error                  { return nil }

func (plainCodec) Begin(io.Writer) error { return nil }
func (plainCodec) End(io.Writer) error   { return nil }
func (plainCodec) Part() io.WriteCloser  { return plainPartPool.Get().(*plainPart) }

func (plainCodec) Emit(w io.Writer, enc io.WriteCloser) error {
	p, ok := enc.(*plainPart)
	if !ok {
		return nil // a *directPart: written already
	}
	_, err := w.Write(p.b)
	if cap(p.b) <= keepBuffer {
		p.b = p.b[:0]
		plainPartPool.Put(p)
	}
	return err
}
