package storetest

import (
	"bytes"
	"fmt"
	"io"

	"github.com/prometheus/common/model"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/exposition"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
)

// PartSplits are the ways the tests split a scrape by parts: a part per
// series line on more workers than cores, parts of a few lines, and as
// shipped.
var PartSplits = []struct{ Workers, Lines int }{{4, 1}, {3, 5}, {1, 7}, {2, 4096}}

// PlainParts is an exposition.Codec that writes the parts as they are: a
// scrape by parts must write the bytes of a sequential one.
type PlainParts struct{}

type plainPart struct{ bytes.Buffer }

func (*plainPart) Close() error { return nil }

func (PlainParts) Begin(io.Writer) error { return nil }
func (PlainParts) Part() io.WriteCloser  { return new(plainPart) }
func (PlainParts) End(io.Writer) error   { return nil }
func (PlainParts) Emit(w io.Writer, p io.WriteCloser) error {
	_, err := w.Write(p.(*plainPart).Bytes())
	return err
}

// CompareParts checks that each format that is written by parts (text,
// OpenMetrics, protobuf) writes by parts, split every PartSplits way with
// the codec codec gives for the format, what a scrape that is not split
// writes, once decode has undone the codec.
func CompareParts(st *store.Store, opts exposition.Options, scheme model.EscapingScheme,
	codec func(format string) exposition.Codec, decode func([]byte) ([]byte, error)) error {
	for _, f := range []exposition.Format{exposition.Text, exposition.OpenMetrics, exposition.Protobuf} {
		req := exposition.Request{Format: f, Escaping: scheme, Options: opts}
		var want bytes.Buffer
		if err := exposition.Write(&want, st, req); err != nil {
			return err
		}
		for _, split := range PartSplits {
			var got bytes.Buffer
			req.Parts = exposition.Parts{Codec: codec(f.String()), Workers: split.Workers, PartLines: split.Lines}
			if err := exposition.Write(&got, st, req); err != nil {
				return err
			}
			body, err := decode(got.Bytes())
			if err != nil {
				return fmt.Errorf("%s by parts %+v: %w", f, split, err)
			}
			if !bytes.Equal(body, want.Bytes()) {
				return fmt.Errorf("%s by parts %+v: bytes differ\n%s", f, split, FirstDifference(body, want.Bytes()))
			}
		}
	}
	return nil
}

// Plain is the codec and decoding of PlainParts, for CompareParts.
func Plain(string) exposition.Codec         { return PlainParts{} }
func Undecoded(body []byte) ([]byte, error) { return body, nil }
