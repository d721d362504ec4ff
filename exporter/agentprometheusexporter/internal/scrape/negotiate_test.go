package scrape

import (
	"net/http"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/exposition"
)

// Accept headers of real Prometheus servers, as they sent them to a target.
const (
	// Prometheus 3.16, default scrape config.
	acceptPrometheus3 = "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.7," +
		"application/openmetrics-text;version=0.0.1;q=0.6,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.5," +
		"text/plain;version=0.0.4;q=0.4,*/*;q=0.3"
	// Prometheus 3.16 with scrape_native_histograms: true.
	acceptPrometheus3Native = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7," +
		"application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,application/openmetrics-text;version=0.0.1;q=0.5," +
		"text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2"
	// Prometheus 3.16 with scrape_native_histograms: true and
	// metric_name_escaping_scheme: underscores.
	acceptPrometheus3NativeUnderscores = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7," +
		"application/openmetrics-text;version=1.0.0;escaping=underscores;q=0.6,application/openmetrics-text;version=0.0.1;q=0.5," +
		"text/plain;version=1.0.0;escaping=underscores;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2"
	// Prometheus 2.42 (Debian) with --enable-feature=native-histograms.
	acceptPrometheus2Native = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited," +
		"application/openmetrics-text;version=1.0.0;q=0.8,application/openmetrics-text;version=0.0.1;q=0.75," +
		"text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
)

func TestNegotiate(t *testing.T) {
	const (
		protobuf    = "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited"
		openMetrics = "application/openmetrics-text; version=1.0.0; charset=utf-8"
		text        = "text/plain; version=0.0.4; charset=utf-8"
	)
	for _, tc := range []struct {
		name        string
		accept      string
		openMetrics bool
		want        expfmt.Format
	}{
		{"Prometheus 3 with native histograms gets UTF-8 names in protobuf", acceptPrometheus3Native, false,
			protobuf + "; escaping=allow-utf-8"},
		{"Prometheus 3 with native histograms and OpenMetrics enabled still prefers protobuf", acceptPrometheus3Native, true,
			protobuf + "; escaping=allow-utf-8"},
		{"Prometheus 3 escaping names with underscores gets them so in protobuf", acceptPrometheus3NativeUnderscores, false,
			protobuf + "; escaping=underscores"},
		{"Prometheus 2 with native histograms gets underscores in protobuf", acceptPrometheus2Native, false,
			protobuf + "; escaping=underscores"},
		{"Prometheus 3 gets OpenMetrics when enabled", acceptPrometheus3, true,
			openMetrics + "; escaping=allow-utf-8"},
		// expfmt has no text 1.0.0: the 0.0.4 entry matches, and takes the
		// escaping of the 1.0.0 entry before it (Prometheus 3 parses either).
		{"Prometheus 3 gets text otherwise", acceptPrometheus3, false,
			text + "; escaping=allow-utf-8"},
		{"a protobuf entry's own escaping wins",
			"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;escaping=underscores;q=0.7," +
				"text/plain;version=1.0.0;escaping=allow-utf-8;q=0.5", false,
			protobuf + "; escaping=underscores"},
		{"entries that disagree leave expfmt's default",
			"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7," +
				"application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,text/plain;version=1.0.0;escaping=dots;q=0.5", false,
			protobuf + "; escaping=underscores"},
		{"an unknown scheme is ignored",
			"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7," +
				"text/plain;version=1.0.0;escaping=bogus;q=0.5,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4", false,
			protobuf + "; escaping=allow-utf-8"},
		{"no Accept header", "", false, text + "; escaping=underscores"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			if tc.accept != "" {
				h.Set("Accept", tc.accept)
			}
			f := Negotiate(h, tc.openMetrics)
			assert.Equal(t, tc.want, f.ContentType)
			assert.Equal(t, tc.want.ToEscapingScheme(), f.Escaping)
		})
	}
}

func TestNegotiateChoosesTheWriter(t *testing.T) {
	for accept, want := range map[string]exposition.Format{
		"":                             exposition.Text,
		"text/plain;version=0.0.4":     exposition.Text,
		"application/openmetrics-text": exposition.OpenMetrics,
		acceptPrometheus3:              exposition.OpenMetrics,
		acceptPrometheus3Native:        exposition.Protobuf,
		"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=text":         exposition.ProtobufText,
		"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=compact-text": exposition.ProtobufCompact,
	} {
		h := http.Header{}
		if accept != "" {
			h.Set("Accept", accept)
		}
		assert.Equal(t, want, Negotiate(h, true).Exposition, "Accept: %q", accept)
	}
	h := http.Header{"Accept": []string{"application/openmetrics-text"}}
	assert.Equal(t, exposition.Text, Negotiate(h, false).Exposition, "OpenMetrics only when enabled")
}
