// Command contrib-prometheus is the reference of the conformance test: a
// collector with only the OTLP receiver and contrib's prometheusexporter, at
// the release pinned in this directory's go.mod. The harness builds it once
// per test run and starts one process per case with a generated config.
package main

import (
	"log"

	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/prometheusexporter"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/service/telemetry/otelconftelemetry"
)

func main() {
	settings := otelcol.CollectorSettings{
		BuildInfo: component.BuildInfo{
			Command:     "contrib-prometheus",
			Description: "OTLP receiver and contrib's prometheusexporter, for the conformance test",
			Version:     "conformance",
		},
		Factories: factories,
		// --config files, which the harness writes, and ${env:...} with the
		// default scheme env, as in the builder's distributions.
		ConfigProviderSettings: otelcol.ConfigProviderSettings{
			ResolverSettings: confmap.ResolverSettings{
				ProviderFactories: []confmap.ProviderFactory{fileprovider.NewFactory(), envprovider.NewFactory()},
				DefaultScheme:     "env",
			},
		},
	}
	if err := otelcol.NewCommand(settings).Execute(); err != nil {
		log.Fatal(err)
	}
}

func factories() (otelcol.Factories, error) {
	return otelcol.Factories{
		Receivers: map[component.Type]receiver.Factory{
			otlpreceiver.NewFactory().Type(): otlpreceiver.NewFactory(),
		},
		Exporters: map[component.Type]exporter.Factory{
			prometheusexporter.NewFactory().Type(): prometheusexporter.NewFactory(),
		},
		Telemetry: otelconftelemetry.NewFactory(),
	}, nil
}
