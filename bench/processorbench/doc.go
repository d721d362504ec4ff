// Package processorbench compares the cost per data point of the grpcstats
// processor with contrib's metricstransformprocessor (v0.164.1) in one
// `go test -bench` run. Both are created through their public factories with
// configurations decoded from maps, as a collector config file would give
// them, and hand their output to a no-op consumer.
//
// The benchmarks live in the package's test files:
//
//   - BenchmarkProcess/case=convert: otelgrpc ≤ v0.64 server durations
//     (rpc.server.duration, ms, integer rpc.grpc.status_code) rewritten
//     into rpc.server.call.duration. Ours with 0, 1, 2 and 5 sinks;
//     metricstransform configured to do as much of the same rewrite as it
//     can. ns/op and allocs/op are per data point.
//   - BenchmarkProcess/case=convert-strcode: the same batch with the status
//     code as a decimal string, the only form metricstransform's
//     value_actions can map.
//   - BenchmarkProcess/case=passthrough: metrics no dialect knows, one point
//     each. ns/op and allocs/op are per metric.
//
// The batches come from internal/grpcstatstest, which the processor's own
// benchmarks use too.
//
// TestSameWork checks once what each processor makes of the batches, so the
// comparison states exactly what metricstransform does and does not do.
//
// Every benchmark has the processor as its last sub-benchmark key, so
// `benchstat -col /proc` puts them side by side.
package processorbench
