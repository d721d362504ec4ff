package exporterbench

// These imports keep the collector's core modules at versions known to build
// together with contrib's prometheusexporter v0.155.0; without them, module
// resolution is free to move them apart.
import (
	_ "go.opentelemetry.io/collector/config/configoptional"
	_ "go.opentelemetry.io/collector/otelcol"
)
