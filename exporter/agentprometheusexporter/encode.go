package agentprometheusexporter // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter"

import (
	"io"
	"runtime"

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
		opts.Release.Horizon = e.store.Horizon()
		switch format.FormatType() {
		case expfmt.TypeTextPlain:
			if enc == encodingGzip {
				return exposition.WriteTextParts(w, e.store, opts, format.ToEscapingScheme(), gzipByParts())
			}
			return exposition.WriteText(w, e.store, opts, format.ToEscapingScheme())
		case expfmt.TypeOpenMetrics:
			if format.Version() != expfmt.OpenMetricsVersion_2_0_0 {
				if enc == encodingGzip {
					return exposition.WriteOpenMetricsParts(w, e.store, opts, format.ToEscapingScheme(), gzipByParts())
				}
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
	if enc == encodingGzip && byParts(format) {
		return write
	}
	return compressed(write, enc)
}

// byParts reports whether a gzip scrape of format is formatted in parts.
func byParts(format expfmt.Format) bool {
	switch format.FormatType() {
	case expfmt.TypeTextPlain:
		return true
	case expfmt.TypeOpenMetrics:
		return format.Version() != expfmt.OpenMetricsVersion_2_0_0
	}
	return false
}

// gzipByParts: a part per worker and core, of about 2048 lines.
func gzipByParts() exposition.Parts {
	return exposition.Parts{Codec: &gzipParts{}, Workers: runtime.GOMAXPROCS(0), PartLines: 4096}
}
