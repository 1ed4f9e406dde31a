#!/usr/bin/env bash
# Switchyard soak run (issue 10 point 6): 256 concurrent client streams against `switchyard serve` and the fake
# upstream for N minutes, with random client hang-ups and planted upstream faults (500, drop_mid, stall_mid,
# 429); RSS and open fds of serve sampled every 10 s; then every error must be a planted one, every request id
# must have its request-log row, every turn must be settled exactly once, and RSS/fds must not grow (last
# quarter against the first, and RSS last quarter against the third: the steady state). Builds nothing. Usage:
#   bench/soak.sh BUILD_DIR [--minutes N] [--streams N] [--cancel-rate X] [--fault-rate X] [--seed N]
# (or SWITCHYARD_BUILD_DIR=BUILD_DIR). Needs: cmake --build BUILD --target switchyard fake_upstream sy-soak
# Prints the numbers as JSON on stdout (progress on stderr) and exits 0 when every check holds.
set -euo pipefail

BUILD="${SWITCHYARD_BUILD_DIR:-}"
ARGS=()
while [ $# -gt 0 ]; do
    case "$1" in
        -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
        --minutes|--streams|--cancel-rate|--fault-rate|--seed|--sample-s|--max-rss-growth|--max-fd-growth)
            ARGS+=("$1" "$2"); shift 2 ;;
        -*) echo "soak.sh: unknown option $1" >&2; exit 2 ;;
        *) BUILD="$1"; shift ;;
    esac
done
[ -n "$BUILD" ] || { echo "soak.sh: give the build dir (argument or SWITCHYARD_BUILD_DIR)" >&2; exit 2; }
BUILD="$(cd "$BUILD" && pwd)"
SOAK="$BUILD/tests/support/sy-soak"
export SWITCHYARD_BIN="$BUILD/app/switchyard"
export SWITCHYARD_FAKE_UPSTREAM="$BUILD/tests/support/fake_upstream"
for f in "$SOAK" "$SWITCHYARD_BIN" "$SWITCHYARD_FAKE_UPSTREAM"; do
    [ -x "$f" ] || { echo "soak.sh: $f is missing; build with: cmake --build $BUILD --target switchyard fake_upstream sy-soak" >&2; exit 2; }
done
# 256 client sockets, as many upstream ones, plus the database: more than the usual 1024 fds.
ulimit -n 65536 2>/dev/null || ulimit -n 8192 2>/dev/null || true
export QT_QPA_PLATFORM=offscreen LANG=C.UTF-8
echo "soak.sh: load average at start: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores" >&2
status=0
"$SOAK" "${ARGS[@]}" || status=$?
echo "soak.sh: load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
exit "$status"
