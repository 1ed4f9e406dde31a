#!/usr/bin/env bash
# Instructions per streamed turn of `switchyard serve`, counted by callgrind: a figure of the CPU work a turn
# costs that, unlike times, does not move with the load of a shared machine. For A/B runs of two builds.
#
#   bench/instructions.sh BUILD [SWITCHYARD_BIN...]     (default: BUILD/app/switchyard)
#
# For each binary: a fresh data dir with 3 accounts (as bench/run.sh sets it up), `serve` under
# `valgrind --tool=callgrind --instr-atstart=no`, some unmeasured turns, then instrumentation on, TURNS turns
# one after another from sy-bench-load (one connection, a Codex body of 40 KiB, 50 events of 64 bytes
# 2 ms apart), a dump, and the total instructions (Ir) over the finished turns, per thread and in all.
# Environment: BENCH_TURN_SECONDS (measured seconds, default 30), BENCH_EVENTS, BENCH_DELAY_MS, BENCH_ECHO_BYTES
# (bytes of instructions each response object repeats, default 0; bench/README.md), BENCH_LOG_ROWS (request-log
# rows `sy-bench-db fill` writes into each data dir before serve starts, default 0), BENCH_KEEP=1
# (keep the temp dir: its cg-N.PID.1-TT files are callgrind profiles for callgrind_annotate),
# BENCH_CALLGRIND_ARGS (more callgrind options, e.g. --separate-callers3=malloc to tell malloc's callers apart).
# Nothing here asserts anything; it prints one block per binary and, for two or more, each total as a ratio
# to the first binary's.
set -euo pipefail
BUILD="${1:?usage: bench/instructions.sh BUILD [SWITCHYARD_BIN...]}"
shift
BUILD="$(cd "$BUILD" && pwd)"
BINS=("$@")
[ ${#BINS[@]} -gt 0 ] || BINS=("$BUILD/app/switchyard")
UPSTREAM_BIN="$BUILD/bench/sy-bench-upstream"
LOAD="$BUILD/bench/sy-bench-load"
DBTOOL="$BUILD/bench/sy-bench-db"
for f in "${BINS[@]}" "$UPSTREAM_BIN" "$LOAD" "$DBTOOL"; do
    [ -x "$f" ] || { echo "instructions.sh: $f is missing (cmake --build BUILD --target bench)" >&2; exit 2; }
done
for t in valgrind callgrind_control curl; do
    command -v "$t" >/dev/null || { echo "instructions.sh: $t is needed" >&2; exit 2; }
done
SECONDS_MEASURED="${BENCH_TURN_SECONDS:-30}"
EVENTS="${BENCH_EVENTS:-50}"
DELAY_MS="${BENCH_DELAY_MS:-2}"
ECHO_BYTES="${BENCH_ECHO_BYTES:-0}"
LOG_ROWS="${BENCH_LOG_ROWS:-0}"

WORK="$(mktemp -d /tmp/sy-instr.XXXXXX)"
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if [ -n "${BENCH_KEEP:-}" ]; then echo "kept $WORK" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

"$UPSTREAM_BIN" >"$WORK/upstream.out" 2>"$WORK/upstream.err" &
PIDS+=($!)
for _ in $(seq 1 500); do grep -q "listening on" "$WORK/upstream.out" 2>/dev/null && break; sleep 0.01; done
UP_PORT=$(awk '/listening on/ { print $3 }' "$WORK/upstream.out")
[ -n "$UP_PORT" ] || { echo "instructions.sh: the fake upstream did not start" >&2; exit 1; }
curl -sf -X POST "http://127.0.0.1:$UP_PORT/bench/profile?events=$EVENTS&delta_bytes=64&delay_ms=$DELAY_MS&first_ms=0&echo_bytes=$ECHO_BYTES" \
    >/dev/null
head -c 32 /dev/urandom >"$WORK/secret.key"
chmod 600 "$WORK/secret.key"
echo '{"slots_per_account": 64}' >"$WORK/config.json"
mkdir -p "$WORK/auth"
"$DBTOOL" auth "$WORK/auth" 3

first_total=""
n=0
for SY in "${BINS[@]}"; do
    n=$((n + 1))
    data="$WORK/data-$n"
    port=$(free_port)
    env_args=(env SWITCHYARD_DATA_DIR="$data" SWITCHYARD_CONFIG="$WORK/config.json"
        SWITCHYARD_UPSTREAM_URL="http://127.0.0.1:$UP_PORT/backend-api" SWITCHYARD_AUTH_URL="http://127.0.0.1:9"
        SWITCHYARD_SECRET_BACKEND=database SWITCHYARD_SECRET_KEY_FILE="$WORK/secret.key")
    for i in 1 2 3; do
        "${env_args[@]}" "$SY" accounts import "$WORK/auth/auth-$i.json" --alias "bench$i" >/dev/null
    done
    "$DBTOOL" slots "$data/switchyard.sqlite" 256 >/dev/null
    if [ "$LOG_ROWS" -gt 0 ]; then
        "$DBTOOL" fill "$data/switchyard.sqlite" "$LOG_ROWS" >/dev/null
    fi
    out="$WORK/cg-$n"
    # shellcheck disable=SC2086 # BENCH_CALLGRIND_ARGS is a list of options
    "${env_args[@]}" valgrind --tool=callgrind --instr-atstart=no --separate-threads=yes ${BENCH_CALLGRIND_ARGS:-} \
        --callgrind-out-file="$out.%p" "$SY" serve --listen "127.0.0.1:$port" >"$WORK/serve-$n.out" \
        2>"$WORK/serve-$n.err" &
    pid=$!
    PIDS+=("$pid")
    for _ in $(seq 1 3000); do grep -q "serving on" "$WORK/serve-$n.out" 2>/dev/null && break; sleep 0.01; done
    grep -q "serving on" "$WORK/serve-$n.out" || { echo "instructions.sh: serve did not start" >&2; cat "$WORK/serve-$n.err" >&2; exit 1; }
    url="http://127.0.0.1:$port/backend-api/codex/responses"
    "$LOAD" --url "$url" --concurrency 1 --warmup 0 --duration 5 --session-prefix "warm$n" >/dev/null
    callgrind_control -i on "$pid" >/dev/null 2>&1
    line=$("$LOAD" --url "$url" --concurrency 1 --warmup 0 --duration "$SECONDS_MEASURED" --session-prefix "m$n")
    callgrind_control -d "$pid" >/dev/null 2>&1
    kill -TERM "$pid"
    wait "$pid" 2>/dev/null || true
    turns=$(sed -n 's/.* total=\([0-9]*\).*/\1/p' <<<"$line")
    errors=$(sed -n 's/.* errors=\([0-9]*\).*/\1/p' <<<"$line")
    echo "== $SY"
    echo "   turns measured: $turns (errors $errors)"
    # One file per thread and dump: PREFIX.PID.1-TT is the explicit dump (the measured turns), PREFIX.PID-TT
    # what ran after it until the exit. Threads are numbered in the order they started: 01 is the main thread;
    # the two largest are the proxy and the store thread.
    total=0
    for f in "$out".*.1-*; do
        ir=$(awk '/^(summary|totals):/ { print $2; exit }' "$f")
        [ -n "$ir" ] && [ "$ir" -gt 0 ] || continue
        printf '   thread %-6s %14d Ir  %10.0f per turn\n' "${f##*-}" "$ir" "$(echo "$ir / $turns" | bc -l)"
        total=$((total + ir))
    done
    per=$(echo "$total / $turns" | bc -l)
    printf '   all threads   %14d Ir  %10.0f per turn' "$total" "$per"
    if [ -z "$first_total" ]; then
        first_total=$per
        echo
    else
        printf '  (%.3fx the first)\n' "$(echo "$per / $first_total" | bc -l)"
    fi
done
