#!/usr/bin/env bash
# Installs the MCP test peers that the mcpmux test suite needs, into folders of
# this checkout only (never globally):
#
#   tests/peers/node_modules/   npm peers, from tests/peers/package-lock.json
#                               (@modelcontextprotocol/server-everything, pinned)
#   .deps/debian/               HAProxy and nginx, Debian's packages unpacked
#                               (apt-get download + dpkg-deb -x, no root
#                               needed once the package lists exist)
#   .deps/venv/                 Python venv with the official MCP SDK, from
#                               tests/requirements.txt (mcp[ws] and websockets,
#                               pinned)
#
# Idempotent; a second run only checks stamps and returns in well under a
# second. Works from any current directory.
#
# server-everything over stdio (verified with 2026.8.31; dist/index.js takes the
# transport as its first argument, "stdio" is also the default when omitted):
#
#   node tests/peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js stdio
#
# The tasks extension's peer (tests/servers/rmcp-tasks, official Rust SDK):
#
#   $CARGO_TARGET_DIR/debug/rmcp-tasks-server   (target/ by default)
#
# FastMCP peer (official Python SDK):
#
#   .deps/venv/bin/python tests/servers/fastmcp_server.py
#
# Options:
#   --verify   after installing, run an initialize + tools/list handshake
#              against both peers (tests/servers/probe.py) and print the names.
#
# Env:
#   PYTHON     interpreter used to create the venv (default: python3; >= 3.10)
set -euo pipefail

verify=0
for arg in "$@"; do
  case "$arg" in
    --verify) verify=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup.sh: unknown argument: $arg" >&2; exit 2 ;;
  esac
done

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TESTS="$ROOT/tests"
PEERS="$TESTS/peers"
EVERYTHING_DIR="$PEERS/node_modules/@modelcontextprotocol/server-everything"
EVERYTHING_ENTRY="$EVERYTHING_DIR/dist/index.js"
DEPS="$ROOT/.deps"
VENV="$DEPS/venv"
VENV_PY="$VENV/bin/python"
REQS="$TESTS/requirements.txt"
PY_STAMP="$VENV/.mcpmux-requirements.sha256"
NPM_STAMP="$PEERS/node_modules/.mcpmux-lock.sha256"

log() { printf 'setup.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
sha() { sha256sum "$1" | cut -d' ' -f1; }

# ---------------------------------------------------------------- npm peers
command -v node >/dev/null 2>&1 || die "node not found (server-everything needs Node.js >= 20)"
command -v npm  >/dev/null 2>&1 || die "npm not found"
node_major="$(node -p 'process.versions.node.split(".")[0]')"
[ "$node_major" -ge 20 ] || die "Node.js >= 20 needed, found $(node --version)"

lock_sha="$(sha "$PEERS/package-lock.json")"
npm_needed=0
if [ ! -f "$EVERYTHING_ENTRY" ]; then
  npm_needed=1
elif [ ! -f "$NPM_STAMP" ] || [ "$PEERS/package-lock.json" -nt "$NPM_STAMP" ]; then
  # The lock is newer than the last install (or there is no record of it);
  # a fresh checkout also touches the lock, so compare contents before redoing.
  if [ "$(cat "$NPM_STAMP" 2>/dev/null || true)" != "$lock_sha" ]; then
    npm_needed=1
  else
    touch "$NPM_STAMP"
  fi
fi
if [ "$npm_needed" = 1 ]; then
  log "installing npm peers (npm ci) into $PEERS/node_modules"
  npm ci --prefix "$PEERS" --no-audit --no-fund --loglevel=error >&2
  [ -f "$EVERYTHING_ENTRY" ] || die "npm ci finished but $EVERYTHING_ENTRY is missing"
  printf '%s\n' "$lock_sha" > "$NPM_STAMP"
else
  log "npm peers up to date"
fi

# ---------------------------------------------------------------- Python venv
PYTHON="${PYTHON:-python3}"
reqs_sha="$(sha "$REQS")"
py_needed=0
if [ ! -x "$VENV_PY" ] || ! "$VENV_PY" -c 'import sys' >/dev/null 2>&1; then
  # Missing, or broken (e.g. the interpreter it was made from went away).
  command -v "$PYTHON" >/dev/null 2>&1 || die "$PYTHON not found (need Python >= 3.10)"
  "$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' \
    || die "Python >= 3.10 needed for the mcp SDK, found $("$PYTHON" --version 2>&1)"
  log "creating venv $VENV"
  rm -rf "$VENV"
  mkdir -p "$DEPS"
  "$PYTHON" -m venv "$VENV"
  py_needed=1
elif [ "$(cat "$PY_STAMP" 2>/dev/null || true)" != "$reqs_sha" ]; then
  py_needed=1
fi
if [ "$py_needed" = 1 ]; then
  log "installing $REQS into $VENV"
  rm -f "$PY_STAMP"
  PIP_DISABLE_PIP_VERSION_CHECK=1 "$VENV_PY" -m pip install --quiet -r "$REQS" >&2
  "$VENV_PY" -c 'import mcp.server.fastmcp' || die "mcp SDK not importable after install"
  "$VENV_PY" -c 'import websockets, mcp.server.websocket' \
    || die "websockets (mcp[ws]) not importable after install"
  printf '%s\n' "$reqs_sha" > "$PY_STAMP"
else
  log "python venv up to date"
fi

# Fault servers are run directly by path too; keep them executable.
for f in exit_during_init hang_in_init crash_mid_call hang garbage_stdout huge_line \
         ignore_sigterm slow_init probe closes_stdin; do
  [ -x "$TESTS/servers/$f.py" ] || chmod +x "$TESTS/servers/$f.py"
done

# ---------------------------------------------------------------- rmcp tasks server
# The 2026-07-28 tasks extension's peer, on the official Rust SDK (rmcp),
# outside the workspace: built into the one target directory. Cargo's own
# fingerprints make a second run a no-op.
RMCP_TASKS="${CARGO_TARGET_DIR:-$ROOT/target}/debug/rmcp-tasks-server"
log "building tests/servers/rmcp-tasks (rmcp-tasks-server)"
CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}" \
  cargo build --quiet --locked --manifest-path "$TESTS/servers/rmcp-tasks/Cargo.toml" >&2
[ -x "$RMCP_TASKS" ] || die "cargo build finished but $RMCP_TASKS is missing"

# ---------------------------------------------------------------- Debian peers
# The balancers of the gateway fleet tests (HAProxy, nginx), Debian's
# packages unpacked into .deps/debian (never installed system-wide): the
# binaries under .deps/debian/usr/sbin, their libraries under
# .deps/debian/usr/lib/x86_64-linux-gnu (tests set LD_LIBRARY_PATH).
DEBIAN_ROOT="$DEPS/debian"
DEBIAN_PACKAGES="haproxy liblua5.3-0 libopentracing-c-wrapper0 libopentracing1 nginx"
DEBIAN_STAMP="$DEBIAN_ROOT/.mcpmux-packages"
if [ "$(cat "$DEBIAN_STAMP" 2>/dev/null || true)" != "$DEBIAN_PACKAGES" ] \
   || [ ! -x "$DEBIAN_ROOT/usr/sbin/haproxy" ] || [ ! -x "$DEBIAN_ROOT/usr/sbin/nginx" ]; then
  command -v apt-get >/dev/null 2>&1 || die "apt-get not found (HAProxy and nginx come from Debian's packages)"
  log "unpacking Debian's $DEBIAN_PACKAGES into $DEBIAN_ROOT"
  debs="$DEPS/debs"
  rm -rf "$debs" "$DEBIAN_ROOT"
  mkdir -p "$debs" "$DEBIAN_ROOT"
  # The package lists may be empty on a fresh machine: fetch them once.
  # shellcheck disable=SC2086
  if ! (cd "$debs" && apt-get download -qq $DEBIAN_PACKAGES >/dev/null 2>&1); then
    apt-get update -qq >&2
    (cd "$debs" && apt-get download -qq $DEBIAN_PACKAGES >&2)
  fi
  for deb in "$debs"/*.deb; do dpkg-deb -x "$deb" "$DEBIAN_ROOT"; done
  LD_LIBRARY_PATH="$DEBIAN_ROOT/usr/lib/x86_64-linux-gnu" "$DEBIAN_ROOT/usr/sbin/haproxy" -v >/dev/null \
    || die "HAProxy unpacked but does not run"
  "$DEBIAN_ROOT/usr/sbin/nginx" -v 2>/dev/null || die "nginx unpacked but does not run"
  rm -rf "$debs"
  printf '%s\n' "$DEBIAN_PACKAGES" > "$DEBIAN_STAMP"
else
  log "Debian peers up to date"
fi

# ---------------------------------------------------------------- verify
if [ "$verify" = 1 ]; then
  log "verifying server-everything over stdio"
  python3 "$TESTS/servers/probe.py" -- node "$EVERYTHING_ENTRY" stdio
  log "verifying the FastMCP server over stdio"
  python3 "$TESTS/servers/probe.py" -- "$VENV_PY" "$TESTS/servers/fastmcp_server.py"
fi

# ---------------------------------------------------------------- summary
mcp_version="$("$VENV_PY" -c 'import importlib.metadata as m; print(m.version("mcp"))')"
everything_version="$(node -p "require('$EVERYTHING_DIR/package.json').version")"
cat <<SUMMARY
repo root:             $ROOT
npm peers:             $PEERS/node_modules
server-everything:     $everything_version
  run (stdio):         node $EVERYTHING_ENTRY stdio
python venv:           $VENV
  python:              $VENV_PY (mcp $mcp_version)
fastmcp server:        $VENV_PY $TESTS/servers/fastmcp_server.py
fault servers:         $VENV_PY $TESTS/servers/<name>.py   (stdlib only; any python3 works)
rmcp tasks server:     $RMCP_TASKS   (add protocol_version = "2026-07-28")
haproxy, nginx:        $DEBIAN_ROOT/usr/sbin/{haproxy,nginx}   (LD_LIBRARY_PATH=$DEBIAN_ROOT/usr/lib/x86_64-linux-gnu)
SUMMARY
