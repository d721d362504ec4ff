package agentprometheusexporter // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter"

import "go.opentelemetry.io/collector/featuregate"

// The feature gates of contrib's prometheusexporter (v0.165) and of its
// translator that change what the exporter serves, under contrib's IDs,
// stages and meanings, so that a contrib command line (--feature-gates)
// works here unchanged.
var (
	disableResourceToTelemetryConversionGate = sharedGate("exporter.prometheus.DisableResourceToTelemetryConversion",
		featuregate.StageAlpha, "v0.160.0",
		"When enabled, the deprecated resource_to_telemetry_conversion section is refused; resource_constant_labels must be used instead",
		"https://github.com/open-telemetry/opentelemetry-collector-contrib/issues/48861")
	disableAddMetricSuffixesGate = sharedGate("exporter.prometheusexporter.DisableAddMetricSuffixes",
		featuregate.StageBeta, "v0.132.0",
		"When enabled, the deprecated add_metric_suffixes configuration option is ignored and translation_strategy is always used",
		"https://github.com/open-telemetry/opentelemetry-specification/pull/4533")
	keepIdentifyingResourceAttributesGate = sharedGate("pkg.prometheus.KeepIdentifyingResourceAttributes",
		featuregate.StageAlpha, "v0.165.0",
		"Preserve service.name, service.namespace, and service.instance.id as labels on target_info in addition to job and instance.",
		"https://github.com/open-telemetry/opentelemetry-collector-contrib/issues/48890")
)

// sharedGate registers a gate, or takes the one of the same ID that contrib's
// package registered when both are linked into one binary (benchmarks that
// run the two exporters side by side): the gate then means the same for
// both. Go initialises packages in import-path order, so contrib's
// (github.com/open-telemetry/...) registers first and its MustRegister does
// not find ours; that is why this is not mdatagen's generated MustRegister.
func sharedGate(id string, stage featuregate.Stage, from, description, url string) *featuregate.Gate {
	g, err := featuregate.GlobalRegistry().Register(id, stage,
		featuregate.WithRegisterFromVersion(from),
		featuregate.WithRegisterDescription(description),
		featuregate.WithRegisterReferenceURL(url))
	if err == nil {
		return g
	}
	featuregate.GlobalRegistry().VisitAll(func(other *featuregate.Gate) {
		if other.ID() == id {
			g = other
		}
	})
	if g == nil {
		panic(err) // not a duplicate: a malformed registration
	}
	return g
}
