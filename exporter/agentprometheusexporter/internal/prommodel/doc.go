// Package prommodel holds the rules of the Prometheus data model that the
// exporter applies, in one place for the writers (exposition) and the
// store's checks: the kinds of families and the suffixes of their samples
// (kind.go), the names a family takes in each exposition and so claims
// from others (names.go), what a series carries as its created time and
// exemplars (exposed.go), and the underscore rule by which label sets are
// written for scrapers that do not take UTF-8 names (underscore.go).
//
// It depends on no other package of the exporter but promtext (the text
// escaping), so that the store keeps series and nothing about exposition.
package prommodel // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/prommodel"
