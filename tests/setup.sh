#!/usr/bin/env bash
# Installs the MCP test peers that the mcpmux test suite needs, into folders of
# this checkout only (never globally):
#
#   tests/peers/node_modules/   npm peers, from tests/peers/package-lock.json
#                               (@modelcontextprotocol/server-everything, pinned)
#   .deps/debian/               HAProxy and nginx, Debian's packages unpacked
#                               (apt-get download + dpkg-deb -x, no root
#                               needed once the package lists exist)
#   .deps/chromium/             headless Chromium, Debian's chromium and the
#                               packages of its dependencies this machine lacks
#                               (plus fonts-dejavu-core) unpacked the same way;
#                               run it with .deps/chromium/run-chromium, drive
#                               it with tests/support/cdp.py
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
#              against both peers (tests/servers/probe.py) and print the names,
#              and drive Chromium once (tests/support/cdp_selftest.py).
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

# ---------------------------------------------------------------- headless Chromium
# The browser of the UI tests: Debian's chromium unpacked into .deps/chromium
# (never installed system-wide) together with the packages of its dependency
# closure that this machine lacks. The list is asked of apt at setup time (a
# simulated `apt-get install --no-install-recommends chromium`), so a slightly
# different image gets exactly what it lacks; the stamp records the packages
# and versions unpacked. fonts-dejavu-core comes along and .deps/chromium/
# fonts.conf uses it alone, so screenshots show the same text whatever fonts
# the machine has. Tests run .deps/chromium/run-chromium (sets LD_LIBRARY_PATH,
# FONTCONFIG_FILE, HOME and the XDG dirs, then execs the binary) and drive it
# with tests/support/cdp.py over --remote-debugging-pipe:
#
#   .deps/chromium/run-chromium --headless=new --no-sandbox --disable-gpu --dump-dom URL
CHROMIUM_ROOT="$DEPS/chromium"
CHROMIUM_BIN="$CHROMIUM_ROOT/usr/lib/chromium/chromium"
CHROMIUM_RUN="$CHROMIUM_ROOT/run-chromium"
CHROMIUM_STAMP="$CHROMIUM_ROOT/.mcpmux-packages"
# First line of the stamp; bump it when this block changes what it writes.
CHROMIUM_LAYOUT="mcpmux chromium layout 1"
# The packages apt would add (or upgrade) to install chromium here, plus the
# ones unpacked even when the machine has them. Fails when apt cannot resolve
# (e.g. empty package lists).
chromium_packages() {
  local sim
  sim="$(apt-get install -s -qq --no-install-recommends chromium fonts-dejavu-core 2>/dev/null)" || return 1
  { printf '%s\n' chromium chromium-common fonts-dejavu-core
    printf '%s\n' "$sim" | awk '$1 == "Inst" { print $2 }'
  } | sort -u | tr '\n' ' ' | sed 's/ $//'
}
if [ "$(head -n1 "$CHROMIUM_STAMP" 2>/dev/null || true)" != "$CHROMIUM_LAYOUT" ] \
   || [ ! -x "$CHROMIUM_BIN" ] || [ ! -x "$CHROMIUM_RUN" ]; then
  command -v apt-get >/dev/null 2>&1 || die "apt-get not found (Chromium comes from Debian's packages)"
  log "downloading Debian's chromium and the packages of its dependencies this machine lacks"
  debs="$DEPS/chromium-debs"
  rm -rf "$debs" "$CHROMIUM_ROOT"
  mkdir -p "$debs" "$CHROMIUM_ROOT"
  # The package lists may be empty (nothing resolves) or stale (downloads
  # 404) on a fresh machine: fetch them once.
  # shellcheck disable=SC2086
  if ! chromium_pkgs="$(chromium_packages)" \
     || ! (cd "$debs" && apt-get download -qq $chromium_pkgs >/dev/null 2>&1); then
    apt-get update -qq >&2
    chromium_pkgs="$(chromium_packages)" \
      || die "apt cannot resolve chromium (apt-get install -s --no-install-recommends chromium)"
    rm -f "$debs"/*.deb
    (cd "$debs" && apt-get download -qq $chromium_pkgs >&2)
  fi
  log "unpacking $chromium_pkgs into $CHROMIUM_ROOT"
  for deb in "$debs"/*.deb; do dpkg-deb -x "$deb" "$CHROMIUM_ROOT"; done
  rm -rf "$CHROMIUM_ROOT/usr/share/doc" "$CHROMIUM_ROOT/usr/share/man" "$CHROMIUM_ROOT/usr/share/locale"
  [ -x "$CHROMIUM_BIN" ] || die "chromium unpacked but $CHROMIUM_BIN is missing"
  # Every folder with shared libraries, but the browser's own (it loads those
  # by path) and GTK's modules.
  chromium_libdirs="$(cd "$CHROMIUM_ROOT" && find usr/lib \( -type f -o -type l \) -name 'lib*.so*' \
    -not -path 'usr/lib/chromium/*' -not -path '*/gtk-*' -printf '%h\n' | sort -u | tr '\n' ' ' | sed 's/ $//')"
  cat > "$CHROMIUM_ROOT/fonts.conf" <<'FONTS'
<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "urn:fontconfig:fonts.dtd">
<!-- Written by tests/setup.sh: only the fonts unpacked next to this file,
     so that pages render the same on every machine. -->
<fontconfig>
  <dir prefix="relative">usr/share/fonts</dir>
  <cachedir prefix="xdg">fontconfig</cachedir>
  <alias><family>sans-serif</family><prefer><family>DejaVu Sans</family></prefer></alias>
  <alias><family>serif</family><prefer><family>DejaVu Serif</family></prefer></alias>
  <alias><family>monospace</family><prefer><family>DejaVu Sans Mono</family></prefer></alias>
</fontconfig>
FONTS
  sed "s|@LIBDIRS@|$chromium_libdirs|" > "$CHROMIUM_RUN" <<'RUN'
#!/bin/sh
# Written by tests/setup.sh: runs the Chromium unpacked next to this file with
# its libraries, its fonts (fonts.conf) and HOME and the XDG dirs in
# $MCPMUX_CHROMIUM_HOME when set (a caller's temporary folder; cdp.py sets it),
# else in home/ next to this file. Give each concurrent browser its own
# --user-data-dir. As root, Chromium needs --no-sandbox.
#
#   run-chromium --headless=new --no-sandbox --disable-gpu --dump-dom URL
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
lib=""
for d in @LIBDIRS@; do lib="$lib${lib:+:}$here/$d"; done
export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export FONTCONFIG_FILE="$here/fonts.conf"
unset FONTCONFIG_PATH
home="${MCPMUX_CHROMIUM_HOME:-$here/home}"
mkdir -p "$home/config" "$home/cache" "$home/data" "$home/runtime"
chmod 700 "$home/runtime"
export HOME="$home" XDG_CONFIG_HOME="$home/config" XDG_CACHE_HOME="$home/cache" \
  XDG_DATA_HOME="$home/data" XDG_RUNTIME_DIR="$home/runtime"
exec "$here/usr/lib/chromium/chromium" "$@"
RUN
  chmod +x "$CHROMIUM_RUN"
  ldpath=""
  for d in $chromium_libdirs; do ldpath="$ldpath${ldpath:+:}$CHROMIUM_ROOT/$d"; done
  missing="$({ LD_LIBRARY_PATH="$ldpath" ldd "$CHROMIUM_BIN" || true; } | awk '/not found/ { print $1 }' | sort -u | tr '\n' ' ')"
  [ -z "$missing" ] || die "chromium unpacked but these libraries are missing: $missing"
  dom="$(MCPMUX_CHROMIUM_HOME="$debs/home" timeout -k 5 60 "$CHROMIUM_RUN" --headless=new --no-sandbox \
    --disable-gpu --user-data-dir="$debs/profile" --dump-dom 'data:text/html,<p>mcpmux</p>' 2>/dev/null || true)"
  case "$dom" in
    *'<p>mcpmux</p>'*) ;;
    *) die "chromium unpacked but does not run headless (try: $CHROMIUM_RUN --headless=new --no-sandbox --disable-gpu --dump-dom 'data:text/html,<p>hi</p>')" ;;
  esac
  { printf '%s\n' "$CHROMIUM_LAYOUT"
    for deb in "$debs"/*.deb; do printf '%s=%s\n' "$(dpkg-deb -f "$deb" Package)" "$(dpkg-deb -f "$deb" Version)"; done
  } > "$CHROMIUM_STAMP"
  rm -rf "$debs"
else
  log "chromium up to date"
fi

# ---------------------------------------------------------------- verify
if [ "$verify" = 1 ]; then
  log "verifying server-everything over stdio"
  python3 "$TESTS/servers/probe.py" -- node "$EVERYTHING_ENTRY" stdio
  log "verifying the FastMCP server over stdio"
  python3 "$TESTS/servers/probe.py" -- "$VENV_PY" "$TESTS/servers/fastmcp_server.py"
  log "verifying headless Chromium over the DevTools pipe"
  python3 "$TESTS/support/cdp_selftest.py"
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
chromium (headless):   $CHROMIUM_RUN --headless=new --no-sandbox --disable-gpu ...   (driver: tests/support/cdp.py)
SUMMARY
