// Package exposition writes the store as a Prometheus exposition.
//
// Write is the one way in (write.go): a Request names the format, the
// escaping scheme, the options and how the scrape is split. Every format is
// written by one walk (parts.go): parts of the store's series, copied out
// (store.Snapshot) and formatted by the writer core (writer.go) on one
// worker, or on several with a codec that encodes each part where it is
// formatted (gzip). Each format keeps its own state in its own type and
// file (text.go, openmetrics.go, protobuf.go, which appends the wire format
// with protowire); names and label sets are rendered for the scrape's
// escaping scheme by names.go and labelset.go. What the formats write of a
// snapshot alike (its created time, a counter's exemplar, a histogram's
// bucket exemplars) is decided by the model's rules (prommodel, rules.go). No client_model
// objects, descriptors or Gather pass per scrape; the protobuf text forms,
// which no Prometheus asks for, are the delimited protobuf re-encoded by
// expfmt (reencode.go).
//
// The writers are tested against client_model families built from the
// store and encoded by expfmt (reference_test.go): test code, with its own
// copy of the rules.
package exposition // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/exposition"
