package exposition // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/exposition"

import (
	"io"
	"sync"
)

// plainPartLines is the size of a part of a scrape written as it is: its
// bytes are written out a part at a time, and large writes keep syscalls
// and compressor calls few per scrape (the writers' flush size, 1 MiB, was
// chosen by measurement: BENCHMARKS.md, "Design measurements"); at the
// bench workload's shape a part of this many lines is about that size.
const plainPartLines = 8192

// plainParts is how a scrape that is not split is written: the walk over
// parts with one worker, the parts written as they are.
var plainParts = Parts{Codec: plainCodec{}, Workers: 1, PartLines: plainPartLines}

// plainCodec writes the parts as they are: the codec of a scrape that is
// not split (Request.Parts unset).
type plainCodec struct{}

// plainPart is the bytes of one part.
type plainPart struct{ b []byte }

var plainPartPool = sync.Pool{New: func() any { return new(plainPart) }}

func (p *plainPart) Write(b []byte) (int, error) {
	p.b = append(p.b, b...)
	return len(b), nil
}

func (*plainPart) Close() error { return nil }

func (plainCodec) Begin(io.Writer) error { return nil }
func (plainCodec) End(io.Writer) error   { return nil }
func (plainCodec) Part() io.WriteCloser  { return plainPartPool.Get().(*plainPart) }

func (plainCodec) Emit(w io.Writer, enc io.WriteCloser) error {
	p := enc.(*plainPart)
	_, err := w.Write(p.b)
	if cap(p.b) <= keepBuffer {
		p.b = p.b[:0]
		plainPartPool.Put(p)
	}
	return err
}
