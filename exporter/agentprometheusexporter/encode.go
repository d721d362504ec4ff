package agentprometheusexporter // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter"

import (
	"io"

	"github.com/prometheus/common/expfmt"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/exposition"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/scrape"
)

// encoder writes the exposition in format, compressed as negotiated. Text
// (every escaping scheme), OpenMetrics 1.0 and delimited protobuf take the
// direct writers; every other format goes through expfmt.
func (e *agentPrometheusExporter) encoder(format expfmt.Format, enc contentEncoding) scrape.Encode {
	write := func(w io.Writer, began int64) error {
		opts := e.expo
		opts.Release = e.scrapers.release(began)
		switch format.FormatType() {
		case expfmt.TypeTextPlain:
			return exposition.WriteText(w, e.store, opts, format.ToEscapingScheme())
		case expfmt.TypeOpenMetrics:
			if format.Version() != expfmt.OpenMetricsVersion_2_0_0 {
				return exposition.WriteOpenMetrics(w, e.store, opts, format.ToEscapingScheme())
			}
		case expfmt.TypeProtoDelim:
			// Names escaped as negotiate settled.
			return exposition.WriteProtobuf(w, e.store, opts, format.ToEscapingScheme())
		}
		var encOpts []expfmt.EncoderOption
		if opts.CreatedSamples {
			encOpts = append(encOpts, expfmt.WithCreatedLines())
		}
		return exposition.WriteEncoded(w, format, e.store, opts, encOpts...)
	}
	return compressed(write, enc)
}
