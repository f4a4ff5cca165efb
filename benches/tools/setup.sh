#!/usr/bin/env bash
# Installs the nine public MCP servers of the `tools` bench, into folders of
# this checkout only (never globally):
#
#   benches/tools/node_modules/   filesystem, memory, sequential-thinking and
#                                 everything, from benches/tools/package-lock.json
#   .deps/bench-tools-venv/       time, git and fetch, from
#                                 benches/tools/requirements.txt
#   .deps/bench-tools-mcp1-venv/
#                                 sqlite and calculator (they need mcp < 2), from
#                                 benches/tools/requirements-mcp1.txt
#
# Idempotent: a second run only checks stamps. Needs the registries (npm,
# PyPI) on the first run only. Env: PYTHON (default python3, >= 3.10).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
sha() { sha256sum "$1" | cut -d' ' -f1; }

npm_stamp="$HERE/node_modules/.mcpmux-lock.sha256"
if [ "$(cat "$npm_stamp" 2>/dev/null || true)" != "$(sha "$HERE/package-lock.json")" ]; then
  (cd "$HERE" && npm ci --no-audit --no-fund --loglevel=error)
  sha "$HERE/package-lock.json" > "$npm_stamp"
fi

# venv REQUIREMENTS DIR: DIR with REQUIREMENTS installed, unless its stamp
# says they already are.
venv() {
  local stamp="$2/.mcpmux-requirements.sha256"
  if [ "$(cat "$stamp" 2>/dev/null || true)" != "$(sha "$1")" ]; then
    rm -rf "$2"
    "${PYTHON:-python3}" -m venv "$2"
    PIP_DISABLE_PIP_VERSION_CHECK=1 "$2/bin/python" -m pip install --quiet -r "$1"
    sha "$1" > "$stamp"
  fi
}
venv "$HERE/requirements.txt" "$ROOT/.deps/bench-tools-venv"
venv "$HERE/requirements-mcp1.txt" "$ROOT/.deps/bench-tools-mcp1-venv"
