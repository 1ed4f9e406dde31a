#!/usr/bin/env bash
# Switchyard's one entry point for a fresh Debian 12 machine.
#   tools/dev.sh run   install what is missing, build, start the app (tray; headless `serve` without a display)
#   tools/dev.sh test  install what is missing, build, run the whole test suite (ctest)
#   tools/dev.sh build install what is missing and build
#   tools/dev.sh sanitize  only the unit tests built with clang's ASan + UBSan (build-fuzz)
# `test` also runs the checked build (docs/TESTING.md): a fuzz smoke run (tools/fuzz.sh --smoke) and the unit
# tests, both from one clang ASan + UBSan build in build-fuzz. SWITCHYARD_CHECKED_BUILDS=0 leaves them out.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${SWITCHYARD_BUILD_DIR:-$here/build}
cmd=${1:-run}
shift || true

# Debian packages the build, the app and the tests need (ENV-NOTES lists why each is there).
# Never add dbus-x11: with it a keychain call without a session bus hangs on a password prompt.
packages=(cmake ninja-build g++ pkg-config git
    qt6-base-dev libqt6opengl6-dev qt6-charts-dev qt6-svg-dev libqt6sql6-sqlite libqt6sql6-psql libzstd-dev zlib1g-dev
    qtkeychain-qt6-dev qt6-l10n-tools qt6-tools-dev qt6-websockets-dev libhttp-parser-dev libsodium-dev libsimdjson-dev
    libtomlplusplus-dev libglib2.0-dev dbus gnome-keyring libsecret-1-0 libsecret-tools fonts-dejavu-core)
test_packages=(xvfb xauth trayer xdotool spin postgresql curl desktop-file-utils appstream dpkg-dev systemd
    clang-14 libclang-rt-14-dev locales)

install_missing() {
    local missing=()
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "installing: ${missing[*]}"
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "${missing[@]}"
}

# Refuses to start a build that cannot fit: a full `test` from a clean clone writes about 8 GiB (measured on
# 7 December: 7.8-7.9 GiB for build/, build-fuzz/ and tests/e2e/node_modules together), and running out of
# space shows up 20 minutes later as an unrelated failure (a compiler, or npm's ENOSPC while it unpacks
# opencode). With the build directory already there, an incremental build needs far less (the second figure).
# SWITCHYARD_SKIP_DISK_CHECK=1 skips the check.
check_disk() {
    local need_gib=$1 dir=$build
    [ "${SWITCHYARD_SKIP_DISK_CHECK:-0}" = 1 ] && return 0
    [ -d "$build" ] && need_gib=$2
    while [ ! -d "$dir" ]; do dir=$(dirname "$dir"); done
    local free_kib
    free_kib=$(df -Pk "$dir" 2>/dev/null | awk 'NR == 2 { print $4 }' || true)
    if [ -n "$free_kib" ] && [ "$free_kib" -lt $((need_gib * 1024 * 1024)) ]; then
        echo "not enough disk space: $((free_kib / 1024)) MiB free in $dir, about $need_gib GiB needed" \
            "(SWITCHYARD_SKIP_DISK_CHECK=1 tries anyway)" >&2
        exit 1
    fi
}

build_all() {
    cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    cmake --build "$build" -j "$(nproc)"
}

# The unit tests built with clang's ASan + UBSan in the fuzz build directory (tools/fuzz.sh configures it; core
# is compiled once for the fuzz targets and the unit tests), then `ctest -L unit` there. Any sanitizer report
# ends its test with a failure; leaks inside third-party libraries only are suppressed by tools/lsan.supp. A test
# that fails once gets one more run: the sanitizers slow everything down 2-3x, which some timing-based unit tests
# (tst_egress_faults) do not always absorb on a loaded machine; a sanitizer report fails the step regardless.
sanitize_unit_tests() {
    local dir=${SWITCHYARD_FUZZ_BUILD_DIR:-$here/build-fuzz}
    # (set -e does not apply inside a function run as a condition: every step returns on its own failure.)
    "$here/tools/fuzz.sh" --configure-only || return 1
    cmake --build "$dir" -j "$(nproc)" --target unit_tests || return 1
    local log="$dir/sanitized-unit-tests.log" status=0
    (cd "$dir" &&
        ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:abort_on_error=1 \
        LSAN_OPTIONS=suppressions=$here/tools/lsan.supp:print_suppressions=0 \
        UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        ctest --output-on-failure --no-tests=error -L unit -j "$(nproc)" --repeat until-pass:2) 2>&1 |
        tee "$log" || status=1
    # A report fails the step even when the retry passed.
    if grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$log"; then
        echo "sanitizer report in the unit tests (see $log)" >&2
        status=1
    fi
    return $status
}

# Runs one step, prints how long it took, remembers a failure and carries on with the next step.
failed_steps=()
timed_step() {
    local name=$1 start=$SECONDS
    shift
    echo "== $name"
    if "$@"; then
        echo "== $name: passed in $((SECONDS - start)) s"
    else
        echo "== $name: FAILED after $((SECONDS - start)) s" >&2
        failed_steps+=("$name")
    fi
}

case "$cmd" in
run)
    install_missing "${packages[@]}"
    check_disk 6 1
    build_all
    if [ -z "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
        echo "no display: starting the headless proxy (switchyard serve)"
        exec "$build/app/switchyard" serve "$@"
    fi
    exec "$build/app/switchyard" "$@"
    ;;
build)
    install_missing "${packages[@]}"
    check_disk 6 1
    build_all
    ;;
test)
    install_missing "${packages[@]}" "${test_packages[@]}"
    check_disk 9 3
    build_all
    # Real clients for the end-to-end tests, pinned by tests/e2e/package-lock.json; the npm cache stays
    # outside the clone.
    if command -v npm >/dev/null; then
        # `npm install --no-save` rather than `npm ci`: the lock file pins every package this platform uses, but
        # npm leaves opencode's other-platform optional packages out of it, which `npm ci` rejects.
        (cd "$here/tests/e2e" && npm install --no-save --no-audit --no-fund --loglevel=error)
    else
        echo "npm not found: the end-to-end tests with real clients will fail" >&2
    fi
    timed_step "test suite (ctest)" \
        bash -c 'cd "$1" && shift && ctest --output-on-failure --no-tests=error -j "$(nproc)" "$@"' _ "$build" "$@"
    if [ "${SWITCHYARD_CHECKED_BUILDS:-1}" != 0 ]; then
        timed_step "fuzz smoke run (tools/fuzz.sh --smoke)" "$here/tools/fuzz.sh" --smoke
        timed_step "unit tests with ASan + UBSan (build-fuzz)" sanitize_unit_tests
    fi
    if [ ${#failed_steps[@]} -gt 0 ]; then
        echo "failed: ${failed_steps[*]}" >&2
        exit 1
    fi
    ;;
sanitize)
    install_missing "${packages[@]}" "${test_packages[@]}"
    sanitize_unit_tests
    ;;
*)
    echo "usage: tools/dev.sh run|build|test|sanitize" >&2
    exit 2
    ;;
esac
