#!/usr/bin/env bash
# The mcpmux demo: builds the CLI and the bundled demo MCP server, then
# connects, lists servers and tools, and calls a few tools.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
cargo build -q -p mcpmux-cli -p mcpmux-demo-server
export MCPMUX_DEMO_SERVER="$CARGO_TARGET_DIR/debug/mcpmux-demo-server"
mcpmux() { "$CARGO_TARGET_DIR/debug/mcpmux" --config examples/mcpmux.toml "$@"; }

run() { printf '\n$ mcpmux %s\n' "$*"; mcpmux "$@"; }
run servers
run tools
run call mcp_demo_echo '{"text": "hello from mcpmux"}'
run --json call mcp_demo_add '{"a": 2, "b": 40}'
run read demo://readme
run prompt greet '{"name": "Ada"}'
printf '\n$ mcpmux call mcp_demo_fail   # a tool error: printed, exit status 1\n'
mcpmux call mcp_demo_fail || echo "(exit status $?)"
