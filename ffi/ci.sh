#!/usr/bin/env bash
# The C ABI suite (ffi/): tests/run.sh calls it; it also runs alone.
#
#   1. builds libmcpmux (.so, .a) and the binaries the tests start
#      (mcpmux-demo-server, mcpmux);
#   2. cargo test -p mcpmux-ffi: Rust unit tests, header drift (regenerates
#      include/mcpmux.h with cbindgen and diffs), the header alone as C99 and
#      C++ with -Wall -Werror, version macros vs Cargo.toml and
#      mcpmux_version(), the C programs of tests/c/ against the demo server,
#      server-everything and the fault servers, the C example (shared and
#      static), and JSON parity with `mcpmux --json`;
#   3. builds examples/c/hello.c with the exact `cc` line of ffi/README.md;
#   4. runs every C test under valgrind (memcheck) and requires
#      "definitely lost: 0 bytes" and no memory errors; a canary that leaks
#      on purpose must be caught.
#
# Installs what it needs into folders of this checkout: the test peers
# (tests/setup.sh) and, only when the machine has no valgrind, Debian's
# valgrind package unpacked under .deps/valgrind. Idempotent.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
LIB_DIR="$CARGO_TARGET_DIR/debug"
WORK="$CARGO_TARGET_DIR/ffi-ci"
PROGRAMS=(test_basic test_errors test_async test_crash test_everything test_session test_policy test_events test_reload test_requests test_network test_tasks test_tasks_ext test_events_ext test_pins test_contract test_apps)

step() { printf '\n==> ffi: %s\n' "$*"; }
die() { printf 'ffi/ci.sh: error: %s\n' "$*" >&2; exit 1; }

step "test peers (tests/setup.sh)"
bash tests/setup.sh

step "cargo build -p mcpmux-ffi -p mcpmux-demo-server -p mcpmux-cli"
cargo build --locked -p mcpmux-ffi -p mcpmux-demo-server -p mcpmux-cli
for f in libmcpmux.so libmcpmux.a mcpmux-demo-server mcpmux; do
  [ -f "$LIB_DIR/$f" ] || die "$LIB_DIR/$f was not built"
done

step "cargo test -p mcpmux-ffi (header drift, C99/C++ header, version, C programs, CLI parity)"
cargo test --locked -p mcpmux-ffi

rm -rf "$WORK"
mkdir -p "$WORK/tmp"

step "examples/c/hello.c with the cc line of ffi/README.md"
line="$(grep -m1 -E '^cc .*examples/c/hello\.c' ffi/README.md)" || die "no cc line for examples/c/hello.c in ffi/README.md"
line="${line//target\/debug/$LIB_DIR}"
line="${line//-o hello/-o $WORK/hello}"
echo "$line"
bash -c "$line"
MCPMUX_DEMO_SERVER="$LIB_DIR/mcpmux-demo-server" "$WORK/hello" examples/mcpmux.toml | grep -q 'hello from C' \
  || die "the example did not print its tool result"

step "valgrind"
VALGRIND="$(command -v valgrind || true)"
if [ -z "$VALGRIND" ]; then
  # Not on this machine: unpack Debian's package into the checkout.
  VG_DIR="$ROOT/.deps/valgrind"
  if [ ! -x "$VG_DIR/usr/bin/valgrind" ]; then
    mkdir -p "$ROOT/.deps/debs"
    (cd "$ROOT/.deps/debs" && { apt-get download valgrind || { apt-get update -qq && apt-get download valgrind; }; })
    rm -rf "$VG_DIR"
    dpkg -x "$(ls -t "$ROOT"/.deps/debs/valgrind_*.deb | head -1)" "$VG_DIR"
  fi
  export VALGRIND_LIB="$VG_DIR/usr/libexec/valgrind"
  VALGRIND="$VG_DIR/usr/bin/valgrind"
fi
"$VALGRIND" --version

export MCPMUX_DEMO_SERVER="$LIB_DIR/mcpmux-demo-server"
export MCPMUX_PYTHON="$ROOT/.deps/venv/bin/python"
export MCPMUX_SERVERS_DIR="$ROOT/tests/servers"
export MCPMUX_EVERYTHING="$ROOT/tests/peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
export MCPMUX_NODE="$(command -v node)"
export MCPMUX_RMCP_TASKS="$CARGO_TARGET_DIR/debug/rmcp-tasks-server"
export MCPMUX_TEST_TMP="$WORK/tmp"
export MCPMUX_TEST_SLOW=20

compile() { # name
  cc -std=c99 -Wall -Wextra -Werror -g -Iinclude "tests/c/$1.c" -o "$WORK/$1" \
    -L"$LIB_DIR" -Wl,-rpath,"$LIB_DIR" -lmcpmux -lpthread
}

# Runs a program under memcheck; prints "definitely lost" bytes (or 0 when
# valgrind says no leaks are possible); the program's own exit status and
# memory errors fail the run through --error-exitcode.
memcheck() { # name
  local log="$WORK/$1.valgrind.log" rc=0
  "$VALGRIND" --leak-check=full --errors-for-leak-kinds=none --child-silent-after-fork=yes \
    --error-exitcode=99 --log-file="$log" "$WORK/$1" >"$WORK/$1.out" 2>&1 || rc=$?
  if [ "$rc" -ne 0 ]; then
    cat "$WORK/$1.out" "$log" >&2
    die "$1 under valgrind exited $rc (99: memory errors)"
  fi
  if grep -q 'All heap blocks were freed -- no leaks are possible' "$log"; then
    echo 0
  else
    local lost
    lost="$(sed -n 's/.*definitely lost: \([0-9,]*\) bytes.*/\1/p' "$log" | tr -d ,)"
    [ -n "$lost" ] || die "$1: no leak summary in $log"
    echo "$lost"
  fi
}

compile leak_canary
lost="$(memcheck leak_canary)"
[ "$lost" -gt 0 ] || die "the leak canary leaked on purpose but valgrind reported 'definitely lost: $lost bytes'"
echo "leak canary: definitely lost: $lost bytes (caught, as it should be)"

passed=0
failed=0
for t in "${PROGRAMS[@]}"; do
  compile "$t"
  start=$SECONDS
  lost="$(memcheck "$t")"
  summary="$(grep -E "^$t: [0-9]+ passed, 0 failed$" "$WORK/$t.out" || true)"
  if [ -n "$summary" ] && [ "$lost" = 0 ]; then
    passed=$((passed + 1))
    echo "ok - $summary; definitely lost: 0 bytes ($((SECONDS - start)) s under valgrind)"
  else
    failed=$((failed + 1))
    echo "not ok - $t under valgrind: definitely lost: $lost bytes; output:"
    cat "$WORK/$t.out"
    grep -A12 'definitely lost in' "$WORK/$t.valgrind.log" | head -60 || true
  fi
done
echo "valgrind: $passed passed, $failed failed"
[ "$failed" -eq 0 ] || exit 1
step "all passed"
