// Package exporterbench compares the agentprometheus exporter with contrib's
// prometheusexporter (v0.155.0) in one `go test -bench` run: both are created
// through their public factories, fed identical OTLP batches and scraped over
// loopback HTTP. Every benchmark has the exporter as its first sub-benchmark
// key, so `benchstat -col /exporter` puts the two side by side.
//
// The benchmarks live in the package's test files:
//
//   - BenchmarkScrape: a whole /metrics response in every format a
//     Prometheus server negotiates (text 0.0.4, text with UTF-8 names,
//     OpenMetrics, protobuf; bench/internal/promscrape), uncompressed and
//     gzip, for 10k, 100k and 1M OTLP series.
//   - BenchmarkIngest: ConsumeMetrics for points of existing series and of
//     new series.
//   - BenchmarkRetained: heap held per series once the batches are gone.
//   - BenchmarkChurn: agents leaving and arriving over several expiry
//     periods; heap growth and heap per live series.
//   - BenchmarkSeed: per-series cost of a text scrape for the label shapes
//     of the coder metrics-aggregator seed (4 base labels with 0, 2, 5 or 10
//     extra labels; 2 base with 5 extra).
//
// Environment:
//
//   - BENCH_SIZES: comma-separated sizes for Scrape and Retained, from 10k,
//     100k, 1M (default all three).
//   - BENCH_CONTRIB_1M=0: skip contrib at 1M series (a contrib scrape of 1M
//     series takes tens of seconds and several GiB).
//   - BENCH_GZIP_LEVEL: our exporter's scrape::gzip_level (default 1).
//
// bench/bench.sh runs them all and writes BENCHMARKS.md.
package exporterbench
