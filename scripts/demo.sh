#!/usr/bin/env bash
# make demo: the gateway on testdata/gateway.yaml, two demo agents
# (cmd/grpcagent, each with otelgrpc and grpc-go's OpenTelemetry plugin
# registered, so every call is reported twice) and Prometheus scraping the
# gateway, all on this machine until Ctrl-C.
#
#   bash scripts/demo.sh [path to otelcol-statsgate]
#
# Uses the default ports: OTLP 4317/4318, /metrics 9464, health 13133, the
# gateway's own telemetry 8888, Prometheus 9090. Needs Go and prometheus.
set -euo pipefail
# Job control: each process gets its own process group, so Ctrl-C reaches
# only this script, which stops the agents first (they flush their last
# metrics to the still running gateway), then Prometheus and the gateway.
set -m
cd "$(dirname "$0")/.."

distro=${1:-_build/otelcol-statsgate}
[[ -x $distro ]] || { echo "demo: $distro not found; run 'make demo' (it builds it)" >&2; exit 1; }
command -v prometheus >/dev/null || { echo "demo: prometheus not found; run 'make demo' (it installs it)" >&2; exit 1; }

# port_open HOST PORT: something accepts connections there.
port_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

# http_ok HOST PORT PATH: a GET answers 200 (no curl on a bare machine).
http_ok() {
	(
		exec 3<>"/dev/tcp/$1/$2" || exit 1
		printf 'GET %s HTTP/1.0\r\nHost: %s\r\n\r\n' "$3" "$1" >&3
		read -r -t 2 status <&3
		[[ $status == *" 200 "* ]]
	) 2>/dev/null
}

# urlencode STRING: percent-encodes everything but unreserved characters.
urlencode() {
	local s=$1 out='' c i
	for ((i = 0; i < ${#s}; i++)); do
		c=${s:i:1}
		case $c in
		[a-zA-Z0-9.~_-]) out+=$c ;;
		*) printf -v c '%%%02X' "'$c" && out+=$c ;;
		esac
	done
	printf '%s' "$out"
}

for port in 4317 4318 9464 13133 8888 9090; do
	if port_open 127.0.0.1 "$port"; then
		echo "demo: port $port is already in use (another gateway or Prometheus?); stop it first" >&2
		exit 1
	fi
done

work=$(mktemp -d -t statsgate-demo.XXXXXX)
names=()
pids=()

# stop PID...: SIGTERM, up to 15 s to exit, then SIGKILL.
stop() {
	local pid i
	for pid in "$@"; do kill -TERM "$pid" 2>/dev/null || true; done
	for ((i = 0; i < 150; i++)); do
		local alive=0
		for pid in "$@"; do kill -0 "$pid" 2>/dev/null && alive=1; done
		((alive)) || return 0
		sleep 0.1
	done
	for pid in "$@"; do kill -KILL "$pid" 2>/dev/null && echo "demo: killed $pid after 15 s"; done
	return 0
}

stop_all() {
	trap - EXIT INT TERM HUP
	echo
	echo "demo: stopping..."
	# The agents first, so that their last export reaches the gateway; then
	# the others in reverse order of start.
	local i agents=()
	for ((i = 0; i < ${#pids[@]}; i++)); do
		[[ ${names[i]} == agent-* ]] && agents+=("${pids[i]}")
	done
	((${#agents[@]} == 0)) || stop "${agents[@]}"
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
		[[ ${names[i]} == agent-* ]] || stop "${pids[i]}"
	done
	wait 2>/dev/null || true
	rm -rf "$work"
	echo "demo: stopped"
}
trap stop_all EXIT
# Ctrl-C is how the demo is meant to end: not an error.
trap 'exit 0' INT TERM HUP

# run NAME CMD...: starts CMD in the background, output in $work/NAME.log.
run() {
	local name=$1
	shift
	"$@" >"$work/$name.log" 2>&1 &
	names+=("$name")
	pids+=($!)
}

# wait_for WHAT CHECK...: polls CHECK for 60 s.
wait_for() {
	local what=$1 i
	shift
	for ((i = 0; i < 600; i++)); do
		"$@" && return 0
		check_alive
		sleep 0.1
	done
	echo "demo: $what did not come up within 60 s" >&2
	exit 1
}

# check_alive: every process started is still running.
check_alive() {
	local i
	for ((i = 0; i < ${#pids[@]}; i++)); do
		if ! kill -0 "${pids[i]}" 2>/dev/null; then
			echo "demo: ${names[i]} exited; its last output:" >&2
			tail -n 20 "$work/${names[i]}.log" >&2
			exit 1
		fi
	done
}

echo "demo: building the demo agent (cmd/grpcagent)"
go build -o "$work/grpcagent" ./cmd/grpcagent

run gateway "$distro" --config testdata/gateway.yaml
wait_for "the gateway" http_ok 127.0.0.1 13133 /

run prometheus prometheus \
	--config.file=testdata/demo/prometheus.yml \
	--storage.tsdb.path="$work/tsdb" \
	--web.listen-address=127.0.0.1:9090 \
	--enable-feature=native-histograms
wait_for "Prometheus" http_ok 127.0.0.1 9090 /-/ready

# Two agents with different services and call mixes, calling until stopped.
run agent-checkout "$work/grpcagent" --gateway localhost:4317 --service checkout --instance-prefix checkout \
	--rounds 0 --interval 500ms --calls ok=20,not_found=4,unimplemented=1,slow=2 --slow 200ms \
	--flush-timeout 3s --manifest "$work/agent-checkout.json"
run agent-inventory "$work/grpcagent" --gateway localhost:4317 --service inventory --instance-prefix inventory \
	--rounds 0 --interval 1s --calls ok=10,not_found=8,unimplemented=2,slow=1 --slow 80ms \
	--flush-timeout 3s --manifest "$work/agent-inventory.json"

rate='sum by (job, rpc_method, rpc_status_code) (rate(rpc_server_call_duration_seconds_count[1m]))'
p99='histogram_quantile(0.99, sum by (job, rpc_method, le) (rate(rpc_server_call_duration_seconds_bucket[1m])))'
graph="http://localhost:9090/graph?g0.expr=$(urlencode "$rate")&g0.tab=0&g0.range_input=15m"
graph+="&g1.expr=$(urlencode "$p99")&g1.tab=0&g1.range_input=15m"

cat <<EOF

statsgate demo is running. Two agents call their gRPC service continuously;
each call is reported by otelgrpc AND by grpc-go's plugin, and the gateway
keeps one of the two.

  gateway /metrics      http://localhost:9464/metrics
  Prometheus            http://localhost:9090/
  calls/s and p99 latency per method (graphs fill in after ~30 s):
  $graph

  PromQL:
    $rate
    $p99

Logs: $work (removed on exit). Press Ctrl-C to stop everything.
EOF

# wait -n returns when a process exits or a signal arrives; a foreground
# sleep would take Ctrl-C in its own process group instead of this script.
while true; do
	wait -n || true
	check_alive
done
