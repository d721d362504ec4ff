// Package conformance checks that the agentprometheus exporter serves the same
// Prometheus series as contrib's prometheusexporter for the same OTLP input.
//
// Everything lives in the package's tests; run them with
//
//	cd bench && go test ./conformance
package conformance
