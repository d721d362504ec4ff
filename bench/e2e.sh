#!/usr/bin/env bash
# End-to-end benchmark: the built statsgate distro (agentprometheus exporter)
# against a peer distro with contrib's prometheusexporter v0.155.0
# (bench/peer/builder-config.yaml), black box, over loopback only.
#
# For each size and each exporter it starts a fresh collector on free
# 127.0.0.1 ports, plays the load with bench/cmd/loadgen (A agents × F
# families × S series over OTLP/gRPC), scrapes /metrics over HTTP as each
# Prometheus release asks for it (bench/internal/promscrape: the Accept and
# Accept-Encoding headers of Prometheus 3.16 and 2.42, from their sources),
# checks every response with Prometheus' own parser, stops the collector, and
# finally writes bench/results/e2e.md.
#
#   bash bench/e2e.sh                    # sizes 10k and 100k OTLP series
#   SIZES="10k 100k 1M" bash bench/e2e.sh
#
# Environment:
#   SIZES         sizes to run: 10k, 100k, 1M (A = 10, 100, 1000 agents with
#                 F=10, S=100), or a plain number of agents (default "10k 100k")
#   FAMILIES, SERIES   F and S (default 10 and 100)
#   SCRAPES       scrapes per profile, the median is reported (default 3)
#   PROFILES      ways of asking for a scrape, comma-separated (default all:
#                 text-0.0.4,prom3-text,prom3,prom3-nh,prom2.42; loadgen -help)
#   EXPORTERS     which to run (default "agentprometheus prometheus"); also
#                 contrib-v0.165.1: bench/conformance/contrib (the OTLP receiver and
#                 contrib's prometheusexporter v0.165.1, nothing else), so without
#                 the memory_limiter the others have
#   RUN_TIMEOUT   bound on one loadgen run in seconds (default 300; 1200 for 1M)
#   E2E_TIMEOUT   bound on the whole script in seconds, builds included (default 1800)
#   SKIP_BUILD=1  use the binaries already built
#   RESULTS       output file (default bench/results/e2e.md)
#
# Both exporters keep their default HTTP write_timeout (30 s): a scrape that
# takes longer is cut off, and the table says so. Both have
# enable_open_metrics: true, so that OpenMetrics can be negotiated.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BENCH="$REPO/bench"
GO="${GO:-go}"

SIZES="${SIZES:-10k 100k}"
FAMILIES="${FAMILIES:-10}"
SERIES="${SERIES:-100}"
SCRAPES="${SCRAPES:-3}"
PROFILES="${PROFILES:-}"
EXPORTERS="${EXPORTERS:-agentprometheus prometheus}"
RUN_TIMEOUT="${RUN_TIMEOUT:-300}"
E2E_TIMEOUT="${E2E_TIMEOUT:-1800}"
RESULTS="${RESULTS:-$BENCH/results/e2e.md}"

PEER_BUILDER_VERSION=v0.155.0
PEER_BUILDER="$REPO/.tools/builder-$PEER_BUILDER_VERSION"
OURS_BIN="$REPO/_build/otelcol-statsgate"
PEER_BIN="$BENCH/peer/_build/otelcol-peer"

START_TS=$SECONDS
WORK="$(mktemp -d "${TMPDIR:-/tmp}/statsgate-e2e.XXXXXX")"
COLLECTOR_PID=""
CONTRIB165_BIN="$WORK/contrib-prometheus"
CHILD_PID=""

log() { printf '[e2e %4ds] %s\n' "$((SECONDS - START_TS))" "$*" >&2; }
die() { log "error: $*"; exit 1; }

stop_collector() {
	local pid="$COLLECTOR_PID"
	[[ -n "$pid" ]] || return 0
	COLLECTOR_PID=""
	if kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid" 2>/dev/null || true
		for _ in $(seq 1 100); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "$pid" 2>/dev/null; then
			log "collector $pid did not stop in 10 s, killing it"
			kill -KILL "$pid" 2>/dev/null || true
		fi
	fi
	wait "$pid" 2>/dev/null || true
}

# The original stdout and stderr, for the cleanup: a signal can run the traps
# inside a redirected command (the loadgen run writes into files).
exec 8>&1 9>&2

cleanup() {
	local rc=$?
	exec 1>&8 2>&9
	if [[ -n "$CHILD_PID" ]] && kill -0 "$CHILD_PID" 2>/dev/null; then
		kill -TERM "$CHILD_PID" 2>/dev/null || true
		wait "$CHILD_PID" 2>/dev/null || true
	fi
	stop_collector
	if [[ $rc -ne 0 && -d "$WORK" ]]; then
		log "failed (exit $rc); collector logs were:"
		for f in "$WORK"/*.log; do
			[[ -f "$f" ]] || continue
			echo "--- $f (last 20 lines)" >&2
			tail -n 20 "$f" >&2 || true
		done
	fi
	rm -rf "$WORK"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

remaining() { echo $((E2E_TIMEOUT - (SECONDS - START_TS))); }

check_time() {
	local need="$1" left
	left="$(remaining)"
	((left > need)) || die "out of time: ${left}s left of E2E_TIMEOUT=${E2E_TIMEOUT}s, step needs ${need}s"
}

# bounded [-C DIR] SECS CMD...: runs CMD (in DIR) with a time bound capped by
# what is left of E2E_TIMEOUT. The command runs in the background and the
# shell waits for it, so that a signal reaches the traps at once and the
# cleanup can stop it (CHILD_PID).
bounded() {
	local dir=.
	if [[ "$1" == -C ]]; then
		dir="$2"
		shift 2
	fi
	local secs="$1"
	shift
	local left rc=0
	left="$(remaining)"
	((secs < left)) || secs="$left"
	((secs > 0)) || die "out of time"
	(cd "$dir" && exec timeout --kill-after=10 "$secs" "$@") &
	CHILD_PID=$!
	wait "$CHILD_PID" || rc=$?
	CHILD_PID=""
	return "$rc"
}

# ---------------------------------------------------------------- build
build() {
	if [[ "${SKIP_BUILD:-}" == 1 ]]; then
		[[ -x "$OURS_BIN" ]] || die "SKIP_BUILD=1 but $OURS_BIN is missing"
		[[ " $EXPORTERS " != *" prometheus "* || -x "$PEER_BIN" ]] || die "SKIP_BUILD=1 but $PEER_BIN is missing"
	else
		log "building the statsgate distro (make build)"
		bounded 900 make -C "$REPO" build >"$WORK/build-ours.log" 2>&1 ||
			{ tail -n 40 "$WORK/build-ours.log" >&2; die "make build failed (SKIP_BUILD=1 runs the binaries already built)"; }

		if [[ " $EXPORTERS " == *" prometheus "* ]] && [[ ! -x "$PEER_BIN" || "$BENCH/peer/builder-config.yaml" -nt "$PEER_BIN" ]]; then
			if [[ ! -x "$PEER_BUILDER" ]]; then
				log "installing the collector builder $PEER_BUILDER_VERSION into .tools/"
				local gobin="$WORK/gobin"
				mkdir -p "$gobin" "$REPO/.tools"
				bounded 600 env GOBIN="$gobin" "$GO" install "go.opentelemetry.io/collector/cmd/builder@$PEER_BUILDER_VERSION" ||
					die "cannot install the builder $PEER_BUILDER_VERSION"
				mv "$gobin/builder" "$PEER_BUILDER"
			fi
			log "building the peer distro (contrib prometheusexporter $PEER_BUILDER_VERSION; ~2 min cold)"
			bounded -C "$BENCH/peer" 900 "$PEER_BUILDER" --config builder-config.yaml >"$WORK/build-peer.log" 2>&1 ||
				{ tail -n 40 "$WORK/build-peer.log" >&2; die "peer build failed"; }
			touch "$PEER_BIN"
		fi
	fi
	if [[ " $EXPORTERS " == *" contrib-v0.165.1 "* ]]; then
		log "building bench/conformance/contrib (contrib prometheusexporter v0.165.1)"
		bounded -C "$BENCH/conformance/contrib" 900 "$GO" build -o "$CONTRIB165_BIN" . >"$WORK/build-contrib165.log" 2>&1 ||
			{ tail -n 40 "$WORK/build-contrib165.log" >&2; die "bench/conformance/contrib build failed"; }
	fi
	log "building loadgen"
	bounded -C "$BENCH" 600 "$GO" build -o "$WORK/loadgen" ./cmd/loadgen || die "loadgen build failed"
}

# ---------------------------------------------------------------- configs
# Both: otlp gRPC receiver, a generous memory_limiter, no grpcstats processor,
# the collector's own telemetry off, default HTTP server settings (write_timeout
# 30 s), OpenMetrics on offer. The two exporter blocks ask for the same labels:
# job/instance from the service attributes, plus host_name and cloud_region
# from the resource.
write_config() {
	local exporter="$1" file="$2" grpc_port="$3" metrics_port="$4"
	local exporter_block
	case "$exporter" in
	agentprometheus)
		# max_series raised above the largest load (default 1M) so that no
		# series is refused; contrib has no such cap.
		exporter_block="  agentprometheus:
    endpoint: 127.0.0.1:$metrics_port
    resource_constant_labels:
      included: [host.name, cloud.region]
    without_scope_info: true
    enable_open_metrics: true
    max_series: 2000000"
		;;
	prometheus | contrib-v0.165.1)
		exporter_block="  prometheus:
    endpoint: 127.0.0.1:$metrics_port
    resource_to_telemetry_conversion:
      enabled: true
      exclude_service_attributes: true
    without_scope_info: true
    enable_open_metrics: true"
		;;
	*) die "unknown exporter $exporter" ;;
	esac
	local limiter="processors:
  memory_limiter:
    check_interval: 1s
    limit_mib: 16384
    spike_limit_mib: 2048" pipeline_processors="[memory_limiter]" name="$exporter"
	if [[ "$exporter" == contrib-v0.165.1 ]]; then
		limiter="" pipeline_processors="[]" name=prometheus # its binary has no memory_limiter
	fi
	cat >"$file" <<EOF
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:$grpc_port
$limiter
exporters:
$exporter_block
service:
  pipelines:
    metrics:
      receivers: [otlp]
      processors: $pipeline_processors
      exporters: [$name]
  telemetry:
    metrics:
      level: none
EOF
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# start_collector BIN CONFIG LOG GRPC_PORT METRICS_PORT: sets COLLECTOR_PID.
start_collector() {
	local bin="$1" cfg="$2" logf="$3" grpc_port="$4" metrics_port="$5"
	"$bin" --config "$cfg" >"$logf" 2>&1 &
	COLLECTOR_PID=$!
	for _ in $(seq 1 300); do
		kill -0 "$COLLECTOR_PID" 2>/dev/null || { tail -n 30 "$logf" >&2; die "$(basename "$bin") exited at start"; }
		if port_open "$grpc_port" && port_open "$metrics_port"; then
			return 0
		fi
		sleep 0.1
	done
	tail -n 30 "$logf" >&2
	die "$(basename "$bin") did not listen on $grpc_port/$metrics_port within 30 s"
}

agents_for() {
	case "$1" in
	10k) echo 10 ;;
	100k) echo 100 ;;
	1M | 1m) echo 1000 ;;
	*[!0-9]* | "") die "unknown size '$1' (10k, 100k, 1M or a number of agents)" ;;
	*) echo "$1" ;;
	esac
}

# ---------------------------------------------------------------- main
build
# The source the distro was just built from (read-only git queries).
SOURCE_REV="$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)"
if [[ "$SOURCE_REV" != unknown ]] && ! git -C "$REPO" diff --quiet HEAD -- exporter processor builder-config.yaml go.mod 2>/dev/null; then
	SOURCE_REV="$SOURCE_REV with uncommitted changes"
fi

# The Prometheus module whose parsers loadgen checks the scrapes with.
PARSER_VERSION="$(cd "$BENCH" && "$GO" list -m -f '{{.Version}}' github.com/prometheus/prometheus 2>/dev/null || echo unknown)"

mkdir -p "$(dirname "$RESULTS")"
JSONL="$WORK/results.jsonl"
NOTES="$WORK/notes.md"
: >"$JSONL"
: >"$NOTES"

for size in $SIZES; do
	agents="$(agents_for "$size")"
	run_timeout="$RUN_TIMEOUT"
	((agents < 1000)) || run_timeout="${RUN_TIMEOUT_1M:-1200}"
	for exporter in $EXPORTERS; do
		case "$exporter" in
		agentprometheus) bin="$OURS_BIN" ;;
		prometheus) bin="$PEER_BIN" ;;
		contrib-v0.165.1) bin="$CONTRIB165_BIN" ;;
		*) die "unknown exporter $exporter" ;;
		esac
		check_time 60
		read -r grpc_port metrics_port < <("$WORK/loadgen" -free-ports 2)
		cfg="$WORK/$exporter-$size.yaml"
		logf="$WORK/$exporter-$size.log"
		write_config "$exporter" "$cfg" "$grpc_port" "$metrics_port"
		log "$exporter, $size ($agents agents × $FAMILIES families × $SERIES series): starting $(basename "$bin")"
		start_collector "$bin" "$cfg" "$logf" "$grpc_port" "$metrics_port"

		left="$(remaining)"
		((run_timeout < left - 20)) || run_timeout=$((left - 20))
		((run_timeout > 10)) || die "out of time before $exporter $size"
		rc=0
		bounded $((run_timeout + 30)) "$WORK/loadgen" \
			-name "$exporter" -agents "$agents" -families "$FAMILIES" -series "$SERIES" \
			-otlp "127.0.0.1:$grpc_port" -metrics-url "http://127.0.0.1:$metrics_port/metrics" \
			-scrapes "$SCRAPES" ${PROFILES:+-profiles "$PROFILES"} -timeout "${run_timeout}s" -pid "$COLLECTOR_PID" \
			>"$WORK/out.json" 2>"$WORK/out.txt" || rc=$?
		cat "$WORK/out.txt" >&2
		if [[ -s "$WORK/out.json" ]]; then
			cat "$WORK/out.json" >>"$JSONL"
		else
			log "loadgen gave no summary (exit $rc)"
		fi
		if ! kill -0 "$COLLECTOR_PID" 2>/dev/null; then
			echo "- $exporter, $size: the collector exited during the run (crash or OOM); last log lines: \`$(tail -n 3 "$logf" | tr '\n`|' '  /')\`" >>"$NOTES"
		fi
		stop_collector

		# Errors and warnings from the collector's log (console encoding).
		problems="$(grep -E $'\t(error|warn)\t' "$logf" | grep -v 'Using the 0.0.0.0' | head -n 3 || true)"
		if [[ -n "$problems" ]]; then
			count="$(grep -cE $'\t(error|warn)\t' "$logf" || true)"
			echo "- $exporter, $size: $count error/warn log lines, first: \`$(head -n 1 <<<"$problems" | cut -c1-300 | tr '`|' "'/")\`" >>"$NOTES"
		fi
		if [[ $rc -ne 0 ]]; then
			echo "- $exporter, $size: loadgen exited with $rc: $(tail -n 1 "$WORK/out.txt" | cut -c1-300 | tr '`|' "'/")" >>"$NOTES"
		fi
	done
done

{
	echo "# End-to-end benchmark: agentprometheus vs contrib prometheusexporter"
	echo
	echo "Generated by \`bench/e2e.sh\` on $(date -u +%Y-%m-%d) ($(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $("$GO" env GOVERSION))."
	echo
	echo "- **agentprometheus**: \`_build/otelcol-statsgate\` (builder-config.yaml, source at commit $SOURCE_REV), \`resource_constant_labels: {included: [host.name, cloud.region]}\`, \`without_scope_info: true\`, \`enable_open_metrics: true\`, \`max_series: 2000000\`."
	echo "- **prometheus**: \`bench/peer/_build/otelcol-peer\`, contrib \`prometheusexporter\` v0.155.0 with every collector module at v0.155.0 / v1.61.0 (bench/peer/builder-config.yaml), \`resource_to_telemetry_conversion: {enabled: true, exclude_service_attributes: true}\`, \`without_scope_info: true\`, \`enable_open_metrics: true\`."
	if [[ " $EXPORTERS " == *" contrib-v0.165.1 "* ]]; then
		echo "- **contrib-v0.165.1**: bench/conformance/contrib, contrib \`prometheusexporter\` v0.165.1 (collector v0.165.0 / v1.71.0) with the OTLP receiver and nothing else (no memory_limiter), the exporter block of **prometheus**."
	fi
	echo "- All: otlp gRPC receiver → memory_limiter (16 GiB; not in contrib-v0.165.1) → exporter, a fresh process per run, default HTTP server settings (write_timeout 30 s), loopback only."
	echo "- Load (bench/cmd/loadgen, the workload of bench/internal/workload): $("$WORK/loadgen" -describe -families "$FAMILIES" -series "$SERIES")"
	echo "- Then $SCRAPES rounds of scrapes, each round one scrape per way of asking (*asked as*, below), each read to the end. *Scrape* is the time from the request to the last byte received, as it came over the wire (compressed when served so; decompressing is the scraper's work and is left out); the median of the $SCRAPES and the fastest and slowest. *On the wire* and *decompressed* are the bytes of the last scrape. *Complete*: HTTP 200, read without error, decompresses, parses to its end with the parser Prometheus picks for the served Content-Type (model/textparse of prometheus $PARSER_VERSION, the version bench/go.mod selects), and holds exactly the expected samples (target_info apart, OpenMetrics \`_created\` lines not counted, a protobuf classic histogram counted as its text lines). *contrib/ours* is prometheus' median over agentprometheus' for the same size and way of asking, from this run. *RSS* is VmRSS after the scrapes, peak is VmHWM. The load generator runs on the same 2 cores."
	echo
	"$WORK/loadgen" -table "$JSONL"
	if [[ -s "$NOTES" ]]; then
		echo
		echo "Problems seen:"
		echo
		cat "$NOTES"
	fi
} >"$RESULTS.tmp"
mv "$RESULTS.tmp" "$RESULTS"

log "wrote $RESULTS"
cat "$RESULTS"
