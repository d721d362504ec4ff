package exposition // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/exposition"

import (
	"fmt"
	"io"

	"github.com/prometheus/common/model"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
)

// Request is what one scrape asks for.
type Request struct {
	Format Format
	// Escaping is how names that are not legacy names are written.
	Escaping model.EscapingScheme
	Options  Options
	// Parts splits the scrape into parts formatted and encoded on several
	// workers. The zero value writes it as it is, on the calling goroutine:
	// the same walk with one worker and a codec that adds nothing.
	Parts Parts
}

// Write writes the exposition of st as req asks for it. It is the one way
// in: every format is written by the walk over parts (parts.go), with its
// own state in its own type (text.go, openmetrics.go, protobuf.go); the
// protobuf text forms are the delimited protobuf re-encoded by expfmt
// (reencode.go).
func Write(w io.Writer, st *store.Store, req Request) error {
	var f format
	switch req.Format {
	case Text:
		f = textFormat{}
	case OpenMetrics:
		f = openMetrics{}
	case Protobuf:
		f = protobuf{}
	case ProtobufText, ProtobufCompact:
		return writeReencoded(w, st, req)
	default:
		return fmt.Errorf("exposition: no writer for format %d", req.Format)
	}
	parts := req.Parts
	if parts.Codec == nil {
		parts = plainParts
	}
	return writeParts(w, st, req.Options, req.Escaping, f, parts)
}
