// Package conformance checks that the agentprometheus exporter serves the same
// Prometheus series as contrib's prometheusexporter v0.165.1 for the same OTLP
// input.
//
// Contrib is a black box: the program in contrib/, a module of its own
// pinned to prometheusexporter v0.165.1 with collector core v0.165.0 /
// v1.71.0 (this module and the distribution stay on v0.164.0 / v1.70.0). The
// tests build it once per run and start one process per case, with a
// generated config: the OTLP/HTTP receiver on a free port, the prometheus
// exporter with the case's settings, written as contrib's own YAML keys, on
// another. The batches are sent as OTLP/HTTP protobuf; with the exporter's
// sending_queue off (the harness says so unless a case sets it), the
// receiver answers only after the exporter has taken the batch.
//
// Ours runs in the test process, created through its factory with its config
// decoded from the same settings, because it must be built from the working
// tree with the distribution's collector release. To see the same data as
// contrib's receiver decodes, each batch is encoded to OTLP protobuf and
// decoded again before ConsumeMetrics. Both are scraped over HTTP alike.
//
// Each case is scraped in the text format and in delimited protobuf, and,
// where its settings make them differ, in OpenMetrics and as a Prometheus 3
// server scrapes UTF-8 names (text 1.0.0, and its protobuf Accept header).
// Every scrape is parsed and normalised to the samples a Prometheus server
// would store, with what protobuf adds (created timestamps, native
// histograms, exemplars), and the two are compared. The normaliser drops
// nothing: where ours deliberately differs from contrib (labels with empty
// values left out, _created samples, ...), the case names the difference as
// the exporter's README does, and the difference must show or the case
// fails. The rows of the README's table of bad input are cases
// (badinput_test.go), and TestBadInputRowsAreCases keeps them in step.
//
// Everything lives in the package's tests; run them with
//
//	cd bench && go test ./conformance
package conformance
