#!/usr/bin/env bash
# Benchmarks of the agentprometheus exporter against contrib's
# prometheusexporter, side by side (bench/exporterbench), then BENCHMARKS.md
# and docs/scrape-time.svg.
#
#   bash bench/bench.sh            full run: 10k, 100k, 1M series, -count 6
#                                  (contrib at 1M with -count 1: ~40s and
#                                  several GiB per scrape)
#   QUICK=1 bash bench/bench.sh    10k and 100k only, -count 2
#
# Environment overrides:
#   COUNT             runs per benchmark (default 6, QUICK: 2)
#   BENCHTIME         -benchtime (default 1s)
#   CONTRIB_1M_COUNT  runs of contrib at 1M series (default 1; 0 skips them)
#   BENCH             -bench pattern of the main run (default .)
#   GO                go command (default go)
#
# Output: bench/results/raw.txt (raw go test output), benchstat.txt,
# commands.txt; BENCHMARKS.md and docs/scrape-time.svg at the repository root.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BENCH_DIR="$ROOT/bench"
RESULTS="$BENCH_DIR/results"
TOOLS="$ROOT/.tools"
GO="${GO:-go}"
BENCHSTAT_VERSION="v0.0.0-20260908200009-22c9c6c9d4da"
BENCHSTAT="$TOOLS/benchstat"

QUICK="${QUICK:-0}"
if [[ "$QUICK" == "1" ]]; then
	COUNT="${COUNT:-2}"
	SIZES="10k,100k"
	CONTRIB_1M_COUNT=0
else
	COUNT="${COUNT:-6}"
	SIZES="10k,100k,1M"
	CONTRIB_1M_COUNT="${CONTRIB_1M_COUNT:-1}"
fi
BENCHTIME="${BENCHTIME:-1s}"
PATTERN="${BENCH:-.}"

mkdir -p "$RESULTS" "$TOOLS"

if [[ ! -x "$BENCHSTAT" ]]; then
	echo "installing benchstat $BENCHSTAT_VERSION into $TOOLS"
	(cd "$BENCH_DIR" && GOBIN="$TOOLS" "$GO" install "golang.org/x/perf/cmd/benchstat@$BENCHSTAT_VERSION")
fi

RAW="$RESULTS/raw.txt"
COMMANDS="$RESULTS/commands.txt"
: >"$RAW"
: >"$COMMANDS"

# One test binary for every run.
BIN="$RESULTS/exporterbench.test"
(cd "$BENCH_DIR" && "$GO" test -c -o "$BIN" ./exporterbench)
echo "cd bench && go test -c -o results/exporterbench.test ./exporterbench" >>"$COMMANDS"
trap 'rm -f "$BIN"' EXIT

# run ENV... -- ARGS...: runs the test binary in its package directory,
# appends its output to raw.txt and records the command.
run() {
	local env=()
	while [[ "$1" != "--" ]]; do
		env+=("$1")
		shift
	done
	shift
	local args=(-test.run '^$' -test.benchmem -test.timeout 0 "$@")
	local shown
	shown="cd bench/exporterbench && ${env[*]} ../results/exporterbench.test$(printf ' %q' "${args[@]}")"
	echo "$shown" >>"$COMMANDS"
	echo "+ $shown" >&2
	(cd "$BENCH_DIR/exporterbench" && env "${env[@]}" "$BIN" "${args[@]}") | tee -a "$RAW"
}

# Both exporters must serve the same samples for the workloads, or the
# comparison is meaningless.
(cd "$BENCH_DIR/exporterbench" && "$BIN" -test.run '^TestSameSeries$')
echo "cd bench/exporterbench && ../results/exporterbench.test -test.run '^TestSameSeries\$'" >>"$COMMANDS"

run BENCH_SIZES="$SIZES" BENCH_CONTRIB_1M=0 -- \
	-test.bench "$PATTERN" -test.count "$COUNT" -test.benchtime "$BENCHTIME"

if [[ "$CONTRIB_1M_COUNT" != "0" && "$SIZES" == *1M* && "$PATTERN" == "." ]]; then
	run BENCH_SIZES=1M BENCH_CONTRIB_1M=1 -- \
		-test.bench '^Benchmark(Scrape|Retained)$/^exporter=contrib$/' -test.count "$CONTRIB_1M_COUNT" -test.benchtime "$BENCHTIME"
fi

"$BENCHSTAT" -col /exporter "$RAW" >"$RESULTS/benchstat.txt"
echo "benchstat -col /exporter bench/results/raw.txt > bench/results/benchstat.txt  # golang.org/x/perf/cmd/benchstat@$BENCHSTAT_VERSION" >>"$COMMANDS"
echo
echo "=== benchstat -col /exporter (ours is the baseline) ==="
cat "$RESULTS/benchstat.txt"

# Ingestion while scrapes run: ours only, in-package (the coalescing of
# concurrent scrapes is what is measured).
CONC_RAW="$RESULTS/concurrency-raw.txt"
CONC_ARGS=(-run '^$' -bench '^BenchmarkIngest(DuringScrapes|PauseDuringScrape)$' -benchmem -count "$COUNT" -benchtime 3s)
echo "go test$(printf ' %q' "${CONC_ARGS[@]}") ./exporter/agentprometheusexporter > bench/results/concurrency-raw.txt" >>"$COMMANDS"
(cd "$ROOT" && "$GO" test "${CONC_ARGS[@]}" ./exporter/agentprometheusexporter) | tee "$CONC_RAW"
"$BENCHSTAT" "$CONC_RAW" >"$RESULTS/concurrency.txt"
echo "benchstat bench/results/concurrency-raw.txt > bench/results/concurrency.txt" >>"$COMMANDS"

# The cardinality view at 1M series: each page, and ingestion while pages
# are served, next to ingestion during a scrape in the same run. Every run
# loads 1M series; 10 pages or scrapes per run are enough.
CARD_RAW="$RESULTS/cardinality-raw.txt"
CARD_ARGS=(-run '^$' -bench '^Benchmark(Cardinality|IngestPauseDuringScrape)$' -benchmem -count "$COUNT" -benchtime 10x)
echo "go test$(printf ' %q' "${CARD_ARGS[@]}") ./exporter/agentprometheusexporter > bench/results/cardinality-raw.txt" >>"$COMMANDS"
(cd "$ROOT" && "$GO" test "${CARD_ARGS[@]}" ./exporter/agentprometheusexporter) | tee "$CARD_RAW"
"$BENCHSTAT" "$CARD_RAW" >"$RESULTS/cardinality.txt"
echo "benchstat bench/results/cardinality-raw.txt > bench/results/cardinality.txt" >>"$COMMANDS"

# Aggregation: an aggregated point next to a plain one, runs of one binary
# taken in turn (the machine's noise lands on both), named by path for
# benchstat; then the state held per source at 1,000 agents x 1,000 series.
AGG_RAW="$RESULTS/aggregate-raw.txt"
AGG_BIN="$RESULTS/agentprometheus.test"
(cd "$ROOT" && "$GO" test -c -o "$AGG_BIN" ./exporter/agentprometheusexporter)
echo "go test -c -o bench/results/agentprometheus.test ./exporter/agentprometheusexporter" >>"$COMMANDS"
: >"$AGG_RAW"
for _ in $(seq "$((COUNT < 6 ? 6 : COUNT))"); do
	(cd "$ROOT/exporter/agentprometheusexporter" && "$AGG_BIN" -test.run '^$' -test.bench '^BenchmarkIngest(Existing|Aggregated)$' -test.benchmem -test.count 1) |
		sed -e 's|^BenchmarkIngestExisting-|BenchmarkIngest/path=plain-|' -e 's|^BenchmarkIngestAggregated-|BenchmarkIngest/path=aggregated-|' >>"$AGG_RAW"
done
echo "for i in 1..max(COUNT,6): (cd exporter/agentprometheusexporter && ../../bench/results/agentprometheus.test -test.run '^\$' -test.bench '^BenchmarkIngest(Existing|Aggregated)\$' -test.benchmem -test.count 1), renamed path=plain and path=aggregated >> bench/results/aggregate-raw.txt" >>"$COMMANDS"
"$BENCHSTAT" -col /path "$AGG_RAW" >"$RESULTS/aggregate.txt"
echo "benchstat -col /path bench/results/aggregate-raw.txt > bench/results/aggregate.txt" >>"$COMMANDS"
(cd "$ROOT/exporter/agentprometheusexporter" && "$AGG_BIN" -test.run '^$' -test.bench '^BenchmarkAggregateSourceMemory$' -test.benchmem -test.benchtime 1x -test.count 1) | tee "$RESULTS/aggregate-memory.txt"
echo "(cd exporter/agentprometheusexporter && ../../bench/results/agentprometheus.test -test.run '^\$' -test.bench '^BenchmarkAggregateSourceMemory\$' -test.benchmem -test.benchtime 1x) > bench/results/aggregate-memory.txt" >>"$COMMANDS"

echo "cd bench && go run ./cmd/benchreport -raw results/raw.txt -benchstat results/benchstat.txt -commands results/commands.txt -e2e results/e2e.md -design design.md -concurrency results/concurrency.txt -cardinality results/cardinality.txt -aggregate results/aggregate.txt -aggregate-memory results/aggregate-memory.txt -out ../BENCHMARKS.md -svg ../docs/scrape-time.svg" >>"$COMMANDS"
(cd "$BENCH_DIR" && "$GO" run ./cmd/benchreport \
	-raw "$RAW" \
	-benchstat "$RESULTS/benchstat.txt" \
	-commands "$COMMANDS" \
	-e2e "$RESULTS/e2e.md" \
	-design "$BENCH_DIR/design.md" \
	-concurrency "$RESULTS/concurrency.txt" \
	-cardinality "$RESULTS/cardinality.txt" \
	-aggregate "$RESULTS/aggregate.txt" \
	-aggregate-memory "$RESULTS/aggregate-memory.txt" \
	-out "$ROOT/BENCHMARKS.md" \
	-svg "$ROOT/docs/scrape-time.svg")
