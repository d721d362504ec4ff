#!/usr/bin/env bash
# Regenerates testdata/fixtures by running every fixture generator variant.
# Usage: generate.sh [variant ...]   (default: all variants)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="$(cd "${here}/../fixtures" && pwd)"

all=(
	otelgrpc_v0.64_legacy
	otelgrpc_v0.65_unitbug
	otelgrpc_v0.66
	otelgrpc_v0.72
	otelgrpc_v0.72_dup
	otelgrpc_v0.72_old
	grpc_native
	otelgrpc_and_grpc_native
	opencensus
	grpc_prometheus
	otelconnect_v0.9
	otelconnect_v0.12
)

if [[ $# -gt 0 ]]; then
	variants=("$@")
else
	variants=("${all[@]}")
fi

for v in "${variants[@]}"; do
	if [[ ! -f "${here}/${v}/go.mod" ]]; then
		echo "unknown variant: ${v}" >&2
		exit 2
	fi
	echo ">> ${v}"
	(cd "${here}/${v}" && go run . -out "${out}")
done
