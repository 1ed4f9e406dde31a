#!/usr/bin/env bash
# spec/check.sh -- checks the ownership-protocol model with SPIN (issue 5, point 4). One command, also run
# by CI (ctest label "spec"). Exit status 0 only if every step below passed.
#
#   1. consistency: the weak-*.cfg files, the WEAK_* flags of the model and the MAPPING below agree;
#   2. scripted stream-idle regression (StreamIdleRegression.pml): exhaustive, errors 0, script finishes;
#   3. full model, safety: 12 named invariants + Deadlock, DFS. Prints "PASS full" only for an exact
#      exhaustive search with no error and no truncation marker, "PARTIAL full" for a search cut short by
#      the wall-clock budget / memory / depth limit (errors 0 so far), and fails otherwise;
#   4. full model, each liveness property under weak fairness (./pan -a -f -N <P>), classified the same way;
#   5. every negative control weak-<name>.cfg: an invariant control must produce a counterexample (BFS,
#      shortest) whose first violated property is the mapped one; the property control must pass every
#      invariant exhaustively and produce an acceptance cycle for exactly its mapped property;
#   6. the crash model (CrashRecovery.pml: the process dying between transactions, restarts, the sweep of
#      abandoned failovers): exhaustive safety with errors 0, and each of its CRASH_WEAK_* controls must
#      produce a counterexample of its mapped invariant;
#   7. the claim-ahead design model (ClaimAhead.pml: a design, not built; docs/CLAIM-AHEAD.md): the same, with
#      its AHEAD_WEAK_* controls.
#
# Environment:
#   SWITCHYARD_SPIN_FULL_TIMEOUT_SECONDS  wall-clock budget of each full-model run (default 600; 0 = none)
#   SWITCHYARD_SPIN_CONTROL_TIMEOUT_SECONDS  budget of each control run (default 300; 0 = none)
#   SWITCHYARD_SPIN_MEMLIM_MB             pan memory limit per run (default 6144)
#   SWITCHYARD_SPIN_JOBS                  parallel pan runs (default: number of CPUs)
#   SWITCHYARD_SPIN_REQUIRE_FULL=1        treat PARTIAL as a failure
#   SWITCHYARD_SPIN_FAITHFUL=1            check the full model without the dead-variable reset (-DFAITHFUL,
#                                         exact -DCOLLAPSE storage, -w28): > 77 M states, > 15 GB -- PARTIAL here
#   SWITCHYARD_SPIN_KEEP=1                keep the temporary work directory (logs, trails) and print it
#
# pan's exit status is 0 even after an error, so every verdict comes from parsing its output. All SPIN and
# pan files are written to a mktemp directory outside the source tree, removed on exit.
set -euo pipefail

SPEC_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
MODEL=CoreOwnership.pml
SCENARIO=StreamIdleRegression.pml
FULL_TIMEOUT=${SWITCHYARD_SPIN_FULL_TIMEOUT_SECONDS:-600}
CONTROL_TIMEOUT=${SWITCHYARD_SPIN_CONTROL_TIMEOUT_SECONDS:-300}
# pan's memory limit per run. 6144: the claim-ahead model's largest control (ahead-no-journal, BFS) takes about
# 3.0 GB, too close to the former 4096; two runs at once stay well inside a 24 GiB machine.
MEMLIM=${SWITCHYARD_SPIN_MEMLIM_MB:-6144}
JOBS=${SWITCHYARD_SPIN_JOBS:-$(nproc 2>/dev/null || echo 2)}
REQUIRE_FULL=${SWITCHYARD_SPIN_REQUIRE_FULL:-0}
FAITHFUL=${SWITCHYARD_SPIN_FAITHFUL:-0}
KEEP=${SWITCHYARD_SPIN_KEEP:-0}

# The 12 invariants (monitor assertions), the 4 liveness properties (ltl blocks) and the control mapping.
INVARIANTS=(TypeInvariant Inv1AnchorCurrent Inv2DeadlineOrdering Inv3ReservationSettledExactlyOnce
            Inv4FreshSnapshots Inv5SingleOwnerCAS Inv6TerminalIsolation Inv7GateAccounting Inv8ShutdownDrain
            Inv9TerminalOwnerReleased Inv10AnchorAccountOwnership Inv11PreResponseBudget)
LIVENESS=(TurnTermination ShutdownEventuallyComplete CompletedProducerEventuallyDelivered TearEventuallyRecovers)
declare -A MAPPING=(
    [ignore-owner-epoch]="Inv5SingleOwnerCAS|Inv1AnchorCurrent"
    [ignore-anchor-lineage]="Inv1AnchorCurrent"
    [single-shared-timeout]="Inv2DeadlineOrdering"
    [skip-release-on-cancel]="Inv3ReservationSettledExactlyOnce"
    [double-settle]="Inv3ReservationSettledExactlyOnce"
    [popped-not-finalized]="Inv3ReservationSettledExactlyOnce"
    [stale-cache]="Inv4FreshSnapshots"
    [stale-route-acquire]="Inv4FreshSnapshots"
    [non-atomic-claim]="Inv5SingleOwnerCAS"
    [misroute-producer]="Inv6TerminalIsolation"
    [misroute-cancelled-producer]="Inv6TerminalIsolation"
    [misroute-failed-producer]="Inv6TerminalIsolation"
    [lost-waiter]="Inv7GateAccounting"
    [shutdown-admit]="Inv8ShutdownDrain"
    [leak-owner-on-terminal]="Inv9TerminalOwnerReleased"
    [cross-account-anchor]="Inv10AnchorAccountOwnership"
    [conflated-timers]="Inv11PreResponseBudget"
    [unfenced-failover-release]="Inv5SingleOwnerCAS"
    [settle-on-failover]="Inv3ReservationSettledExactlyOnce"
    [failover-continuation]="Inv10AnchorAccountOwnership"
    [unbounded-backoff]="PROPERTY:TearEventuallyRecovers"
)

# The crash model and its controls (flag -> the invariant its counterexample must violate).
CRASH_MODEL=CrashRecovery.pml
declare -A CRASH_MAPPING=(
    [crash-no-sweep]="CRASH_WEAK_NO_SWEEP|CrashExactlyOnce"
    [crash-sweep-own]="CRASH_WEAK_SWEEP_OWN|CrashOwnOutcome"
    [crash-no-close]="CRASH_WEAK_NO_CLOSE|CrashAtMostOnce"
)

# The claim-ahead design model and its controls (flag -> the invariant its counterexample must violate).
AHEAD_MODEL=ClaimAhead.pml
declare -A AHEAD_MAPPING=(
    [ahead-no-recheck]="AHEAD_WEAK_NO_RECHECK|AheadFresh"
    [ahead-hand-on-unquiet]="AHEAD_WEAK_HAND_ON_UNQUIET|AheadFresh"
    [ahead-bump-late]="AHEAD_WEAK_BUMP_LATE|AheadFresh"
    [ahead-repair-live]="AHEAD_WEAK_REPAIR_LIVE|AheadFresh"
    [ahead-take-race]="AHEAD_WEAK_TAKE_RACE|AheadSingleOwner"
    [ahead-no-journal]="AHEAD_WEAK_NO_JOURNAL|AheadExactlyOnce"
    [ahead-book-all]="AHEAD_WEAK_BOOK_ALL|AheadNoPhantom"
    [ahead-unfenced-settle]="AHEAD_WEAK_UNFENCED_SETTLE|AheadAtMostOnce"
    [ahead-unfenced-release]="AHEAD_WEAK_UNFENCED_RELEASE|AheadSingleOwner"
    [ahead-no-drain-release]="AHEAD_WEAK_NO_DRAIN_RELEASE|AheadDrained"
)

# pan build and run options. Never pan's option that ignores invalid end states (it would drop the deadlock
# check), never bitstate / hash-compact / minimised-automaton storage (approximate or slow), never a claim in
# safety runs (-DNOCLAIM keeps the invalid-end-state check on).
SAFETY_CFLAGS=(-O2 -DSAFETY -DNOCLAIM -DNOREDUCE "-DMEMLIM=$MEMLIM")
LIVENESS_CFLAGS=(-O2 -DNFAIR=4 -DNOREDUCE "-DMEMLIM=$MEMLIM")
CONTROL_CFLAGS=(-O1 -DBFS -DSAFETY -DNOCLAIM -DNOREDUCE "-DMEMLIM=$MEMLIM")
CONTROL_LIVENESS_CFLAGS=(-O1 -DNFAIR=4 -DNOREDUCE "-DMEMLIM=$MEMLIM")
SAFETY_RUN=(-m100000 -w24)
LIVENESS_RUN=(-m200000 -w24)

# Output markers of pan that mean "this search did not cover the whole state space".
TRUNCATION_RE='Search not completed|max search depth too small|reached -DMEMLIM bound|Interrupted|out of memory'

FAILURES=0
PARTIALS=0
say() { printf '%s\n' "$*"; }
fail() { say "FAIL $*"; FAILURES=$((FAILURES + 1)); }

# --- preflight --------------------------------------------------------------------------------------------
for tool in spin gcc timeout; do
    command -v "$tool" >/dev/null 2>&1 || { say "FAIL preflight: '$tool' not found (apt-get install spin gcc)"; exit 2; }
done
SPIN_VERSION=$(spin -V 2>&1 | head -n1)
say "spin: $SPIN_VERSION"
case "$SPIN_VERSION" in *"Version 6.5."*) ;; *) say "warning: verified with SPIN 6.5.2 only" ;; esac
for n in "$FULL_TIMEOUT" "$CONTROL_TIMEOUT" "$MEMLIM" "$JOBS"; do
    [[ "$n" =~ ^[0-9]+$ ]] || { say "FAIL preflight: numeric setting expected, got '$n'"; exit 2; }
done
((JOBS >= 1)) || JOBS=1

WORK=$(mktemp -d "${TMPDIR:-/tmp}/switchyard-spin.XXXXXX")
cleanup() {
    if [[ "$KEEP" == 1 ]]; then say "work directory kept: $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- helpers ----------------------------------------------------------------------------------------------
# prepare DIR FLAGS...: copy the model (and scenario) into DIR and run `spin -a` there with the -D flags.
prepare() {
    local dir=$1; shift
    mkdir -p "$dir"
    cp "$SPEC_DIR/$MODEL" "$SPEC_DIR/$SCENARIO" "$dir/"
    local src=$MODEL
    [[ "${PREPARE_SOURCE:-}" ]] && src=$PREPARE_SOURCE
    (cd "$dir" && spin "$@" -a "$src" >spin-a.log 2>&1) || { cat "$dir/spin-a.log" >&2; return 1; }
}

# build DIR CFLAGS...: compile pan in DIR.
build() {
    local dir=$1; shift
    (cd "$dir" && gcc "$@" -o pan pan.c >gcc.log 2>&1) || { cat "$dir/gcc.log" >&2; return 1; }
}

# run_pan DIR BUDGET LOG ARGS...: run ./pan in DIR with a SIGINT wall-clock budget (0 = none). SIGINT makes
# pan print its statistics and "Interrupted"; SIGTERM would kill it silently.
run_pan() {
    local dir=$1 budget=$2 log=$3; shift 3
    local rc=0
    if [[ "$budget" == 0 ]]; then
        (cd "$dir" && ./pan "$@" >"$log" 2>&1) || rc=$?
    else
        (cd "$dir" && timeout -s INT --kill-after=60 "$budget" ./pan "$@" >"$log" 2>&1) || rc=$?
    fi
    echo "$rc" >"$log.rc"
}

stat_of() { # stat_of LOG -> "N states, depth D"
    local log=$1 states depth
    states=$(sed -nE '/^ *[0-9.e+]+ states, stored/{s/^ *([0-9.e+]+) states, stored.*/\1/p;q}' "$log")
    depth=$(sed -nE '/depth reached [0-9]+/{s/.*depth reached ([0-9]+).*/\1/p;q}' "$log")
    printf '%s states, depth %s' "${states:-?}" "${depth:-?}"
}

first_error() { grep -m1 -E '^pan:[0-9]+: ' "$1" || true; }

# classify LOG KIND [PROPERTY] -> prints "PASS|PARTIAL|FAIL <detail>"; KIND is safety or liveness.
classify() {
    local log=$1 kind=$2 prop=${3:-}
    local err; err=$(first_error "$log")
    if [[ -n "$err" ]]; then echo "FAIL $err"; return; fi
    if ! grep -qE '^State-vector .* errors: 0$' "$log"; then
        echo "FAIL no 'errors: 0' in pan output (crashed or killed?)"; return
    fi
    if ! grep -q '^Full statespace search for:' "$log"; then
        echo "FAIL not an exhaustive search (no 'Full statespace search for:' header)"; return
    fi
    if [[ "$kind" == safety ]]; then
        if ! grep -qE 'never claim[[:space:]]+- \(not selected\)' "$log" || ! grep -qE 'invalid end states[[:space:]]+\+' "$log"; then
            echo "FAIL safety run without deadlock check or with a claim"; return
        fi
    else
        if ! grep -qE "never claim[[:space:]]+\+ \($prop\)" "$log" || ! grep -qE 'acceptance[[:space:]]+cycles[[:space:]]+\+ \(fairness enabled\)' "$log"; then
            echo "FAIL liveness run did not check claim $prop with fairness"; return
        fi
    fi
    if grep -qE "$TRUNCATION_RE" "$log"; then
        echo "PARTIAL $(grep -m1 -oE "$TRUNCATION_RE" "$log"); errors 0 so far; $(stat_of "$log")"; return
    fi
    local warnings; warnings=$(grep -iE 'warning' "$log" | grep -viE 'only one claim' || true)
    if [[ -n "$warnings" ]]; then
        echo "FAIL unexpected warning: ${warnings%%$'\n'*}"; return
    fi
    echo "PASS $(stat_of "$log")"
}

# replay DIR SOURCE FLAGS...: write the counterexample trail as ACT lines into DIR/trail.txt.
replay() {
    local dir=$1 src=$2; shift 2
    (cd "$dir" && spin -t -p -g "$@" "$src" >trail-full.txt 2>&1 || true)
    grep -E 'ACT |START OF CYCLE|text of failed assertion' "$dir/trail-full.txt" | sed -E 's/^ +//' >"$dir/trail.txt" || true
}

elapsed_since() { echo $(( $(date +%s) - $1 )); }

report() { # report LABEL VERDICT-LINE SECONDS
    local label=$1 verdict=$2 secs=$3
    case "$verdict" in
        PASS*) say "PASS $label: ${verdict#PASS } (${secs} s)" ;;
        PARTIAL*) say "PARTIAL $label: ${verdict#PARTIAL } (${secs} s)"; PARTIALS=$((PARTIALS + 1))
                  if [[ "$REQUIRE_FULL" == 1 ]]; then
                      fail "$label: SWITCHYARD_SPIN_REQUIRE_FULL=1 and the search was bounded"
                  fi ;;
        *) fail "$label: ${verdict#FAIL } (${secs} s)" ;;
    esac
}

# --- 1. consistency of controls, flags and mapping ---------------------------------------------------------
say "== consistency"
mapfile -t CFG_NAMES < <(cd "$SPEC_DIR" && ls weak-*.cfg 2>/dev/null | sed -E 's/^weak-(.*)\.cfg$/\1/' | sort)
mapfile -t MAP_NAMES < <(printf '%s\n' "${!MAPPING[@]}" | sort)
mapfile -t MODEL_FLAGS < <(grep -oE '^#ifdef WEAK_[A-Z_]+' "$SPEC_DIR/$MODEL" | sed 's/^#ifdef //' | sort -u)
mapfile -t MODEL_LTL < <(grep -oE '^ltl [A-Za-z0-9_]+' "$SPEC_DIR/$MODEL" | sed 's/^ltl //' | sort)
mapfile -t MODEL_INVS < <(grep -oE 'assert\(!(TypeInvariant|Inv[0-9]+[A-Za-z]+)\)' "$SPEC_DIR/$MODEL" |
                          sed -E 's/assert\(!(.*)\)/\1/' | sort -u)
consistent=1
if [[ "$(printf '%s\n' "${CFG_NAMES[@]}")" != "$(printf '%s\n' "${MAP_NAMES[@]}")" ]]; then
    fail "consistency: weak-*.cfg files {${CFG_NAMES[*]}} differ from the mapping {${MAP_NAMES[*]}}"; consistent=0
fi
if ((${#MAP_NAMES[@]} != 21)); then fail "consistency: ${#MAP_NAMES[@]} mapped controls, expected 21"; consistent=0; fi
declare -A CFG_FLAG CFG_EXPECT
cfg_flags=()
for name in "${CFG_NAMES[@]}"; do
    f="$SPEC_DIR/weak-$name.cfg"
    flag=$(sed -nE 's/^FLAG=([A-Z_]+)[[:space:]]*$/\1/p' "$f")
    expect=$(sed -nE 's/^EXPECT=([A-Za-z0-9_:|]+)[[:space:]]*$/\1/p' "$f")
    want_flag="WEAK_$(echo "$name" | tr 'a-z-' 'A-Z_')"
    if [[ "$(grep -cE '^FLAG=' "$f")" != 1 || "$(grep -cE '^EXPECT=' "$f")" != 1 ]]; then
        fail "consistency: weak-$name.cfg must have exactly one FLAG= and one EXPECT= line"; consistent=0
    fi
    [[ "$flag" == "$want_flag" ]] || { fail "consistency: weak-$name.cfg FLAG=$flag, expected $want_flag"; consistent=0; }
    [[ "$expect" == "${MAPPING[$name]:-}" ]] ||
        { fail "consistency: weak-$name.cfg EXPECT=$expect but check.sh maps '${MAPPING[$name]:-<none>}'"; consistent=0; }
    CFG_FLAG[$name]=$flag
    CFG_EXPECT[$name]=$expect
    cfg_flags+=("$flag")
    if [[ "$expect" == PROPERTY:* ]]; then
        p=${expect#PROPERTY:}
        [[ " ${LIVENESS[*]} " == *" $p "* && "$p" != *"|"* ]] ||
            { fail "consistency: weak-$name.cfg must name exactly one liveness property, got '$p'"; consistent=0; }
    else
        IFS='|' read -r -a alts <<<"$expect"
        for a in "${alts[@]}"; do
            [[ " ${INVARIANTS[*]} " == *" $a "* ]] ||
                { fail "consistency: weak-$name.cfg names unknown invariant '$a'"; consistent=0; }
        done
    fi
done
if [[ "$(printf '%s\n' "${cfg_flags[@]}" | sort -u)" != "$(printf '%s\n' "${MODEL_FLAGS[@]}")" ]]; then
    fail "consistency: model flags {${MODEL_FLAGS[*]}} differ from the cfg flags {${cfg_flags[*]}}"; consistent=0
fi
for flag in "${MODEL_FLAGS[@]}"; do
    n=${flag#WEAK_}
    uses=$(grep -vE "^#define W_${n} " "$SPEC_DIR/$MODEL" | grep -cE "W_${n}([^A-Z_]|$)" || true)
    ((uses > 0)) ||
        { fail "consistency: flag $flag is declared but its W_${n} is never used by the model"; consistent=0; }
done
if [[ "$(printf '%s\n' "${LIVENESS[@]}" | sort)" != "$(printf '%s\n' "${MODEL_LTL[@]}")" ]]; then
    fail "consistency: ltl blocks {${MODEL_LTL[*]}} differ from {${LIVENESS[*]}}"; consistent=0
fi
if [[ "$(printf '%s\n' "${INVARIANTS[@]}" | sort)" != "$(printf '%s\n' "${MODEL_INVS[@]}")" ]]; then
    fail "consistency: monitor assertions {${MODEL_INVS[*]}} differ from {${INVARIANTS[*]}}"; consistent=0
fi
grep -qE 'timeout && !QUIESCED -> assert\(!Deadlock\)' "$SPEC_DIR/$MODEL" ||
    { fail "consistency: the monitor's Deadlock check is missing"; consistent=0; }
# side_model_consistency FILE PREFIX LABEL MAPPING-ENTRIES...: the model's PREFIX* flags and assertions agree
# with its mapping.
side_model_consistency() {
    local file=$1 prefix=$2 label=$3 entry flags; shift 3
    flags=$(grep -oE "^#ifdef ${prefix}[A-Z_]+" "$SPEC_DIR/$file" | sed 's/^#ifdef //' | sort -u || true)
    if [[ "$flags" != "$(printf '%s\n' "$@" | cut -d'|' -f1 | sort)" ]]; then
        fail "consistency: $label flags {$(tr '\n' ' ' <<<"$flags")} differ from its mapping"; consistent=0
    fi
    for entry in "$@"; do
        grep -qE "assert\(!${entry#*|}\)" "$SPEC_DIR/$file" ||
            { fail "consistency: the $label has no assertion named ${entry#*|}"; consistent=0; }
    done
}
side_model_consistency "$CRASH_MODEL" CRASH_WEAK_ "crash model" "${CRASH_MAPPING[@]}"
side_model_consistency "$AHEAD_MODEL" AHEAD_WEAK_ "claim-ahead model" "${AHEAD_MAPPING[@]}"
((consistent)) && say "PASS consistency: ${#CFG_NAMES[@]} controls, ${#MODEL_FLAGS[@]} model flags, ${#MAP_NAMES[@]} mapping entries agree; ${#INVARIANTS[@]} invariants + Deadlock, ${#LIVENESS[@]} liveness properties"

# --- parallel job runner ---------------------------------------------------------------------------------
# Each job writes its verdict line to $WORK/<id>.verdict; results are printed in submission order.
JOB_IDS=()
submit() { # submit ID FUNCTION ARGS...
    local id=$1; shift
    while (($(jobs -rp | wc -l) >= JOBS)); do wait -n || true; done
    ( "$@" >"$WORK/$id.verdict" 2>"$WORK/$id.stderr" || echo "FAIL job error: $(tail -n3 "$WORK/$id.stderr" | tr '\n' ' ')" >"$WORK/$id.verdict" ) &
    JOB_IDS+=("$id")
}
wait_all() { wait || true; }

# --- 2. scripted stream-idle regression -------------------------------------------------------------------
job_regression() {
    local d=$WORK/regression t0; t0=$(date +%s)
    PREPARE_SOURCE=$SCENARIO prepare "$d" || { echo "FAIL spin -a $SCENARIO failed |0"; return; }
    build "$d" -O1 -DSAFETY -DNOCLAIM -DNOREDUCE "-DMEMLIM=$MEMLIM" || { echo "FAIL gcc failed |0"; return; }
    run_pan "$d" "$CONTROL_TIMEOUT" "$d/safety.log"
    local v; v=$(classify "$d/safety.log" safety)
    if [[ "$v" != PASS* ]]; then
        [[ -n "$(first_error "$d/safety.log")" ]] && replay "$d" "$SCENARIO" && v="$v; trail: $(tail -n2 "$d/trail.txt" | tr '\n' ' ')"
        echo "${v/#PARTIAL/FAIL bounded:} |$(elapsed_since "$t0")"; return
    fi
    local safety_stat=${v#PASS }
    rm -f "$d/pan"
    build "$d" -O1 -DNOREDUCE "-DMEMLIM=$MEMLIM" || { echo "FAIL gcc failed |0"; return; }
    run_pan "$d" "$CONTROL_TIMEOUT" "$d/live.log" -a
    if ! grep -qE 'never claim[[:space:]]+\+ \(ScriptFinishes\)' "$d/live.log" || [[ -n "$(first_error "$d/live.log")" ]] ||
       ! grep -qE 'errors: 0$' "$d/live.log" || grep -qE "$TRUNCATION_RE" "$d/live.log"; then
        echo "FAIL ScriptFinishes not proven: $(first_error "$d/live.log") |$(elapsed_since "$t0")"; return
    fi
    echo "PASS steady stream outlives request_total and stream_idle, silent stream killed as stream_idle; exhaustive ($safety_stat), ScriptFinishes holds |$(elapsed_since "$t0")"
}

# --- 3. full model, safety --------------------------------------------------------------------------------
job_full_safety() {
    local d=$WORK/full-safety t0; t0=$(date +%s)
    local spin_flags=() cflags=("${SAFETY_CFLAGS[@]}") run=("${SAFETY_RUN[@]}")
    if [[ "$FAITHFUL" == 1 ]]; then
        spin_flags=(-DFAITHFUL); cflags+=(-DCOLLAPSE); run=(-m100000 -w28)
    fi
    prepare "$d" "${spin_flags[@]}" || { echo "FAIL spin -a failed |0"; return; }
    build "$d" "${cflags[@]}" || { echo "FAIL gcc failed |0"; return; }
    run_pan "$d" "$FULL_TIMEOUT" "$d/pan.log" "${run[@]}"
    local v; v=$(classify "$d/pan.log" safety)
    if [[ "$v" == FAIL* && -n "$(first_error "$d/pan.log")" ]]; then
        replay "$d" "$MODEL" "${spin_flags[@]}"
        v="$v; trail: $(tr '\n' ' ' <"$d/trail.txt" | cut -c1-400)"
    fi
    echo "$v |$(elapsed_since "$t0")"
}

# --- 4. full model, liveness ------------------------------------------------------------------------------
LIVE_DIR=$WORK/full-liveness
job_liveness() {
    local p=$1 t0; t0=$(date +%s)
    local d=$WORK/live-$p
    mkdir -p "$d"
    cp "$LIVE_DIR/pan" "$LIVE_DIR/$MODEL" "$d/" || { echo "FAIL no liveness pan |0"; return; }
    run_pan "$d" "$FULL_TIMEOUT" "$d/pan.log" -a -f -N "$p" "${LIVENESS_RUN[@]}"
    local v; v=$(classify "$d/pan.log" liveness "$p")
    if [[ "$v" == FAIL* && -n "$(first_error "$d/pan.log")" ]]; then
        replay "$d" "$MODEL" -DENV_STUTTER
        v="$v; trail: $(tr '\n' ' ' <"$d/trail.txt" | cut -c1-400)"
    fi
    v=${v/ states,/ states stored,}
    local visited; visited=$(sed -nE '/states, stored \(/{s/.*states, stored \(([0-9.e+]+) visited\).*/\1/p;q}' "$d/pan.log")
    [[ -n "$visited" && "$v" != FAIL* ]] && v="$v, $visited visited"
    echo "$v |$(elapsed_since "$t0")"
}

# --- 5. negative controls ---------------------------------------------------------------------------------
job_invariant_control() {
    local name=$1 flag=$2 expect=$3 t0; t0=$(date +%s)
    local d=$WORK/control-$name
    prepare "$d" "-D$flag" || { echo "FAIL spin -a -D$flag failed |0"; return; }
    build "$d" "${CONTROL_CFLAGS[@]}" || { echo "FAIL gcc failed |0"; return; }
    run_pan "$d" "$CONTROL_TIMEOUT" "$d/pan.log"
    local log=$d/pan.log
    if grep -qE '^State-vector .* errors: 0$' "$log"; then
        echo "FAIL the weakening PASSED ($(stat_of "$log")): $flag removes nothing the invariants catch |$(elapsed_since "$t0")"; return
    fi
    local err; err=$(first_error "$log")
    [[ -n "$err" ]] || { echo "FAIL no counterexample in pan output |$(elapsed_since "$t0")"; return; }
    [[ -f "$d/$MODEL.trail" ]] || { echo "FAIL pan reported '$err' but wrote no trail |$(elapsed_since "$t0")"; return; }
    local got; got=$(sed -nE 's/^pan:[0-9]+: assertion violated +!\(([A-Za-z0-9_]+)\).*/\1/p' <<<"$err")
    [[ -n "$got" ]] || { echo "FAIL first error is not a named invariant: '$err' (expected $expect) |$(elapsed_since "$t0")"; return; }
    local depth; depth=$(sed -nE 's/.*\(at depth ([0-9]+)\).*/\1/p' <<<"$err")
    replay "$d" "$MODEL" "-D$flag"
    grep -qF "assert(!($got))" "$d/trail-full.txt" ||
        { echo "FAIL the trail does not replay to a violation of $got |$(elapsed_since "$t0")"; return; }
    local ok=0 a
    IFS='|' read -r -a alts <<<"$expect"
    for a in "${alts[@]}"; do [[ "$got" == "$a" ]] && ok=1; done
    ((ok)) || { echo "FAIL unexpected violation: $got (mapped: $expect) |$(elapsed_since "$t0")"; return; }
    local steps; steps=$(grep -c '^ACT ' "$d/trail.txt" || true)
    echo "PASS COUNTEREXAMPLE weak-$name: $got violated at depth $depth ($steps actions; BFS, $(stat_of "$log"))|$(elapsed_since "$t0")"
}

job_property_control() {
    local name=$1 flag=$2 prop=$3 t0; t0=$(date +%s)
    local d=$WORK/control-$name
    # (a) no invariant and no deadlock: exact exhaustive safety search with errors 0
    prepare "$d/safety" "-D$flag" || { echo "FAIL spin -a -D$flag failed |0"; return; }
    build "$d/safety" "${SAFETY_CFLAGS[@]}" || { echo "FAIL gcc failed |0"; return; }
    run_pan "$d/safety" "$CONTROL_TIMEOUT" "$d/safety/pan.log" "${SAFETY_RUN[@]}"
    local v; v=$(classify "$d/safety/pan.log" safety)
    [[ "$v" == PASS* ]] || { echo "FAIL $flag must violate no invariant, but safety gave: ${v} |$(elapsed_since "$t0")"; return; }
    local safety_stat=${v#PASS }
    # (b) an acceptance cycle for exactly the mapped property
    prepare "$d/live" -DENV_STUTTER "-D$flag" || { echo "FAIL spin -a -D$flag failed |0"; return; }
    build "$d/live" "${CONTROL_LIVENESS_CFLAGS[@]}" || { echo "FAIL gcc failed |0"; return; }
    run_pan "$d/live" "$CONTROL_TIMEOUT" "$d/live/pan.log" -a -f -N "$prop" "${LIVENESS_RUN[@]}"
    local log=$d/live/pan.log err; err=$(first_error "$log")
    grep -qE "never claim[[:space:]]+\+ \($prop\)" "$log" || { echo "FAIL liveness run did not check $prop |$(elapsed_since "$t0")"; return; }
    [[ "$err" == *"acceptance cycle"* ]] ||
        { echo "FAIL $prop was not violated (first error: '${err:-none}') |$(elapsed_since "$t0")"; return; }
    [[ -f "$d/live/$MODEL.trail" ]] || { echo "FAIL acceptance cycle without a trail |$(elapsed_since "$t0")"; return; }
    replay "$d/live" "$MODEL" -DENV_STUTTER "-D$flag"
    grep -q 'START OF CYCLE' "$d/live/trail.txt" || { echo "FAIL trail has no cycle |$(elapsed_since "$t0")"; return; }
    local depth; depth=$(sed -nE 's/.*\(at depth ([0-9]+)\).*/\1/p' <<<"$err")
    echo "PASS COUNTEREXAMPLE weak-$name: $prop violated (acceptance cycle at depth $depth); no invariant violated (exhaustive, $safety_stat)|$(elapsed_since "$t0")"
}

# --- 6. and 7. the crash model and the claim-ahead design model ------------------------------------------
job_side_safety() { # job_side_safety NAME MODEL-FILE
    local d=$WORK/$1-safety file=$2 t0; t0=$(date +%s)
    MODEL=$file prepare "$d" || { echo "FAIL spin -a $file failed |0"; return; }
    build "$d" "${SAFETY_CFLAGS[@]}" || { echo "FAIL gcc failed |0"; return; }
    run_pan "$d" "$CONTROL_TIMEOUT" "$d/pan.log" "${SAFETY_RUN[@]}"
    local v; v=$(classify "$d/pan.log" safety)
    if [[ "$v" == FAIL* && -n "$(first_error "$d/pan.log")" ]]; then
        replay "$d" "$file"
        v="$v; trail: $(tr '\n' ' ' <"$d/trail.txt" | cut -c1-400)"
    fi
    echo "${v/#PARTIAL/FAIL bounded:} |$(elapsed_since "$t0")"
}

# --- run --------------------------------------------------------------------------------------------------
T_START=$(date +%s)
say "== runs (jobs: $JOBS, full-model budget: ${FULL_TIMEOUT}s, memory limit: ${MEMLIM} MB)"

# The liveness pan is compiled once and shared by the four property runs.
if ! { prepare "$LIVE_DIR" -DENV_STUTTER && build "$LIVE_DIR" "${LIVENESS_CFLAGS[@]}"; }; then
    say "(the liveness build failed; the four liveness runs will fail)"
fi

submit regression job_regression
submit full-safety job_full_safety
for p in "${LIVENESS[@]}"; do submit "liveness-$p" job_liveness "$p"; done
for name in "${CFG_NAMES[@]}"; do
    [[ -n "${CFG_FLAG[$name]:-}" && -n "${CFG_EXPECT[$name]:-}" ]] || continue
    if [[ "${CFG_EXPECT[$name]}" == PROPERTY:* ]]; then
        submit "control-$name" job_property_control "$name" "${CFG_FLAG[$name]}" "${CFG_EXPECT[$name]#PROPERTY:}"
    else
        submit "control-$name" job_invariant_control "$name" "${CFG_FLAG[$name]}" "${CFG_EXPECT[$name]}"
    fi
done
submit crash-safety job_side_safety crash "$CRASH_MODEL"
for name in "${!CRASH_MAPPING[@]}"; do
    entry=${CRASH_MAPPING[$name]}
    MODEL=$CRASH_MODEL submit "crash-control-$name" job_invariant_control "$name" "${entry%|*}" "${entry#*|}"
done
submit ahead-safety job_side_safety ahead "$AHEAD_MODEL"
for name in "${!AHEAD_MAPPING[@]}"; do
    entry=${AHEAD_MAPPING[$name]}
    MODEL=$AHEAD_MODEL submit "ahead-control-$name" job_invariant_control "$name" "${entry%|*}" "${entry#*|}"
done
wait_all

declare -A ok_by_kind=([core-]=0 [crash-]=0 [ahead-]=0) # controls that produced their counterexample, by model
for id in "${JOB_IDS[@]}"; do
    line=$(cat "$WORK/$id.verdict" 2>/dev/null || echo "FAIL no verdict")
    verdict=${line%|*}
    verdict=${verdict% }
    secs=${line##*|}
    [[ "$secs" =~ ^[0-9]+$ ]] || secs="?"
    case "$id" in
        regression) report "regression StreamIdleRegression" "$verdict" "$secs" ;;
        full-safety) report "full$([[ "$FAITHFUL" == 1 ]] && echo ' (faithful: no dead-variable reset)')" "$verdict" "$secs" ;;
        liveness-*) report "liveness ${id#liveness-}" "$verdict" "$secs" ;;
        crash-safety) report "crash model $CRASH_MODEL" "$verdict" "$secs" ;;
        ahead-safety) report "claim-ahead design model $AHEAD_MODEL" "$verdict" "$secs" ;;
        *control-*) # control-NAME, crash-control-NAME, ahead-control-NAME
            kind=${id%%control-*}; kind=${kind:-core-}
            if [[ "$verdict" == PASS* ]]; then
                say "${verdict#PASS } (${secs} s)"; ok_by_kind[$kind]=$((ok_by_kind[$kind] + 1))
            else
                label="${kind%-} "; [[ "$kind" == core- ]] && label=""
                fail "${label}control ${id#*control-}: ${verdict#FAIL } (${secs} s)"
            fi ;;
    esac
done

controls_ok=${ok_by_kind[core-]} crash_ok=${ok_by_kind[crash-]} ahead_ok=${ok_by_kind[ahead-]}
if ((controls_ok == ${#MAP_NAMES[@]} && controls_ok == ${#CFG_NAMES[@]})); then
    say "PASS weakenings: $controls_ok mapped counterexample-producing negative controls."
else
    fail "weakenings: $controls_ok of ${#MAP_NAMES[@]} mapped controls produced their mapped counterexample"
fi

if ((crash_ok == ${#CRASH_MAPPING[@]})); then
    say "PASS crash weakenings: $crash_ok counterexample-producing negative controls of $CRASH_MODEL."
else
    fail "crash weakenings: $crash_ok of ${#CRASH_MAPPING[@]} crash controls produced their mapped counterexample"
fi

if ((ahead_ok == ${#AHEAD_MAPPING[@]})); then
    say "PASS claim-ahead weakenings: $ahead_ok counterexample-producing negative controls of $AHEAD_MODEL."
else
    fail "claim-ahead weakenings: $ahead_ok of ${#AHEAD_MAPPING[@]} controls produced their mapped counterexample"
fi

say "== total $(elapsed_since "$T_START") s; failures: $FAILURES; partial: $PARTIALS"
((FAILURES == 0))
