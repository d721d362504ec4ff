//go:generate go tool -modfile=../../internal/tools/go.mod mdatagen metadata.yaml

// Package agentprometheusexporter serves the metrics of many agents on a
// Prometheus /metrics endpoint with bounded memory and cheap scrapes.
package agentprometheusexporter // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter"
