// Package exposition writes the store as a Prometheus exposition.
//
// The text formats, OpenMetrics 1.0 and delimited protobuf are written straight from copies of
// the store's series (store.Snapshot) and their label sets by
// one writer core (writer.go), sequentially or in parts on several cores
// (parts.go); each format is a file that writes its families and series
// with the core's helpers (text.go, openmetrics.go, protobuf.go, which
// appends the wire format with protowire), names and label sets are
// rendered for the scrape's escaping scheme by names.go and labelset.go.
// What the formats write of a snapshot alike (its created time, a
// counter's exemplar, a histogram's bucket exemplars) is decided by
// store.Snapshot's methods. No client_model objects, descriptors or Gather
// pass per scrape.
//
// client_model families and expfmt's encoder (dto.go) serve the formats
// Prometheus never negotiates (OpenMetrics 2.0) and are what the direct
// writers are tested against: they write what expfmt writes for the same
// families.
package exposition // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/exposition"
