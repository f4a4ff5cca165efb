#!/usr/bin/env bash
# Test suite of the Node binding (called by tests/run.sh; runs on its own too).
#
#   1. test peers (tests/setup.sh: server-everything, the Python venv)
#   2. npm devDependencies into bindings/node/node_modules (npm ci, pinned by
#      package-lock.json; skipped when the lock's sha256 matches the stamp)
#   3. the addon, the demo server and the CLI, built with cargo into
#      $CARGO_TARGET_DIR (default <repo>/target); debug unless
#      MCPMUX_NODE_PROFILE=release
#   4. drift check: native.js / native.d.ts equal what napi-rs generates
#   5. node --test (test/*.test.js, test/*.test.mjs)
#   6. what users do: `npm install <repo>/bindings/node` from a fresh
#      project (its install script rebuilds the addon, removed first), then
#      require('mcpmux') and import { Hub } from 'mcpmux', and the examples
#      of examples/node run from that project
#
# Idempotent; everything goes into folders of the checkout except the
# temporary project of step 6. Exits non-zero on any failure.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
export MCPMUX_NODE_PROFILE="${MCPMUX_NODE_PROFILE:-debug}"
export MCPMUX_NODE_LOCKED=1
cd "$HERE"

step() { printf '\n==> node: %s\n' "$*"; }

step "test peers"
bash "$ROOT/tests/setup.sh"

step "npm devDependencies"
stamp="node_modules/.mcpmux-lock.sha256"
want="$(sha256sum package-lock.json | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  npm ci --ignore-scripts --no-audit --no-fund
  echo "$want" > "$stamp"
else
  echo "up to date"
fi

step "build ($MCPMUX_NODE_PROFILE): the addon, the demo server, the CLI"
node scripts/build.js
cargo build --locked -p mcpmux-demo-server -p mcpmux-cli

step "native.js and native.d.ts match napi-rs"
node scripts/build.js --check

step "node --test"
node --test test/*.test.js test/*.test.mjs

step "npm install <repo>/bindings/node from a fresh project"
project="$(mktemp -d "${TMPDIR:-/tmp}/mcpmux-node-install.XXXXXX")"
trap 'rm -rf "$project"' EXIT
cat > "$project/package.json" <<'EOF'
{ "name": "mcpmux-install-check", "version": "1.0.0", "private": true }
EOF
# The package's install script must build the addon: start without one.
rm -f "$HERE"/mcpmux.*.node
(cd "$project" && npm install "$HERE" --no-audit --no-fund --foreground-scripts)
if ! ls "$HERE"/mcpmux.*.node >/dev/null 2>&1; then
  echo "npm install did not run the package's install script (scripts/build.js)" >&2
  exit 1
fi
export MCPMUX_DEMO_SERVER="$CARGO_TARGET_DIR/debug/mcpmux-demo-server"
(cd "$project" && node -e '
  const { Hub, McpmuxError } = require("mcpmux")
  Hub.connect({ mcpServers: { demo: { command: process.env.MCPMUX_DEMO_SERVER } } }).then(async (hub) => {
    const r = await hub.callTool("mcp_demo_echo", { text: "installed" })
    if (r.content[0].text !== "installed") throw new Error("bad result " + JSON.stringify(r))
    await hub.callTool("nope").catch((e) => { if (!(e instanceof McpmuxError) || e.code !== "UNKNOWN_TOOL") throw e })
    await hub.close()
    console.log("require(\"mcpmux\"): ok")
  })
' && node --input-type=module -e '
  import { Hub } from "mcpmux"
  const hub = await Hub.connect({ mcpServers: { demo: { command: process.env.MCPMUX_DEMO_SERVER } } })
  const r = await hub.callTool("mcp_demo_echo", { text: "esm" })
  if (r.content[0].text !== "esm") throw new Error("bad result")
  await hub.close()
  console.log("import { Hub } from \"mcpmux\": ok")
')

step "examples/node, run from that project"
cp "$ROOT"/examples/node/*.mjs "$ROOT"/examples/node/*.cjs "$project/"
for example in basic.mjs cancel.mjs llm_tools.cjs session.mjs; do
  echo "--- $example"
  (cd "$project" && node "$example")
done

step "node binding: all passed"
