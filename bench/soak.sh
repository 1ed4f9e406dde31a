#!/usr/bin/env bash
# The soak on its own: RSS with 256 open streams, then SOAK_CLIENTS streaming clients for the given time with
# RSS and open fds of `switchyard serve` sampled every 10 s (first / last / max in the table).
#   bench/soak.sh BUILD_DIR [SECONDS (default 600)] [CLIENTS (default 256)] [run.sh options...]
set -euo pipefail
[ $# -ge 1 ] || { sed -n '2,4p' "$0" >&2; exit 2; }
build="$1"; shift
seconds="${1:-600}"; [ $# -gt 0 ] && shift
clients="${1:-256}"; [ $# -gt 0 ] && shift
exec "$(dirname "$0")/run.sh" "$build" --only rss,soak --soak-seconds "$seconds" --soak-clients "$clients" "$@"
