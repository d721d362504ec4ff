package scrape

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/exposition"
)

// The formats expfmt's negotiation offers, in its order of preference, without
// and with OpenMetrics; copied once here, not per scrape.
var (
	textFormats        = expfmt.DefaultAcceptedFormats()
	openMetricsFormats = expfmt.DefaultOpenMetricsAcceptedFormats()
)

// Format is what a scrape negotiated: the Content-Type it is answered with,
// the writer and the escaping of names the writer applies.
type Format struct {
	ContentType expfmt.Format
	Exposition  exposition.Format
	Escaping    model.EscapingScheme
}

// Negotiate picks a scrape's format as promhttp does (expfmt's negotiation,
// OpenMetrics only when enabled), with one correction: a protobuf scrape
// takes its name escaping from the rest of the Accept header.
//
// The escaping parameter says which names a scraper can take, and Prometheus
// 3 puts it only on its text formats ("escaping=allow-utf-8"): protobuf
// carries names as plain strings. expfmt reads a missing parameter as
// underscores, so with scrape_native_histograms, which puts protobuf first,
// every UTF-8 name would be escaped (café.orders_total as caf__orders_total)
// and a dashboard would lose its series the day native histograms are turned
// on. A scraper that names an escaping scheme for its other formats gets the
// same scheme in protobuf; one that names none anywhere (Prometheus 2) still
// gets underscores.
func Negotiate(h http.Header, openMetrics bool) Format {
	var ct expfmt.Format
	if openMetrics {
		ct = expfmt.NegotiateAccept(h, openMetricsFormats...)
	} else {
		ct = expfmt.NegotiateAccept(h, textFormats...)
	}
	f := Format{ContentType: ct}
	switch ct.FormatType() {
	case expfmt.TypeOpenMetrics:
		f.Exposition = exposition.OpenMetrics
	case expfmt.TypeProtoDelim:
		f.Exposition = exposition.Protobuf
	case expfmt.TypeProtoText:
		f.Exposition = exposition.ProtobufText
	case expfmt.TypeProtoCompact:
		f.Exposition = exposition.ProtobufCompact
	default:
		f.Exposition = exposition.Text
	}
	switch f.Exposition {
	case exposition.Protobuf, exposition.ProtobufText, exposition.ProtobufCompact:
		if scheme, ok := scraperEscaping(h.Get("Accept")); ok {
			f.ContentType = ct.WithEscapingScheme(scheme)
		}
	}
	f.Escaping = f.ContentType.ToEscapingScheme()
	return f
}

// scraperEscaping is the escaping scheme that the entries of an Accept header
// name, when they agree on one and no protobuf entry names its own (expfmt
// has taken that one already).
func scraperEscaping(accept string) (model.EscapingScheme, bool) {
	var found string
	for entry := range strings.SplitSeq(accept, ",") {
		mediaType, params, _ := strings.Cut(entry, ";")
		for param := range strings.SplitSeq(params, ";") {
			key, value, _ := strings.Cut(param, "=")
			if strings.TrimSpace(key) != model.EscapingKey {
				continue
			}
			value = strings.TrimSpace(value)
			if _, err := model.ToEscapingScheme(value); err != nil {
				continue // expfmt ignores unknown schemes too
			}
			if strings.TrimSpace(mediaType) == expfmt.ProtoType {
				return 0, false
			}
			if found != "" && found != value {
				return 0, false
			}
			found = value
		}
	}
	if found == "" {
		return 0, false
	}
	scheme, _ := model.ToEscapingScheme(found)
	return scheme, true
}

// Encoding is how a scrape's body is compressed.
type Encoding uint8

const (
	EncodingIdentity Encoding = iota
	EncodingGzip
	EncodingZstd
)

// String is the Content-Encoding value; identity has none.
func (c Encoding) String() string {
	switch c {
	case EncodingGzip:
		return "gzip"
	case EncodingZstd:
		return "zstd"
	default:
		return ""
	}
}

// NegotiateEncoding picks the compression of a scrape from its
// Accept-Encoding header, with the offers of client_golang's promhttp
// (gzip and zstd): the coding with the highest q wins, "*" stands for any,
// q=0 refuses. On a tie gzip wins, then zstd; identity only when the scraper
// prefers it outright. Prometheus asks for gzip.
func NegotiateEncoding(acceptEncoding string) Encoding {
	q := [3]float64{-1, -1, -1} // per Encoding; -1 is unnamed
	star := -1.0
	for entry := range strings.SplitSeq(acceptEncoding, ",") {
		coding, params, _ := strings.Cut(entry, ";")
		weight, ok := qValue(params)
		if !ok {
			continue
		}
		switch strings.ToLower(strings.TrimSpace(coding)) {
		case "gzip", "x-gzip":
			q[EncodingGzip] = weight
		case "zstd":
			q[EncodingZstd] = weight
		case "identity":
			q[EncodingIdentity] = weight
		case "*":
			star = weight
		}
	}
	for i := range q {
		if q[i] < 0 {
			q[i] = star
		}
	}
	best, bestQ := EncodingIdentity, 0.0
	for _, c := range []Encoding{EncodingGzip, EncodingZstd} {
		if q[c] > bestQ {
			best, bestQ = c, q[c]
		}
	}
	if q[EncodingIdentity] > bestQ {
		return EncodingIdentity
	}
	return best
}

// qValue reads the q parameter of an Accept-Encoding entry (1 when absent);
// ok is false when it does not parse, and the entry is ignored.
func qValue(params string) (q float64, ok bool) {
	for param := range strings.SplitSeq(params, ";") {
		key, value, _ := strings.Cut(param, "=")
		if strings.TrimSpace(key) != "q" {
			continue
		}
		q, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil || q < 0 || q > 1 {
			return 0, false
		}
		return q, true
	}
	return 1, true
}
