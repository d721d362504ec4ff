package agentprometheusexporter // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter"

import (
	"io"

	"github.com/prometheus/common/expfmt"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/exposition"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/scrape"
)

// encoder writes the exposition in format, compressed as negotiated. Text
// 0.0.4 with legacy names takes the direct writer; every other format goes
// through expfmt.
func (e *agentPrometheusExporter) encoder(format expfmt.Format, enc contentEncoding) scrape.Encode {
	write := func(w io.Writer, began int64) error {
		opts := e.expo
		opts.Release = e.scrapers.release(began)
		if format.FormatType() == expfmt.TypeTextPlain && !e.cfg.TranslationStrategy.utf8Allowed() {
			return exposition.WriteText(w, e.store, opts)
		}
		if format.FormatType() == expfmt.TypeProtoDelim {
			// Written directly too, names escaped as negotiate settled.
			return exposition.WriteProtobuf(w, e.store, opts, format.ToEscapingScheme())
		}
		return exposition.WriteEncoded(w, format, e.store, opts, expfmt.WithCreatedLines())
	}
	return compressed(write, enc)
}
