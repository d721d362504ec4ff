package scrape

import (
	"io"
	"runtime"

	"github.com/prometheus/common/expfmt"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/exposition"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
)

// Encoder writes a store's exposition as a scrape asks for it.
type Encoder struct {
	Store *store.Store
	// Options are the scrape settings but Release, which each scrape takes
	// from Scrapers as it begins.
	Options  exposition.Options
	Scrapers *Scrapers
}

// For is the encoding of format, compressed as negotiated. Text (every
// escaping scheme), OpenMetrics 1.0 and delimited protobuf take the direct
// writers; every other format goes through expfmt.
func (x *Encoder) For(format expfmt.Format, enc Encoding) Encode {
	write := func(w io.Writer, began int64) error {
		opts := x.Options
		opts.Release = x.Scrapers.Release(began)
		opts.Release.Horizon = x.Store.Horizon()
		switch format.FormatType() {
		case expfmt.TypeTextPlain:
			if enc == EncodingGzip {
				return exposition.WriteTextParts(w, x.Store, opts, format.ToEscapingScheme(), gzipByParts())
			}
			return exposition.WriteText(w, x.Store, opts, format.ToEscapingScheme())
		case expfmt.TypeOpenMetrics:
			if format.Version() != expfmt.OpenMetricsVersion_2_0_0 {
				if enc == EncodingGzip {
					return exposition.WriteOpenMetricsParts(w, x.Store, opts, format.ToEscapingScheme(), gzipByParts())
				}
				return exposition.WriteOpenMetrics(w, x.Store, opts, format.ToEscapingScheme())
			}
		case expfmt.TypeProtoDelim:
			// Names escaped as negotiate settled.
			return exposition.WriteProtobuf(w, x.Store, opts, format.ToEscapingScheme())
		}
		var encOpts []expfmt.EncoderOption
		if opts.CreatedSamples {
			encOpts = append(encOpts, expfmt.WithCreatedLines())
		}
		return exposition.WriteEncoded(w, format, x.Store, opts, encOpts...)
	}
	if enc == EncodingGzip && byParts(format) {
		return write
	}
	return Compressed(write, enc)
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
