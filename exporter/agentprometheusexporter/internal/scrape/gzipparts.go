package scrape

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"io"
	"sync"

	"github.com/klauspost/compress/flate"
)

// gzipParts is the gzip stream of a text, OpenMetrics or protobuf scrape
// formatted in parts (exposition.Codec): each part is deflated with
// klauspost's flate at the configured level (Encoder.GzipLevel) on the
// worker that formats it, ends byte-aligned with a sync flush, and is
// checksummed there; the scrape writes the header, the parts in order, an
// empty final block and the trailer with the parts' checksums combined
// (RFC 1952).
//
// The framing is written here because no library takes deflated parts.
// pgzip, which compresses the blocks a single writer hands it, copies every
// byte into its blocks and then across cores, and its writer leaves a core
// idle whenever it waits for a block: by parts is faster on 2 cores for a
// body about as large (BenchmarkCompressedScrape without HTTP,
// bench/exporterbench BenchmarkScrape over HTTP; figures in BENCHMARKS.md).
// A part's first bytes cannot refer back into the part before it.
//
// Each part is not made a gzip member of its own (RFC 1952 lets a stream be
// several members, which would need no framing code): Go's reader reads on
// across members, but zlib's inflate stops at the end of the first one
// unless its caller starts it again, and a client that does not would read
// the first part as the whole scrape, without an error. One member with
// byte-aligned deflate blocks is read whole by every gzip reader.
type gzipParts struct {
	// level is klauspost flate's compression level, 1 (flate.BestSpeed) to
	// 9 (flate.BestCompression).
	level int
	crc   uint32
	size  uint32 // ISIZE: the length modulo 2^32
}

// gzipHeader: no name, no time, unknown OS, as Go's gzip writers write it;
// XFL (byte 8) is set by level.
var gzipHeader = [10]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255}

func (g *gzipParts) Begin(w io.Writer) error {
	g.crc, g.size = 0, 0
	h := gzipHeader
	switch g.level {
	case flate.BestSpeed:
		h[8] = 4 // fastest
	case flate.BestCompression:
		h[8] = 2 // slowest
	}
	_, err := w.Write(h[:])
	return err
}

func (g *gzipParts) Part() io.WriteCloser {
	p := gzipPartPool.Get().(*gzipPart)
	p.fw = flateWriters[g.level].Get().(*flate.Writer)
	p.fw.Reset(&p.out)
	p.level = g.level
	return p
}

func (g *gzipParts) Emit(w io.Writer, wc io.WriteCloser) error {
	p := wc.(*gzipPart)
	_, err := w.Write(p.out.Bytes())
	g.crc = crc32Combine(g.crc, p.crc, p.n)
	g.size += uint32(p.n)
	p.out.Reset()
	p.crc, p.n = 0, 0
	gzipPartPool.Put(p)
	return err
}

func (g *gzipParts) End(w io.Writer) error {
	// A final empty block of fixed codes (BFINAL 1, BTYPE 01, end of block)
	// after the parts' sync flushes, then CRC-32 and ISIZE.
	var tail [10]byte
	tail[0], tail[1] = 0x03, 0x00
	binary.LittleEndian.PutUint32(tail[2:], g.crc)
	binary.LittleEndian.PutUint32(tail[6:], g.size)
	_, err := w.Write(tail[:])
	return err
}

// gzipPart deflates one part and checksums what it is given. Its deflate
// writer, most of a part's memory, goes back to its pool when the part is
// closed: a protobuf family cut across hundreds of parts keeps them all
// until its length is known, and each should hold only its deflated bytes
// (BENCHMARKS.md, "Design measurements").
type gzipPart struct {
	fw    *flate.Writer // from flateWriters[level] until Close
	level int
	out   bytes.Buffer
	crc   uint32
	n     int64
}

var (
	gzipPartPool = sync.Pool{New: func() any { return new(gzipPart) }}
	// flateWriters keep the deflate writers of each level.
	flateWriters [flate.BestCompression + 1]sync.Pool
)

func init() {
	for level := flate.BestSpeed; level <= flate.BestCompression; level++ {
		flateWriters[level].New = func() any {
			fw, _ := flate.NewWriter(nil, level)
			return fw
		}
	}
}

func (p *gzipPart) Write(b []byte) (int, error) {
	p.crc = crc32.Update(p.crc, crc32.IEEETable, b)
	p.n += int64(len(b))
	return p.fw.Write(b)
}

// Close ends the part with a sync flush, byte-aligned and not final, and
// gives the deflate writer back.
func (p *gzipPart) Close() error {
	err := p.fw.Flush()
	p.fw.Reset(nil)
	flateWriters[p.level].Put(p.fw)
	p.fw = nil
	return err
}
