#!/usr/bin/env bash
# Fuzzing with libFuzzer (docs/TESTING.md "Fuzzing"): configures the fuzz build (clang 14, everything with
# ASan + UBSan + coverage), builds one executable per target of tests/fuzz, then runs every target for a fixed
# number of executions, starting from the seeds in tests/fuzz/corpus/<target>/ and tests/fuzz/regressions/<target>/.
#   tools/fuzz.sh                 1,000,000 executions per target
#   tools/fuzz.sh --runs N        N executions per target
#   tools/fuzz.sh --smoke         a short run of every target (about a minute in all; CI)
#   tools/fuzz.sh --configure-only  configure the fuzz build only (tools/dev.sh builds the unit tests there)
#   tools/fuzz.sh ... TARGET...   only these targets (http_request sse_parser translate_request
#                                 translate_stream auth_json config_loader)
# New inputs found go to $work/corpus/<target>/ (never into the repository); a crash leaves its input as
# $work/artifacts/<target>/crash-* and the script exits non-zero. $work is $SWITCHYARD_FUZZ_WORK_DIR, by default
# the build directory ($SWITCHYARD_FUZZ_BUILD_DIR, default build-fuzz); logs are $work/fuzz_<target>.log.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${SWITCHYARD_FUZZ_BUILD_DIR:-$here/build-fuzz}
workdir=${SWITCHYARD_FUZZ_WORK_DIR:-$build}
runs=1000000
smoke=0
configure_only=0
targets=()
while [ $# -gt 0 ]; do
    case "$1" in
    --smoke) smoke=1 ;;
    --runs) runs=$2; shift ;;
    --configure-only) configure_only=1 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1") ;;
    esac
    shift
done
all=(http_request sse_parser translate_request translate_stream auth_json config_loader)
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")

launcher=()
if command -v ccache >/dev/null; then
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
# -O1 -g1: fast enough to fuzz, line tables for the sanitizer reports, and a quicker build than -O2 -g.
CC=clang-14 CXX=clang++-14 cmake -S "$here" -B "$build" -G Ninja -DSWITCHYARD_FUZZ=ON \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1" "${launcher[@]}" >/dev/null
[ "$configure_only" = 0 ] || exit 0
cmake --build "$build" -j "$(nproc)" --target "${targets[@]/#/fuzz_}"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export QT_QPA_PLATFORM=offscreen LANG=C.UTF-8
status=0
for t in "${targets[@]}"; do
    work="$workdir/corpus/$t"
    artifacts="$workdir/artifacts/$t"
    mkdir -p "$work" "$artifacts"
    seeds=("$here/tests/fuzz/corpus/$t")
    [ -d "$here/tests/fuzz/regressions/$t" ] && seeds+=("$here/tests/fuzz/regressions/$t")
    limits=(-max_len=8192 -timeout=20 -rss_limit_mb=4096)
    if [ "$smoke" = 1 ]; then
        # Eight seconds per target (each takes about one more to start): six targets stay within a minute.
        args=(-max_total_time=8)
    else
        args=(-runs="$runs")
    fi
    echo "== fuzz_$t ${args[*]}"
    start=$(date +%s)
    log="$workdir/fuzz_$t.log"
    if ! "$build/tests/fuzz/fuzz_$t" "${limits[@]}" "${args[@]}" -print_final_stats=1 \
        -artifact_prefix="$artifacts/" "$work" "${seeds[@]}" >"$log" 2>&1; then
        status=1
        echo "fuzz_$t FAILED (log: $log; inputs: $artifacts)" >&2
        tail -n 60 "$log" >&2
    fi
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 || true)
    echo "   ${execs:-?} executions in $(($(date +%s) - start)) s (${speed:-?}/s), ${cov:-cov: ?}"
done
exit $status
