package promscrape

import (
	"fmt"
	"strings"
	"testing"
)

// prometheus3Accept is scrape/scrape.go acceptHeader() of Prometheus 3.16
// over config/config.go ScrapeProtocolsHeaders, with the escaping scheme
// allow-utf-8: the derivation of the constants, step by step.
func prometheus3Accept(protocols ...string) string {
	headers := map[string]string{
		"PrometheusProto":      "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited",
		"PrometheusText0.0.4":  "text/plain;version=0.0.4",
		"PrometheusText1.0.0":  "text/plain;version=1.0.0",
		"OpenMetricsText0.0.1": "application/openmetrics-text;version=0.0.1",
		"OpenMetricsText1.0.0": "application/openmetrics-text;version=1.0.0",
		"OpenMetricsText2.0.0": "application/openmetrics-text;version=2.0.0",
	}
	var vals []string
	weight := len(headers) + 1
	for _, sp := range protocols {
		val := headers[sp]
		if sp == "PrometheusText1.0.0" || sp == "OpenMetricsText1.0.0" || sp == "OpenMetricsText2.0.0" {
			val += ";escaping=allow-utf-8"
		}
		val += fmt.Sprintf(";q=0.%d", weight)
		vals = append(vals, val)
		weight--
	}
	vals = append(vals, fmt.Sprintf("*/*;q=0.%d", weight))
	return strings.Join(vals, ",")
}

func TestPrometheus3AcceptHeaders(t *testing.T) {
	defaults := []string{"OpenMetricsText1.0.0", "OpenMetricsText0.0.1", "PrometheusText1.0.0", "PrometheusText0.0.4"}
	for name, c := range map[string]struct{ got, want string }{
		"default":                  {Prom3Default, prometheus3Accept(defaults...)},
		"scrape_native_histograms": {Prom3NativeHistograms, prometheus3Accept(append([]string{"PrometheusProto"}, defaults...)...)},
		"text scrape_protocols":    {Prom3Text, prometheus3Accept("PrometheusText1.0.0", "PrometheusText0.0.4")},
	} {
		if c.got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", name, c.got, c.want)
		}
	}
}

func TestProfilesAndFormatsAreNamedOnce(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range Profiles {
		if seen[p.Name] {
			t.Errorf("profile %q twice", p.Name)
		}
		seen[p.Name] = true
		if got, ok := ProfileNamed(p.Name); !ok || got != p {
			t.Errorf("ProfileNamed(%q) = %v, %v", p.Name, got, ok)
		}
	}
	seen = map[string]bool{}
	for _, f := range Formats {
		if seen[f.Name] {
			t.Errorf("format %q twice", f.Name)
		}
		seen[f.Name] = true
	}
}
