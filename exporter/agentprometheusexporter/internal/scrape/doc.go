// Package scrape serves /metrics (Handler): it negotiates a scrape's format
// (negotiate.go) and compression (compress.go) once, bounds the scrape in
// time, and serves it from an encoding that concurrent scrapes of the same
// format share (coalesce.go), written by the exposition package's writers
// (encode.go). It knows who scrapes and what each has been shown
// (release.go), which says when a run of deltas has reached every scraper.
package scrape // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/scrape"
