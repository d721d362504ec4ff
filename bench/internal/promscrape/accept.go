// Package promscrape is how a Prometheus server asks for a scrape and reads
// the answer: the Accept headers of the Prometheus releases the benchmarks
// play, and a count of the samples of a response with the parser Prometheus
// ingests it with.
package promscrape

// The Accept headers, copied from the Prometheus sources (module
// github.com/prometheus/prometheus, whose v0.3xx.y tags are the 3.xx.y
// releases).
//
// Prometheus 3.16, v0.316.0: scrape/scrape.go acceptHeader() joins the
// headers of a job's scrape_protocols (config/config.go
// ScrapeProtocolsHeaders) with falling weights, starting at
// q=0.<len(ScrapeProtocolsHeaders)+1> = q=0.7, adds
// ";escaping=allow-utf-8" to PrometheusText1.0.0 and OpenMetricsText1.0.0
// (the default metric_name_validation_scheme utf8 escapes nothing,
// config.ToEscapingScheme) and ends with */*. A job's default
// scrape_protocols is config.DefaultScrapeProtocols (OpenMetricsText1.0.0,
// OpenMetricsText0.0.1, PrometheusText1.0.0, PrometheusText0.0.4), or
// config.DefaultProtoFirstScrapeProtocols (PrometheusProto first) with
// scrape_native_histograms: true. acceptEncodingHeader() asks for gzip, as
// enable_compression is true by default (zstd only with a feature flag).
//
// Prometheus 2.42 (Debian 12's), v0.42.0: scrape/scrape.go
// scrapeAcceptHeader, a constant, and "Accept-Encoding: gzip" always.
const (
	// Prom3Default is Prometheus 3.16 with the default scrape_protocols:
	// OpenMetrics first.
	Prom3Default = "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.7," +
		"application/openmetrics-text;version=0.0.1;q=0.6," +
		"text/plain;version=1.0.0;escaping=allow-utf-8;q=0.5," +
		"text/plain;version=0.0.4;q=0.4," +
		"*/*;q=0.3"

	// Prom3NativeHistograms is Prometheus 3.16 with scrape_native_histograms:
	// true (DefaultProtoFirstScrapeProtocols): protobuf first.
	Prom3NativeHistograms = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7," +
		"application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6," +
		"application/openmetrics-text;version=0.0.1;q=0.5," +
		"text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4," +
		"text/plain;version=0.0.4;q=0.3," +
		"*/*;q=0.2"

	// Prom3Text is Prometheus 3.16 with scrape_protocols:
	// [PrometheusText1.0.0, PrometheusText0.0.4]: the text format with UTF-8
	// names. It is also what the default header gets from a target that does
	// not offer OpenMetrics.
	Prom3Text = "text/plain;version=1.0.0;escaping=allow-utf-8;q=0.7," +
		"text/plain;version=0.0.4;q=0.6," +
		"*/*;q=0.5"

	// Prom2 is Prometheus 2.42's scrapeAcceptHeader: OpenMetrics first, no
	// escaping parameter.
	Prom2 = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"

	// Text004 asks for the text format 0.0.4 alone, as Prometheus 2 did
	// before OpenMetrics and as most tools still do.
	Text004 = "text/plain;version=0.0.4"
)

// Profile is one way of asking for a scrape.
type Profile struct {
	Name           string // short name, for flags and tables
	Title          string // who asks this way
	Accept         string
	AcceptEncoding string
}

// Profiles are the scrapes of the end-to-end benchmark, in the order they
// are made: the uncompressed text scrape of earlier runs, then each
// Prometheus as it asks by default or with the settings that change what
// it asks for.
var Profiles = []Profile{
	{"text-0.0.4", "text 0.0.4 alone, uncompressed (the scrape of earlier runs)", Text004, "identity"},
	{"prom3-text", "Prometheus 3.16, `scrape_protocols: [PrometheusText1.0.0, PrometheusText0.0.4]`", Prom3Text, "gzip"},
	{"prom3", "Prometheus 3.16, defaults (OpenMetrics first)", Prom3Default, "gzip"},
	{"prom3-nh", "Prometheus 3.16, `scrape_native_histograms: true` (protobuf first)", Prom3NativeHistograms, "gzip"},
	{"prom2.42", "Prometheus 2.42 (Debian 12), defaults", Prom2, "gzip"},
}

// ProfileNamed returns the profile of that name.
func ProfileNamed(name string) (Profile, bool) {
	for _, p := range Profiles {
		if p.Name == name {
			return p, true
		}
	}
	return Profile{}, false
}

// Format is one exposition format as Prometheus negotiates it, for the
// in-process benchmarks: each is asked for with the header under which
// Prometheus gets it, and must be served with MediaType.
type Format struct {
	Name      string
	Accept    string
	MediaType string
}

// Formats are every format a Prometheus server negotiates.
var Formats = []Format{
	{"text", Text004, "text/plain"},
	{"text-utf8", Prom3Text, "text/plain"},
	{"openmetrics", Prom3Default, "application/openmetrics-text"},
	{"protobuf", Prom3NativeHistograms, "application/vnd.google.protobuf"},
}
