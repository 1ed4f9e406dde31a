#!/usr/bin/env bash
# Switchyard benchmark: direct vs nginx vs `switchyard serve` on one fake upstream, every scenario, one table.
# Builds nothing. Usage (bench/README.md):
#   bench/run.sh BUILD_DIR [--seconds N] [--c1-seconds N] [--rounds N] [--soak-seconds N] [--soak-clients N]
#                [--log-rows N] [--only LIST] [--keep]
# or SWITCHYARD_BUILD_DIR=BUILD_DIR bench/run.sh ...
# --only: comma-separated parts to run (default all): c1,c64,c256,body,chat,rss,soak,log
# --rounds: how many times each load scenario runs its three targets in turn (default 3); the table shows the
#   median of the rounds, and the sy/ngx ratio of the added TTFB of every round.
set -euo pipefail

BUILD="${SWITCHYARD_BUILD_DIR:-}"
SECONDS_PER_RUN=10   # measured seconds per load run (plus 1 s warm-up)
# The c=1 scenario's runs are longer: one client makes about 2 turns a second (the streams take 490 ms), and a
# p99 over 20 turns would be their maximum. 50 s gives about 100 turns per run.
C1_SECONDS=50
unset RUN_SECONDS # set only around the c=1 scenario below
ROUNDS=3
SOAK_SECONDS=60
SOAK_CLIENTS=256
LOG_ROWS=1000000
ONLY=c1,c64,c256,body,chat,rss,soak,log
KEEP=0
while [ $# -gt 0 ]; do
    case "$1" in
        --seconds) SECONDS_PER_RUN="$2"; shift 2 ;;
        --c1-seconds) C1_SECONDS="$2"; shift 2 ;;
        --rounds) ROUNDS="$2"; shift 2 ;;
        --soak-seconds) SOAK_SECONDS="$2"; shift 2 ;;
        --soak-clients) SOAK_CLIENTS="$2"; shift 2 ;;
        --only) ONLY="$2"; shift 2 ;;
        --log-rows) LOG_ROWS="$2"; shift 2 ;;
        --keep) KEEP=1; shift ;;
        -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
        -*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
        *) BUILD="$1"; shift ;;
    esac
done
want() { [[ ",$ONLY," == *",$1,"* ]]; }
[ -n "$BUILD" ] || { echo "run.sh: give the build dir (argument or SWITCHYARD_BUILD_DIR)" >&2; exit 2; }
BUILD="$(cd "$BUILD" && pwd)"
SY="${BENCH_SY_BIN:-$BUILD/app/switchyard}" # BENCH_SY_BIN: another build of switchyard, for A/B runs
UPSTREAM_BIN="$BUILD/bench/sy-bench-upstream"
LOAD="$BUILD/bench/sy-bench-load"
DBTOOL="$BUILD/bench/sy-bench-db"
GAPS="$BUILD/bench/sy-bench-gaps"
NGINX="${NGINX:-/usr/sbin/nginx}"
for f in "$SY" "$UPSTREAM_BIN" "$LOAD" "$DBTOOL" "$GAPS" "$NGINX"; do
    [ -x "$f" ] || { echo "run.sh: $f is missing; build with: cmake --build $BUILD --target bench" >&2; exit 2; }
done
command -v curl >/dev/null || { echo "run.sh: curl is needed" >&2; exit 2; }

# Stream profile of the fake upstream for the streaming scenarios (each answer ~ EVENTS x DELAY_MS long).
EVENTS="${BENCH_EVENTS:-50}"
DELTA_BYTES="${BENCH_DELTA_BYTES:-64}"
DELAY_MS="${BENCH_DELAY_MS:-10}"
STREAM_PROFILE="events=$EVENTS&delta_bytes=$DELTA_BYTES&delay_ms=$DELAY_MS&first_ms=0"
# Per-account slots: the config key slots_per_account is capped at 64 (3 x 64 = 192 < 256 clients), so the
# per-account override accounts.slot_count carries the raised value.
SLOTS="${BENCH_SLOTS:-256}"
NGINX_WORKERS="${BENCH_NGINX_WORKERS:-1}"

WORK="$(mktemp -d /tmp/sy-bench.XXXXXX)"
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    if [ "$KEEP" = 1 ]; then echo "run.sh: kept $WORK" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
ulimit -n 65536 2>/dev/null || ulimit -n 8192 2>/dev/null || true

declare -A R   # R[scenario.target.key] = value
LOAD_AT_START=$(cut -d' ' -f1-3 /proc/loadavg)
# The machine's own gaps (sy-bench-gaps: one thread spinning per CPU, at most 64, 5 s) before the first scenario
# and after the last (nginx and the fake upstream then still up, idle): how much time a busy thread loses whatever
# it runs, and how much of that its kernel did not switch it out for (the host, or long interrupts). A failed
# probe prints so and does not stop the run.
machine_gaps() {
    local n
    n=$(nproc)
    [ "$n" -le 64 ] || n=64
    "$GAPS" "$n" 5 2>/dev/null | sed -n 's/^gaps: //p' || echo "(the probe failed)"
}
GAPS_AT_START=$(machine_gaps)
log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
calc() { awk "BEGIN { v = $1; printf \"%.${2:-2}f\", v }"; }
v() { echo "${R[$1]:-}"; }
num() { [ -n "$1" ] && [ "$1" != "-" ]; }
ratio() { # A B -> A/B
    if num "$1" && num "$2" && awk "BEGIN { exit !($2 > 0) }"; then calc "$1 / $2" 2; else echo "-"; fi
}
sub() { if num "$1" && num "$2"; then calc "$1 - $2" 3; else echo "-"; fi; }

# A port outside the kernel's ephemeral range: one inside it can be taken between the choice and the bind (or
# between two starts of serve on the same port) by the local end of any outgoing connection, the load's or the
# proxies' own, and a listener's bind then fails (likely what cost session 51 a run: nginx never answered).
# Below the range when it starts above 12000 (Linux's default 32768-60999), else above it.
free_port() {
    local p low high first count
    read -r low high 2>/dev/null </proc/sys/net/ipv4/ip_local_port_range || { low=32768; high=60999; }
    if [ "${low:-0}" -gt 12000 ] 2>/dev/null; then
        first=10000; count=$(( low - 10000 ))
    elif [ "${high:-65535}" -lt 63000 ] 2>/dev/null; then
        first=$(( high + 1 )); count=$(( 65535 - high ))
    else
        echo "run.sh: the ephemeral port range ($low-$high) leaves no room for listeners; ports may collide" >&2
        first=20000; count=30000
    fi
    for _ in $(seq 1 200); do
        p=$(( first + (RANDOM * 32768 + RANDOM) % count ))
        if ! (echo >"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return; fi
    done
    echo "run.sh: no free port" >&2; exit 1
}

wait_ready() { # PID LOG WHAT CMD...: until CMD succeeds, for up to 10 s; stops at once if PID has exited
    local pid=$1 log=$2 what=$3 until=$(( SECONDS + 10 )) why="was not ready within 10 s"
    shift 3
    while [ "$SECONDS" -lt "$until" ]; do
        "$@" && return 0
        if ! kill -0 "$pid" 2>/dev/null; then
            "$@" && return 0 # ready just before it exited: the caller finds out when it uses it
            why="exited before it was ready"; break
        fi
        sleep 0.01
    done
    echo "run.sh: $what $why; the end of $log:" >&2; tail -n 20 "$log" >&2; exit 1
}
wait_http() { # URL PID LOG: until URL answers (any status)
    wait_ready "$2" "$3" "the server for $1" curl -s -o /dev/null --max-time 1 "$1"
}

cpu_ticks() { # utime+stime of the given pids, in clock ticks
    local sum=0 pid
    for pid in "$@"; do
        [ -r "/proc/$pid/stat" ] || continue
        # Fields after the ")" of the command name: utime is the 12th, stime the 13th.
        sum=$(( sum + $(sed 's/.*) //' "/proc/$pid/stat" | awk '{ print $12 + $13 }') ))
    done
    echo "$sum"
}
CLK_TCK=$(getconf CLK_TCK)
thread_ticks() { # PID NAME: utime+stime of the process's threads called NAME (the proxy thread is "proxy")
    local sum=0 t
    for t in /proc/"$1"/task/*; do
        [ "$(cat "$t/comm" 2>/dev/null)" = "$2" ] || continue
        sum=$(( sum + $(sed 's/.*) //' "$t/stat" | awk '{ print $12 + $13 }') ))
    done
    echo "$sum"
}
threads_ns() { # PID: "NAME=NS ..." per thread name, the CPU time of its threads (schedstat, ns; all=: every thread)
    # A thread that ends during a run takes its time with it (from the names and from all=).
    local t name ns all=0
    local -A sum=()
    for t in /proc/"$1"/task/*; do
        { read -r name <"$t/comm"; } 2>/dev/null || continue
        { read -r ns _ <"$t/schedstat"; } 2>/dev/null || continue
        name=${name// /_}
        [ -n "$name" ] && [[ "$ns" =~ ^[0-9]+$ ]] || continue
        sum[$name]=$(( ${sum[$name]:-0} + ns ))
        all=$(( all + ns ))
    done
    for name in $(printf '%s\n' "${!sum[@]}" | sort); do printf '%s=%s ' "$name" "${sum[$name]}"; done
    echo "all=$all"
}
thread_us_per_req() { # BEFORE AFTER REQUESTS: "NAME=US ..." for the names in AFTER whose CPU time grew, per request
    awk -v before="$1" -v after="$2" -v n="$3" 'BEGIN {
        split(before, b, " "); for (i in b) { split(b[i], kv, "="); t0[kv[1]] = kv[2] }
        na = split(after, a, " "); out = ""
        for (i = 1; i <= na; i++) { split(a[i], kv, "="); d = kv[2] - t0[kv[1]]
            if (d > 0) out = out sprintf("%s%s=%.0f", out == "" ? "" : " ", kv[1], d / 1000 / n) }
        print out }'
}
ctx_switches() { # voluntary + involuntary context switches of every thread of the given pids
    local sum=0 pid
    for pid in "$@"; do
        [ -d "/proc/$pid/task" ] || continue
        sum=$(( sum + $(cat /proc/"$pid"/task/*/status 2>/dev/null |
            awk '/^(non)?voluntary_ctxt_switches:/ { n += $2 } END { print n + 0 }') ))
    done
    echo "$sum"
}
rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
fd_count() { find "/proc/$1/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; }
hwm_kib() { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status"; }

# ---------------------------------------------------------------- fake upstream
"$UPSTREAM_BIN" >"$WORK/upstream.out" 2>"$WORK/upstream.err" &
UP_PID=$!; PIDS+=("$UP_PID")
for _ in $(seq 1 500); do grep -q "listening on" "$WORK/upstream.out" 2>/dev/null && break; sleep 0.01; done
UP_PORT=$(awk '/listening on/ { print $3 }' "$WORK/upstream.out")
[ -n "$UP_PORT" ] || { echo "run.sh: the fake upstream did not start" >&2; exit 1; }
profile() { curl -sf -X POST "http://127.0.0.1:$UP_PORT/bench/profile?$1" >/dev/null; }

# ---------------------------------------------------------------- nginx
NGINX_PORT=$(free_port)
mkdir -p "$WORK/nginx"
{
    # Running as root, nginx would switch its worker to "nobody", which cannot use the private temp dirs.
    [ "$(id -u)" = 0 ] && echo "user root;"
    cat <<EOF
worker_processes $NGINX_WORKERS;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/error.log warn;
events { worker_connections 8192; }
http {
    access_log off;
    client_max_body_size 64m;
    # The default 16k buffer sends larger bodies (every Codex turn) through a temp file and then stalls
    # ~40 ms on delayed ACK towards the upstream: in memory, nginx is the strong reference it should be.
    client_body_buffer_size 16m;
    client_body_temp_path $WORK/nginx/client_body;
    proxy_temp_path $WORK/nginx/proxy;
    fastcgi_temp_path $WORK/nginx/fastcgi;
    uwsgi_temp_path $WORK/nginx/uwsgi;
    scgi_temp_path $WORK/nginx/scgi;
    upstream bench_upstream {
        server 127.0.0.1:$UP_PORT;
        keepalive 512;
    }
    server {
        listen 127.0.0.1:$NGINX_PORT;
        location / {
            proxy_pass http://bench_upstream;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering off;
            proxy_read_timeout 300s;
        }
    }
}
EOF
} >"$WORK/nginx/nginx.conf"
"$NGINX" -p "$WORK/nginx" -c "$WORK/nginx/nginx.conf" -e "$WORK/nginx/error.log" -g "daemon off;" \
    >"$WORK/nginx/stdout" 2>&1 &
NGINX_PID=$!; PIDS+=("$NGINX_PID")
wait_http "http://127.0.0.1:$NGINX_PORT/health" "$NGINX_PID" "$WORK/nginx/error.log"
nginx_pids() { echo "$NGINX_PID" $(pgrep -P "$NGINX_PID" || true); }

# ---------------------------------------------------------------- switchyard
head -c 32 /dev/urandom >"$WORK/secret.key"; chmod 600 "$WORK/secret.key"
echo '{"slots_per_account": 64}' >"$WORK/config.json"
mkdir -p "$WORK/auth"
"$DBTOOL" auth "$WORK/auth" 3
SY_PORT=$(free_port)
sy_env() { # DATA_DIR: the environment of every switchyard command, as `env` arguments in SY_ENV
    SY_ENV=(env SWITCHYARD_DATA_DIR="$1" SWITCHYARD_CONFIG="$WORK/config.json"
        SWITCHYARD_UPSTREAM_URL="http://127.0.0.1:$UP_PORT/backend-api" SWITCHYARD_AUTH_URL="http://127.0.0.1:9"
        SWITCHYARD_SECRET_BACKEND=database SWITCHYARD_SECRET_KEY_FILE="$WORK/secret.key")
}
setup_data_dir() { # DIR: three accounts with raised slots
    local i
    sy_env "$1"
    for i in 1 2 3; do
        "${SY_ENV[@]}" "$SY" accounts import "$WORK/auth/auth-$i.json" --alias "bench$i" >/dev/null
    done
    "$DBTOOL" slots "$1/switchyard.sqlite" "$SLOTS" >/dev/null
}
SY_PID=""
start_serve() { # DATA_DIR
    sy_env "$1"
    # env execs switchyard: $! is the server's own pid (RSS and CPU are read from it).
    "${SY_ENV[@]}" "$SY" serve --listen "127.0.0.1:$SY_PORT" >"$WORK/serve.out" 2>>"$WORK/serve.err" &
    SY_PID=$!; PIDS+=("$SY_PID")
    wait_ready "$SY_PID" "$WORK/serve.err" "switchyard serve" grep -q "serving on" "$WORK/serve.out"
}
stop_serve() {
    [ -n "$SY_PID" ] || return 0
    kill -TERM "$SY_PID"; wait "$SY_PID" 2>/dev/null || true; SY_PID=""
}
SY_DATA="$WORK/sy-data"
setup_data_dir "$SY_DATA"
start_serve "$SY_DATA"
sleep 1
R[idle.switchyard.rss_mib]=$(calc "$(rss_kib "$SY_PID") / 1024" 1)

# ---------------------------------------------------------------- load runs
url_for() { # TARGET KIND
    local port path=/backend-api/codex/responses
    [ "$2" = chat ] && path=/v1/chat/completions
    case "$1" in direct) port=$UP_PORT ;; nginx) port=$NGINX_PORT ;; switchyard) port=$SY_PORT ;; esac
    echo "http://127.0.0.1:$port$path"
}
proxy_pids() { case "$1" in nginx) nginx_pids ;; switchyard) echo "$SY_PID" ;; *) echo "" ;; esac; }
RUN=0
# The stages of TurnStageStats (core/api/TurnStages.h) that the table shows.
STAGES="request_read request_to_claim claim claim_wait claim_statements claim_commit_and_back claim_to_sent upstream_head head_handling event_to_first_byte added_before_first_byte settle body_scan body_prepare terminal_to_settle settled_to_answer added_before_answer"
load() { # SCENARIO TARGET KIND CONCURRENCY [extra sy-bench-load args]
    local scen="$1" target="$2" kind="$3" conc="$4"; shift 4
    RUN=$((RUN + 1))
    local pids c0 c1 out kv
    pids=$(proxy_pids "$target")
    c0=$(cpu_ticks $pids)
    local x0 x1
    x0=$(ctx_switches $pids)
    local p0=0 p1 s0=0 s1 t0 t1
    local th0=""
    [ "$target" = switchyard ] && p0=$(thread_ticks "$SY_PID" proxy) && s0=$(thread_ticks "$SY_PID" store) &&
        th0=$(threads_ns "$SY_PID" || true)
    local perf_pid=""
    if [ "$target" = switchyard ] && [ -n "${BENCH_PERF:-}" ]; then
        # Profiling aid (not part of the table): BENCH_PERF=PREFIX records the server during each of its runs.
        perf record -q -e cpu-clock -F 1999 --call-graph dwarf,16384 -p "$SY_PID" -o "$BENCH_PERF.$scen.data" \
            >/dev/null 2>&1 &
        perf_pid=$!
    fi
    local sched_pid=""
    if [ -n "${BENCH_SCHED:-}" ]; then
        # Profiling aid (not part of the table): BENCH_SCHED=PREFIX records the scheduler on every CPU during
        # each load run (who woke whom, and how long each waited for a CPU): `perf sched latency -i FILE` or
        # `perf sched timehist -w -i FILE`.
        perf sched record -a -o "$BENCH_SCHED.$scen.$target.data" >/dev/null 2>&1 &
        sched_pid=$!
        sleep 0.5
    fi
    local strace_pid=""
    if [ -n "${BENCH_SYSCALLS:-}" ] && [ "$target" != direct ]; then
        # Profiling aid (not part of the table): BENCH_SYSCALLS=PREFIX counts the proxy's system calls per run
        # (strace -c; it slows the proxy down, so the run's times are not comparable with other runs).
        strace -c -f -o "$BENCH_SYSCALLS.$scen.$target.txt" $(for p in $pids; do echo -p "$p"; done) \
            >/dev/null 2>&1 &
        strace_pid=$!
        sleep 0.5
    fi
    t0=$(date +%s%N)
    "$LOAD" --url "$(url_for "$target" "$kind")" --kind "$kind" --concurrency "$conc" \
        --duration "${RUN_SECONDS:-$SECONDS_PER_RUN}" --session-prefix "r$RUN-$target" "$@" >"$WORK/load.out" 2>>"$WORK/load.err" &
    local load_pid=$!
    if [ "$target" = switchyard ]; then
        # Switchyard's own account of where its turns spent their time (/api/status turn_stages): from the end
        # of the load's 1 s warm-up (its first connections) to the end of the run, like the load's figures.
        sleep 1
        curl -s "http://127.0.0.1:$SY_PORT/api/status" >"$WORK/stages0.json"
    fi
    wait "$load_pid" || true
    out=$(cat "$WORK/load.out")
    c1=$(cpu_ticks $pids)
    x1=$(ctx_switches $pids)
    local th1=""
    [ "$target" = switchyard ] && th1=$(threads_ns "$SY_PID" || true)
    t1=$(date +%s%N)
    [ -n "$perf_pid" ] && { kill -INT "$perf_pid"; wait "$perf_pid" 2>/dev/null || true; }
    [ -n "$sched_pid" ] && { kill -INT "$sched_pid"; wait "$sched_pid" 2>/dev/null || true; }
    [ -n "$strace_pid" ] && { kill -INT "$strace_pid"; wait "$strace_pid" 2>/dev/null || true; }
    if [ "$target" = switchyard ]; then
        # How busy the one proxy thread was over the whole run (warm-up included): near 100 % it is the limit.
        p1=$(thread_ticks "$SY_PID" proxy)
        R[$scen.$target.proxy_thread_busy_pct]=$(calc "($p1 - $p0) * 100 / $CLK_TCK / (($t1 - $t0) / 1000000000)" 0)
        # The same for the store thread(s), which run every claim, settlement and request-log row in turn.
        s1=$(thread_ticks "$SY_PID" store)
        R[$scen.$target.store_thread_busy_pct]=$(calc "($s1 - $s0) * 100 / $CLK_TCK / (($t1 - $t0) / 1000000000)" 0)
        curl -s "http://127.0.0.1:$SY_PORT/api/status" >"$WORK/stages1.json"
        local stages
        stages=$("$DBTOOL" stages "$WORK/stages0.json" "$WORK/stages1.json" 2>>"$WORK/load.err" || true)
        for kv in $stages; do R[$scen.$target.stage_${kv%%=*}]="${kv#*=}"; done
    fi
    for kv in $out; do R[$scen.$target.${kv%%=*}]="${kv#*=}"; done
    local total=${R[$scen.$target.total]:-0}
    if [ -n "$pids" ] && [ "$total" -gt 0 ]; then
        R[$scen.$target.cpu_us_per_req]=$(calc "($c1 - $c0) * 1000000 / $CLK_TCK / $total" 0)
        # Every thread's context switches (each one a sleep and a wake-up, or a preemption) per request.
        R[$scen.$target.ctx_per_req]=$(calc "($x1 - $x0) / $total" 1)
        # Counted, like `requests`, from the end of the load's warm-up (`total` includes the warm-up's).
        local measured=${R[$scen.$target.requests]:-0}
        if num "${R[$scen.$target.stage_busy_store_awake_wait_us]:-}" && [ "$measured" -gt 0 ]; then
            R[$scen.$target.store_awake_us_per_req]=$(calc "${R[$scen.$target.stage_busy_store_awake_wait_us]} / $measured" 0)
        fi
        # Each thread's CPU time per request (ns clocks, unlike the ticks above), and of the store thread's the
        # part it waited awake for a next job: where the CPU per request goes, run by run (the log line).
        if [ -n "$th1" ]; then
            R[$scen.$target.thread_us_per_req]=$(thread_us_per_req "$th0" "$th1" "$total")
        fi
    fi
    local threads=""
    [ -n "${R[$scen.$target.thread_us_per_req]:-}" ] &&
        threads=" | cpu us/req by thread: ${R[$scen.$target.thread_us_per_req]}, of store: awake waits ${R[$scen.$target.store_awake_us_per_req]:-?} | proxy polls ${R[$scen.$target.stage_busy_polls]:-?}, found ${R[$scen.$target.stage_busy_hits]:-?}, stopped for the store ${R[$scen.$target.stage_busy_helper_stalls]:-?}"
    log "$scen $target: ${out:-no result (see $WORK/load.err)}$threads"
}
median() { # VALUES... -> their median ("-" and empty values left out), "" when none is left
    printf '%s\n' "$@" | awk '$1 != "" && $1 != "-"' | sort -g |
        awk '{ a[NR] = $1 } END { if (NR == 0) exit; if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}
# Every round runs the three targets back to back, so each round's ratios compare runs made under the same
# background load; the machine's noise moves whole rounds (nginx's added p50 at c=64 varied 0.05-2.2 ms between
# single runs). The table shows each figure's median over the rounds; "added" figures are the median of each
# round's own difference to direct.
each_target() { # SCENARIO KIND CONCURRENCY [extra sy-bench-load args]
    local scen="$1" r t key vals
    for r in $(seq 1 "$ROUNDS"); do
        for t in direct nginx switchyard; do load "$scen@$r" "$t" "${@:2}"; done
        for key in ttfb_p50_ms ttfb_p99_ms ttlb_p50_ms; do
            for t in nginx switchyard; do
                R[$scen@$r.$t.added_$key]=$(sub "$(v "$scen@$r.$t.$key")" "$(v "$scen@$r.direct.$key")")
            done
        done
    done
    for t in direct nginx switchyard; do
        for key in ttfb_p50_ms ttfb_p99_ms ttlb_p50_ms ttlb_p99_ms rps cpu_us_per_req ctx_per_req proxy_thread_busy_pct \
                   store_thread_busy_pct added_ttfb_p50_ms added_ttfb_p99_ms added_ttlb_p50_ms \
                   store_awake_us_per_req stage_busy_store_waits_after_job stage_busy_store_jobs_found_awake_after_job \
                   stage_busy_store_no_wait_after_job \
                   $(for st in $STAGES; do echo "stage_${st}_p50_us stage_${st}_p99_us stage_${st}_count"; done); do
            vals=(); for r in $(seq 1 "$ROUNDS"); do vals+=("$(v "$scen@$r.$t.$key")"); done
            R[$scen.$t.$key]=$(median "${vals[@]}")
        done
        R[$scen.$t.errors]=0
        for r in $(seq 1 "$ROUNDS"); do R[$scen.$t.errors]=$(( ${R[$scen.$t.errors]} + ${R[$scen@$r.$t.errors]:-0} )); done
    done
    for key in ttfb_p50_ms ttfb_p99_ms; do
        vals=""
        for r in $(seq 1 "$ROUNDS"); do vals+="$(ratio "$(v "$scen@$r.switchyard.added_$key")" "$(v "$scen@$r.nginx.added_$key")") "; done
        R[$scen.rounds.added_$key]="${vals% }"
    done
}

log "upstream :$UP_PORT  nginx :$NGINX_PORT  switchyard :$SY_PORT  profile $STREAM_PROFILE  slots $SLOTS"
profile "$STREAM_PROFILE"
want c1 && RUN_SECONDS=$C1_SECONDS each_target stream_c1 codex 1
want c64 && each_target stream_c64 codex 64
want c256 && each_target stream_c256 codex 256
want body && each_target body_10mib codex 2 --body-bytes 10485760
want chat && each_target chat_c16 chat 16

# ---------------------------------------------------------------- RSS with 256 open streams
# Slow answers (100 events, 100 ms apart = 10 s) keep all 256 streams open while RSS is read.
if want rss; then
profile "events=100&delta_bytes=$DELTA_BYTES&delay_ms=100&first_ms=0"
rm -f "$WORK/ready"
"$LOAD" --url "$(url_for switchyard codex)" --concurrency 256 --warmup 0 --duration 3 --session-prefix rss \
    --ready-file "$WORK/ready" >/dev/null 2>>"$WORK/load.err" &
LOAD_PID=$!; PIDS+=("$LOAD_PID")
for _ in $(seq 1 1500); do [ -e "$WORK/ready" ] && break; sleep 0.01; done
max=0
if [ -e "$WORK/ready" ]; then
    for _ in 1 2 3 4 5 6; do v=$(rss_kib "$SY_PID"); [ "$v" -gt "$max" ] && max=$v; sleep 0.5; done
    R[rss256.switchyard.rss_mib]=$(calc "$max / 1024" 1)
else
    log "rss: the 256 streams never all started"
fi
wait "$LOAD_PID" || true
R[rss256.switchyard.hwm_mib]=$(calc "$(hwm_kib "$SY_PID") / 1024" 1)
log "rss with 256 open streams: ${R[rss256.switchyard.rss_mib]:-?} MiB (peak ${R[rss256.switchyard.hwm_mib]} MiB)"
fi

# ---------------------------------------------------------------- soak
# SOAK_CLIENTS streaming clients for SOAK_SECONDS; RSS and open fds of the server sampled every 10 s.
if want soak; then
profile "$STREAM_PROFILE"
log "soak: $SOAK_CLIENTS streaming clients for $SOAK_SECONDS s"
"$LOAD" --url "$(url_for switchyard codex)" --concurrency "$SOAK_CLIENTS" --warmup 0 --duration "$SOAK_SECONDS" \
    --session-prefix soak >"$WORK/soak.out" 2>>"$WORK/load.err" &
LOAD_PID=$!; PIDS+=("$LOAD_PID")
step=10; [ "$SOAK_SECONDS" -lt 60 ] && step=$(( SOAK_SECONDS / 6 > 0 ? SOAK_SECONDS / 6 : 1 ))
: >"$WORK/soak.samples"
start_s=$(date +%s)
while kill -0 "$LOAD_PID" 2>/dev/null; do
    echo "$(( $(date +%s) - start_s )) $(rss_kib "$SY_PID") $(fd_count "$SY_PID")" >>"$WORK/soak.samples"
    sleep "$step"
done
wait "$LOAD_PID" || true
# Baseline: the mean of the second quarter of the samples (the first minutes fill pools and the bounded caches),
# against the mean of the last quarter; single samples swing by a few MiB with the streams open at that moment.
read -r first last peak fd_first fd_last fd_max n < <(awk -v s="$SOAK_SECONDS" '
    $1 >= s / 4 && $1 < s / 2 { b += $2; fb += $3; ++nb }
    $1 >= s * 3 / 4 { e += $2; fe += $3; ++ne }
    { if ($2 > max) max = $2; if ($3 > fd_max) fd_max = $3; ++n; last = $2; fd_last = $3 }
    END { if (nb == 0) { b = last; fb = fd_last; nb = 1 } if (ne == 0) { e = last; fe = fd_last; ne = 1 }
          printf "%.1f %.1f %.1f %d %d %d %d\n", b / nb / 1024, e / ne / 1024, max / 1024, fb / nb, fe / ne, fd_max, n }' \
    "$WORK/soak.samples")
R[soak.switchyard.first_mib]=$first; R[soak.switchyard.last_mib]=$last; R[soak.switchyard.max_mib]=$peak
R[soak.switchyard.fd_first]=$fd_first; R[soak.switchyard.fd_last]=$fd_last; R[soak.switchyard.fd_max]=$fd_max
R[soak.switchyard.samples]=$n
R[soak.switchyard.requests]=$(awk '{ for (i = 1; i <= NF; ++i) if ($i ~ /^total=/) print substr($i, 7) }' "$WORK/soak.out")
R[soak.switchyard.errors]=$(awk '{ for (i = 1; i <= NF; ++i) if ($i ~ /^errors=/) print substr($i, 8) }' "$WORK/soak.out")
log "soak samples (s rss_kib fds): $(tr '\n' ';' <"$WORK/soak.samples")"
[ -n "${SOAK_SAMPLES_OUT:-}" ] && cp "$WORK/soak.samples" "$SOAK_SAMPLES_OUT"
fi
stop_serve

# ---------------------------------------------------------------- request log: 0 vs LOG_ROWS rows, chart, cold start
if want log; then
LOG_DATA="$WORK/sy-log"
setup_data_dir "$LOG_DATA"
profile "events=5&delta_bytes=$DELTA_BYTES&delay_ms=0&first_ms=0"
cold() { # LABEL
    local out kv
    sy_env "$LOG_DATA"
    out=$("${SY_ENV[@]}" "$LOAD" --url "$(url_for switchyard codex)" --cold-start 5 --log "$WORK/cold.log" \
        -- "$SY" serve --listen "127.0.0.1:$SY_PORT" 2>>"$WORK/load.err" || true)
    for kv in $out; do R[$1.switchyard.${kv%%=*}]="${kv#*=}"; done
    log "cold start ($1): ${out:-failed}"
}
cold cold0
profile "$STREAM_PROFILE"
load log0 direct codex 16
# The empty-log twin of the data dir (same accounts and slots), so 0 and LOG_ROWS rows can alternate below.
LOG0_DATA="$WORK/sy-log0"
cp -a "$LOG_DATA" "$LOG0_DATA"
log "filling the request log with $LOG_ROWS rows (and, unless BENCH_FILL_LEDGER=0, their claims, anchors and sessions)"
fill=$("$DBTOOL" fill "$LOG_DATA/switchyard.sqlite" "$LOG_ROWS")
for kv in $fill; do R[log.switchyard.${kv%%=*}]="${kv#*=}"; done
chart=$("$DBTOOL" chart "$LOG_DATA/switchyard.sqlite" 5)
grep '^# plan' <<<"$chart" >&2 || true
for kv in $(grep -v '^#' <<<"$chart"); do R[chart.switchyard.${kv%%=*}]="${kv#*=}"; done
log "chart queries: $(grep -v '^#' <<<"$chart" | tr '\n' ' ')"
profile "events=5&delta_bytes=$DELTA_BYTES&delay_ms=0&first_ms=0"
cold cold1m
profile "$STREAM_PROFILE"
# CPU per request at 0 and at LOG_ROWS rows: each serve gets 3 s of unmeasured load first (a serve that has just
# started on a freshly filled file pays for its first reads), and the pair runs --rounds times (at least twice),
# alternating; the lowest figure of each counts (other work on the shared machine only ever adds CPU time).
log_cpu() { # SCENARIO DATA_DIR
    local best="${R[$1.switchyard.cpu_us_per_req]:-}"
    start_serve "$2"
    "$LOAD" --url "$(url_for switchyard codex)" --concurrency 16 --warmup 0 --duration 3 --session-prefix "w$RUN" \
        >/dev/null 2>>"$WORK/load.err" || true
    load "$1" switchyard codex 16
    stop_serve
    if [ -n "$best" ] && awk "BEGIN { exit !($best < ${R[$1.switchyard.cpu_us_per_req]:-0}) }"; then
        R[$1.switchyard.cpu_us_per_req]=$best
    fi
}
for _ in $(seq 1 $((ROUNDS > 2 ? ROUNDS : 2))); do
    log_cpu log0 "$LOG0_DATA"
    log_cpu log1m "$LOG_DATA"
done
fi

# ---------------------------------------------------------------- table
row() { printf '%-34s %11s %11s %11s %9s %9s %9s\n' "$@"; }
metric_rows() { # SCENARIO LABEL
    local s="$1" key label
    for key in ttfb_p50_ms ttfb_p99_ms ttlb_p50_ms ttlb_p99_ms rps; do
        local d n y
        d=$(v "$s.direct.$key"); n=$(v "$s.nginx.$key"); y=$(v "$s.switchyard.$key")
        row "$2 $key" "$d" "$n" "$y" "$(ratio "$n" "$d")" "$(ratio "$y" "$d")" "$(ratio "$y" "$n")"
    done
    for key in ttfb_p50_ms ttfb_p99_ms ttlb_p50_ms; do
        local an ay
        an=$(v "$s.nginx.added_$key"); ay=$(v "$s.switchyard.added_$key")
        row "$2 added ${key}" "" "$an" "$ay" "" "" "$(ratio "$ay" "$an")"
    done
    for key in ttfb_p50_ms ttfb_p99_ms; do
        printf '%-34s %s\n' "$2 added ${key} sy/ngx by round" "$(v "$s.rounds.added_$key")"
    done
    row "$2 cpu_us_per_req" "" "$(v "$s.nginx.cpu_us_per_req")" "$(v "$s.switchyard.cpu_us_per_req")" "" "" \
        "$(ratio "$(v "$s.switchyard.cpu_us_per_req")" "$(v "$s.nginx.cpu_us_per_req")")"
    row "$2 ctx switches per req" "" "$(v "$s.nginx.ctx_per_req")" "$(v "$s.switchyard.ctx_per_req")" "" "" \
        "$(ratio "$(v "$s.switchyard.ctx_per_req")" "$(v "$s.nginx.ctx_per_req")")"
    row "$2 proxy thread busy %" "" "" "$(v "$s.switchyard.proxy_thread_busy_pct")" "" "" ""
    row "$2 store thread busy %" "" "" "$(v "$s.switchyard.store_thread_busy_pct")" "" "" ""
    # The store thread's waits awake after a unit of work (StoreWorker.h): how many, how many a job ended, after
    # how many units it slept at once, and their time per request (CPU time, whether a job came or not).
    printf '%-34s %s\n' "$2 sy store waits/found/none, us/req" \
        "$(v "$s.switchyard.stage_busy_store_waits_after_job") / $(v "$s.switchyard.stage_busy_store_jobs_found_awake_after_job") / $(v "$s.switchyard.stage_busy_store_no_wait_after_job"), $(v "$s.switchyard.store_awake_us_per_req")"
    # Switchyard's own stage times (us, its /api/status): where its added time before the first byte goes.
    local st
    for st in $STAGES; do
        [ "$(v "$s.switchyard.stage_${st}_count")" = 0 ] && continue # a stage this scenario never reaches
        printf '%-34s %s\n' "$2 sy stage $st p50/p99 us" \
            "$(v "$s.switchyard.stage_${st}_p50_us") / $(v "$s.switchyard.stage_${st}_p99_us") (n=$(v "$s.switchyard.stage_${st}_count"))"
    done
    row "$2 errors" "$(v "$s.direct.errors")" "$(v "$s.nginx.errors")" "$(v "$s.switchyard.errors")" "" "" ""
}

echo
echo "Switchyard benchmark — $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, ${SECONDS_PER_RUN} s per run (c=1: ${C1_SECONDS} s), $ROUNDS rounds"
echo "upstream profile: $EVENTS deltas x $DELTA_BYTES B, $DELAY_MS ms apart; codex body 40 KiB; switchyard: 3 accounts,"
echo "slot_count $SLOTS per account (config slots_per_account 64), other settings default; nginx: $NGINX_WORKERS worker(s)"
echo "load average at start $LOAD_AT_START, at end $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine skews results)"
echo "machine gaps at start: $GAPS_AT_START"
echo "machine gaps at end:   $(machine_gaps)"
echo "times in ms (ttfb = first body byte); added = target minus direct; ratios are column / column;"
echo "each figure is the median of the rounds (added: of each round's own difference to direct)"
echo
row "scenario / metric" direct nginx switchyard ngx/dir sy/dir sy/ngx
for s in stream_c1:"stream c=1" stream_c64:"stream c=64" stream_c256:"stream c=256" \
         body_10mib:"10MiB body c=2" chat_c16:"chat non-stream c=16"; do
    metric_rows "${s%%:*}" "${s#*:}"
    echo
done
echo "switchyard only"
printf '  %-44s %s\n' \
    "RSS idle after start (MiB)" "$(v idle.switchyard.rss_mib)" \
    "RSS with 256 open streams (MiB)" "$(v rss256.switchyard.rss_mib) (peak $(v rss256.switchyard.hwm_mib))" \
    "soak ${SOAK_SECONDS}s x $SOAK_CLIENTS: RSS 2nd-quarter / last-quarter mean / max (MiB)" \
        "$(v soak.switchyard.first_mib) / $(v soak.switchyard.last_mib) / $(v soak.switchyard.max_mib) ($(v soak.switchyard.requests) requests, $(v soak.switchyard.errors) errors, $(v soak.switchyard.samples) samples)" \
    "soak: open fds 2nd-quarter / last-quarter mean / max" \
        "$(v soak.switchyard.fd_first) / $(v soak.switchyard.fd_last) / $(v soak.switchyard.fd_max)" \
    "cold start median (min..max) ms, empty log" \
        "$(v cold0.switchyard.cold_start_median_ms) ($(v cold0.switchyard.cold_start_min_ms)..$(v cold0.switchyard.cold_start_max_ms))" \
    "cold start median (min..max) ms, $LOG_ROWS rows" \
        "$(v cold1m.switchyard.cold_start_median_ms) ($(v cold1m.switchyard.cold_start_min_ms)..$(v cold1m.switchyard.cold_start_max_ms))" \
    "c=16 stream, empty log: ttlb p50 / cpu us/req" "$(v log0.switchyard.ttlb_p50_ms) / $(v log0.switchyard.cpu_us_per_req)" \
    "c=16 stream, $LOG_ROWS rows: ttlb p50 / cpu us/req" "$(v log1m.switchyard.ttlb_p50_ms) / $(v log1m.switchyard.cpu_us_per_req)" \
    "c=16 stream, direct: ttlb p50" "$(v log0.direct.ttlb_p50_ms)" \
    "log fill via RequestLogRepository::insert: s" "$(v log.switchyard.fill_seconds)" \
    "filled log / claims / anchors / sessions rows" "$(v log.switchyard.log_rows) / $(v log.switchyard.claim_rows) / $(v log.switchyard.anchor_rows) / $(v log.switchyard.session_rows)" \
    "Usage page 30 days (rollups): first / median ms" "$(v chart.switchyard.chart_month_first_ms) / $(v chart.switchyard.chart_month_median_ms)" \
    "Usage page 7 days / 24 hours: median ms" "$(v chart.switchyard.chart_week_median_ms) / $(v chart.switchyard.chart_day_median_ms)" \
    "30-day per-account totals (usage): median ms" "$(v chart.switchyard.totals_median_ms)" \
    "30-day hourly sums from raw request_log: median ms" "$(v chart.switchyard.raw_hour_median_ms)"

# ---------------------------------------------------------------- targets (issue 8)
echo
echo "targets"
verdict() { if [ "$1" = 1 ]; then echo met; elif [ "$1" = 0 ]; then echo "NOT met"; else echo "n/a"; fi; }
scaled() { # FACTOR VALUE -> FACTOR x VALUE, "-" when VALUE is not a positive number
    if num "$2" && awk "BEGIN { exit !($2 > 0) }"; then calc "$1 * $2" 3; else echo "-"; fi
}
le() { if num "$1" && num "$2"; then awk "BEGIN { print ($1 <= $2) ? 1 : 0 }"; else echo x; fi; }
ge() { if num "$1" && num "$2"; then awk "BEGIN { print ($1 >= $2) ? 1 : 0 }"; else echo x; fi; }
for s in stream_c1 stream_c64 stream_c256 body_10mib; do
    an=$(v "$s.nginx.added_ttfb_p50_ms"); ay=$(v "$s.switchyard.added_ttfb_p50_ms")
    bn=$(v "$s.nginx.added_ttfb_p99_ms"); by=$(v "$s.switchyard.added_ttfb_p99_ms")
    printf '  %-58s %s\n' "$s added TTFB p50 <= 1.2x nginx ($ay vs $an ms)" \
        "$(verdict "$(le "$ay" "$(scaled 1.2 "$an")")")"
    printf '  %-58s %s\n' "$s added TTFB p99 <= 1.5x nginx ($by vs $bn ms)" \
        "$(verdict "$(le "$by" "$(scaled 1.5 "$bn")")")"
done
printf '  %-58s %s\n' "req/s at 64 clients >= 0.9x nginx ($(v stream_c64.switchyard.rps) vs $(v stream_c64.nginx.rps))" \
    "$(verdict "$(ge "$(v stream_c64.switchyard.rps)" "$(scaled 0.9 "$(v stream_c64.nginx.rps)")")")"
printf '  %-58s %s\n' "RSS with 256 open streams <= 60 MiB ($(v rss256.switchyard.rss_mib))" \
    "$(verdict "$(le "$(v rss256.switchyard.rss_mib)" 60)")"
growth=$(sub "$(v soak.switchyard.last_mib)" "$(v soak.switchyard.first_mib)")
printf '  %-58s %s\n' "RSS flat over the soak (last - 2nd quarter = $growth MiB, <= 5%)" \
    "$(verdict "$(le "$growth" "$(scaled 0.05 "$(v soak.switchyard.first_mib)")")")"
fdgrowth=$(sub "$(v soak.switchyard.fd_last)" "$(v soak.switchyard.fd_first)")
printf '  %-58s %s\n' "open fds flat over the soak (last - first = $fdgrowth, <= 5%)" \
    "$(verdict "$(le "$fdgrowth" "$(scaled 0.05 "$(v soak.switchyard.fd_first)")")")"
printf '  %-58s %s\n' "cpu/req at $LOG_ROWS rows <= 1.1x at 0 ($(v log1m.switchyard.cpu_us_per_req) vs $(v log0.switchyard.cpu_us_per_req) us)" \
    "$(verdict "$(le "$(v log1m.switchyard.cpu_us_per_req)" "$(scaled 1.1 "$(v log0.switchyard.cpu_us_per_req)")")")"
o0=$(sub "$(v log0.switchyard.ttlb_p50_ms)" "$(v log0.direct.ttlb_p50_ms)")
o1=$(sub "$(v log1m.switchyard.ttlb_p50_ms)" "$(v log0.direct.ttlb_p50_ms)")
printf '  %-58s %s\n' "added TTLB p50 at $LOG_ROWS rows <= 1.1x at 0 ($o1 vs $o0 ms)" \
    "$(verdict "$(le "$o1" "$(scaled 1.1 "$o0")")")"
printf '  %-58s %s\n' "30-day chart query <= 50 ms ($(v chart.switchyard.chart_month_median_ms) ms)" \
    "$(verdict "$(le "$(v chart.switchyard.chart_month_median_ms)" 50)")"
printf '  %-58s %s\n' "cold start <= 300 ms ($(v cold0.switchyard.cold_start_median_ms) ms)" \
    "$(verdict "$(le "$(v cold0.switchyard.cold_start_median_ms)" 300)")"
