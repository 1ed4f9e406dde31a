#!/usr/bin/env bash
# One end-to-end scenario with a real client: fake upstream + `switchyard serve` with 3 imported accounts.
#   run.sh sdk|codex|codex-written|opencode|opencode-written
# Needs SWITCHYARD_BIN and SWITCHYARD_FAKE_UPSTREAM (ctest sets both) and a keychain (ctest wraps it in
# tools/with-keyring.sh). Exit 0 only when the client's answer arrived intact and every upstream turn is booked
# in our request log on the account whose token the upstream received.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
client=$1
work=$(mktemp -d /tmp/sy-e2e.XXXXXX)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if [ "${KEEP_E2E:-}" = "" ]; then rm -rf "$work"; else echo "kept $work"; fi
}
trap cleanup EXIT
export SWITCHYARD_DATA_DIR=$work/data SWITCHYARD_CONFIG_HOME=$work/config XDG_CONFIG_HOME=$work/config
[ -d "$here/node_modules/openai" ] || { echo "e2e clients are not installed: run 'npm ci' in tests/e2e" >&2; exit 1; }

wait_line() { # file pattern timeout_s
    for _ in $(seq 1 $(( $3 * 10 ))); do
        if grep -q "$2" "$1" 2>/dev/null; then grep -m1 "$2" "$1"; return 0; fi
        sleep 0.1
    done
    echo "timed out waiting for '$2' in $1:" >&2; cat "$1" >&2; return 1
}

"$SWITCHYARD_FAKE_UPSTREAM" --port 0 >"$work/fake.out" 2>"$work/fake.err" &
pids+=($!)
fake_port=$(wait_line "$work/fake.out" LISTENING 10 | awk '{print $2}')
fake_base=http://127.0.0.1:$fake_port
export SWITCHYARD_UPSTREAM_URL=$fake_base/backend-api

node "$here/lib/make-auth.mjs" "$work/auth" 3 >"$work/accounts.json"
for i in 1 2 3; do "$SWITCHYARD_BIN" accounts import "$work/auth/auth-$i.json" --alias "e2e$i"; done
"$SWITCHYARD_BIN" accounts list

"$SWITCHYARD_BIN" serve --listen 127.0.0.1:0 >"$work/serve.out" 2>"$work/serve.err" &
pids+=($!)
url=$(wait_line "$work/serve.out" 'serving on' 15 | grep -o 'http://[^ ]*')
export SWITCHYARD_URL=$url
echo "proxy at $url, fake upstream at $fake_base"

min=1
case "$client" in
sdk)
    node --test "$here/sdk.test.mjs"
    min=8
    ;;
codex)
    export CODEX_HOME=$work/codex SWITCHYARD_KEY=sk-local
    mkdir -p "$CODEX_HOME" "$work/proj"
    cat >"$CODEX_HOME/config.toml" <<TOML
model = "gpt-5-codex"
model_provider = "switchyard"

[model_providers.switchyard]
name = "Switchyard"
base_url = "$url/backend-api/codex"
wire_api = "responses"
env_key = "SWITCHYARD_KEY"
TOML
    for n in 1 2; do
        out=$(cd "$work/proj" && timeout 120 "$here/node_modules/.bin/codex" exec --skip-git-repo-check "ECHO: codex run $n ok" </dev/null 2>"$work/codex-$n.err") || {
            echo "codex exec failed:" >&2; cat "$work/codex-$n.err" >&2; exit 1; }
        echo "$out"
        grep -q "codex run $n ok" <<<"$out" || { echo "codex did not print the answer" >&2; cat "$work/codex-$n.err" >&2; exit 1; }
    done
    min=2
    ;;
codex-written)
    # The config `switchyard client-config codex --write` writes into an existing, commented config.toml.
    export CODEX_HOME=$work/codex SWITCHYARD_API_KEY=sk-local
    mkdir -p "$CODEX_HOME" "$work/proj"
    cat >"$CODEX_HOME/config.toml" <<'TOML'
# my settings: keep this comment
model = "gpt-5-codex"   # and this one
model_provider = "elsewhere"

[model_providers.elsewhere]
name = "Somewhere else"
base_url = "http://127.0.0.1:9/v1"
wire_api = "responses"

[tui]
notifications = false
TOML
    cp "$CODEX_HOME/config.toml" "$work/original.toml"
    port=${url##*:}
    "$SWITCHYARD_BIN" client-config codex --write --listen "127.0.0.1:$port"
    cmp -s "$CODEX_HOME/config.toml.switchyard-backup" "$work/original.toml" || { echo "no backup of the original" >&2; exit 1; }
    grep -q '^# my settings: keep this comment$' "$CODEX_HOME/config.toml" || { echo "comment lost" >&2; exit 1; }
    written=$(cat "$CODEX_HOME/config.toml")
    again=$("$SWITCHYARD_BIN" client-config codex --write --listen "127.0.0.1:$port")
    grep -q 'already' <<<"$again" || { echo "second --write was not a no-op: $again" >&2; exit 1; }
    [ "$(cat "$CODEX_HOME/config.toml")" = "$written" ] || { echo "second --write changed the file" >&2; exit 1; }
    out=$(cd "$work/proj" && timeout 120 "$here/node_modules/.bin/codex" exec --skip-git-repo-check "ECHO: written config ok" </dev/null 2>"$work/codex.err") || {
        echo "codex exec failed:" >&2; cat "$work/codex.err" >&2; cat "$CODEX_HOME/config.toml" >&2; exit 1; }
    echo "$out"
    grep -q "written config ok" <<<"$out" || { echo "codex did not print the answer" >&2; cat "$work/codex.err" >&2; exit 1; }
    "$SWITCHYARD_BIN" client-config codex --undo
    cmp "$CODEX_HOME/config.toml" "$work/original.toml" || { echo "--undo did not restore the original" >&2; exit 1; }
    min=1
    ;;
opencode-written)
    # OpenCode with the provider `switchyard client-config opencode --write` put into its global config.
    export OPENCODE_DISABLE_MODELS_FETCH=1 OPENCODE_DISABLE_AUTOUPDATE=1
    mkdir -p "$XDG_CONFIG_HOME/opencode" "$work/proj"
    printf '{ "autoupdate": false, "provider": { "other": { "name": "Other" } } }\n' >"$XDG_CONFIG_HOME/opencode/opencode.json"
    port=${url##*:}
    "$SWITCHYARD_BIN" client-config opencode --write --listen "127.0.0.1:$port"
    node -e 'const c=require(process.argv[1]); if (c.autoupdate!==false||!c.provider.other||!c.provider.switchyard) process.exit(1)' \
        "$XDG_CONFIG_HOME/opencode/opencode.json" || { echo "opencode.json lost other keys" >&2; exit 1; }
    out=$(cd "$work/proj" && timeout 180 "$here/node_modules/.bin/opencode" run -m switchyard/gpt-5 "ECHO: opencode written ok" 2>"$work/opencode.err") || {
        echo "opencode run failed:" >&2; tail -50 "$work/opencode.err" >&2; exit 1; }
    echo "$out"
    grep -q "opencode written ok" <<<"$out" || { echo "opencode did not print the answer" >&2; tail -50 "$work/opencode.err" >&2; exit 1; }
    "$SWITCHYARD_BIN" client-config opencode --undo
    node -e 'const c=require(process.argv[1]); if (c.provider.switchyard||!c.provider.other) process.exit(1)' \
        "$XDG_CONFIG_HOME/opencode/opencode.json" || { echo "--undo did not take the provider out" >&2; exit 1; }
    min=1
    ;;
opencode)
    export OPENCODE_DISABLE_MODELS_FETCH=1 OPENCODE_DISABLE_AUTOUPDATE=1
    mkdir -p "$work/proj"
    cat >"$work/proj/opencode.json" <<JSON
{
  "\$schema": "https://opencode.ai/config.json",
  "provider": {
    "syresp": { "npm": "@ai-sdk/openai", "name": "Switchyard (responses)",
                "options": { "baseURL": "$url/v1", "apiKey": "sk-local" }, "models": { "gpt-5": { "name": "gpt-5" } } },
    "sychat": { "npm": "@ai-sdk/openai-compatible", "name": "Switchyard (chat)",
                "options": { "baseURL": "$url/v1", "apiKey": "sk-local" }, "models": { "gpt-5": { "name": "gpt-5" } } }
  }
}
JSON
    for model in syresp/gpt-5 sychat/gpt-5; do
        before=$(curl -s "$fake_base/__control/log" | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).length))')
        out=$(cd "$work/proj" && timeout 180 "$here/node_modules/.bin/opencode" run -m "$model" "ECHO: opencode $model ok" 2>"$work/opencode.err") || {
            echo "opencode run -m $model failed:" >&2; tail -50 "$work/opencode.err" >&2; exit 1; }
        echo "$out"
        grep -q "opencode $model ok" <<<"$out" || { echo "opencode ($model) did not print the answer" >&2; tail -50 "$work/opencode.err" >&2; exit 1; }
        after=$(curl -s "$fake_base/__control/log" | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).length))')
        # One answer and (at most) one title request: a client that loops re-requesting would show many more.
        [ $((after - before)) -le 4 ] || { echo "opencode ($model) made $((after - before)) upstream requests: it re-requested" >&2; exit 1; }
    done
    min=2
    ;;
*) echo "unknown client $client" >&2; exit 2 ;;
esac

node "$here/lib/verify.mjs" "$work/accounts.json" "$fake_base" "$SWITCHYARD_BIN" "$min"
