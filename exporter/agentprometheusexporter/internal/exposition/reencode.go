package exposition // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/exposition"

import (
	"bufio"
	"errors"
	"io"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/encoding/protodelim"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
)

// writeReencoded writes the protobuf text forms (ProtobufText,
// ProtobufCompact), which expfmt's negotiation offers and no Prometheus asks
// for: the delimited protobuf, decoded a family at a time and encoded by
// expfmt. A pipe between the two keeps memory to about a family.
func writeReencoded(w io.Writer, st *store.Store, req Request) error {
	to := expfmt.NewFormat(expfmt.TypeProtoText)
	if req.Format == ProtobufCompact {
		to = expfmt.NewFormat(expfmt.TypeProtoCompact)
	}
	enc := expfmt.NewEncoder(w, to.WithEscapingScheme(req.Escaping))
	pr, pw := io.Pipe()
	written := make(chan error, 1)
	go func() {
		err := writeParts(pw, st, req.Options, req.Escaping, protobuf{}, plainParts)
		pw.CloseWithError(err)
		written <- err
	}()
	// protodelim, not expfmt's decoder: that one checks names by the
	// process's validation scheme, and the families hold what the scrape
	// asked for (UTF-8 names, a family that escaped to "").
	in := bufio.NewReader(pr)
	var err error
	for err == nil {
		mf := &dto.MetricFamily{}
		if err = (protodelim.UnmarshalOptions{MaxSize: -1}).UnmarshalFrom(in, mf); err == nil {
			err = enc.Encode(mf)
		}
	}
	pr.CloseWithError(err) // the writer stops at its next write
	if werr := <-written; werr != nil && !errors.Is(werr, io.ErrClosedPipe) {
		return werr
	}
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}
