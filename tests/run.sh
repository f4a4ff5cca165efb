#!/usr/bin/env bash
# Runs every test of mcpmux. Installs what the tests need into folders of
# this checkout first (tests/setup.sh: npm peers, Python venv), then:
#   cargo fmt --check, clippy (-D warnings, which also compiles the benchmarks),
#   all workspace tests, the conformance suite, and each front end's suite.
#
#   bash tests/run.sh --quick   the quick tier: fmt, Markdown links, module
#                               cycles, clippy and the unit tests of every
#                               crate (no test peers installed, no servers).
# Benchmarks are not run here (they measure, they do not test): see
# docs/performance.md.
# One cargo target directory (./target, or $CARGO_TARGET_DIR) serves all.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
# Property tests (proptest) draw the same cases on every CI run; set
# PROPTEST_RNG_SEED yourself to explore others.
export PROPTEST_RNG_SEED="${PROPTEST_RNG_SEED:-20261129}"
# Review sessions sign their files with a per-user key under
# $XDG_STATE_HOME/mcpmux/ (docs/sessions.md, "Session files and trust"); the suites
# (Rust, C, Python, Node) use one of the build's, never the real home's.
export XDG_STATE_HOME="$CARGO_TARGET_DIR/test-state"
# Configs the user trusts (`mcpmux trust`) are recorded under
# $XDG_CONFIG_HOME/mcpmux/: the suites use one of the build's too.
export XDG_CONFIG_HOME="$CARGO_TARGET_DIR/test-config"
# A fresh clone gains nothing from incremental compilation, and its files
# were a fifth of the target directory: off under CI unless set.
if [ -n "${CI:-}" ]; then
  export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
fi

step() {
  printf '\n==> %s\n' "$*"
  # A CI machine's disk is the limit this suite meets first: each step says
  # what the target directory holds and what is left, so a failure names it.
  if [ -n "${CI:-}" ]; then
    printf '    (target %s, %s free)\n' \
      "$(du -sh "$CARGO_TARGET_DIR" 2>/dev/null | cut -f1 || echo '?')" \
      "$(df -h --output=avail "$ROOT" 2>/dev/null | tail -1 | tr -d ' ' || echo '?')"
  fi
}

# cargo_test ARGS: `cargo test ARGS`. Under CI the test binaries it built are
# deleted once they have run: there are about 100 of them at 40-60 MB each,
# nothing later runs them again, and together they were the largest part of
# the target directory. Locally they stay, so a rerun relinks nothing.
cargo_test() {
  if [ -z "${CI:-}" ]; then
    cargo test "$@"
    return
  fi
  local built
  built="$(cargo test --no-run --message-format=json-render-diagnostics "$@" | python3 -c '
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("reason") == "compiler-artifact" and msg["profile"]["test"] and msg.get("executable"):
        print(msg["executable"])
')"
  cargo test "$@"
  if [ -n "$built" ]; then
    xargs -d '\n' rm -f <<<"$built"
  fi
}

QUICK=""
case "${1:-}" in
  --quick) QUICK=1 ;;
  "") ;;
  *) echo "usage: bash tests/run.sh [--quick]" >&2; exit 2 ;;
esac

if [ -z "$QUICK" ]; then
  step "installing test peers"
  bash tests/setup.sh
fi

step "cargo fmt --check"
cargo fmt --all -- --check

step "Markdown links (tests/doc_links.py: every relative link and #anchor resolves)"
python3 tests/doc_links.py

step "module cycles (tests/module_cycles.py: Cargo keeps the crates in layers, this the modules inside each)"
python3 tests/module_cycles.py

step "cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

if [ -n "$QUICK" ]; then
  step "unit tests of every crate (cargo test --lib --bins)"
  cargo_test --workspace --lib --bins --locked
  step "quick tier passed"
  exit 0
fi

step "cargo build (the binaries the tests start: mcpmux, mcpmux-demo-server)"
cargo build --workspace --locked

step "cargo test"
cargo_test --workspace --locked

step "tests/browser/status_page.py (the gateway's status page in headless Chromium; screenshots in \$CARGO_TARGET_DIR/test-artifacts)"
python3 tests/browser/status_page.py

step "fuzz corpus replay (mcpmux-sessions --features fuzzing: every target's corpus through the engine's, the policy's and the sessions' entry points)"
cargo_test -p mcpmux-sessions --features fuzzing --test fuzz_corpus_replay --locked

step "mcpmux-core --no-default-features (an MCP-only embedder's build: no ring, no tokio-tungstenite, no hyper server)"
direct="$(cargo tree -p mcpmux-core --no-default-features -e normal --depth 1 --prefix none --locked)"
for dep in ring tokio-tungstenite; do
  if grep -q "^$dep v" <<<"$direct"; then
    echo "mcpmux-core --no-default-features depends on $dep directly:" >&2
    echo "$direct" >&2
    exit 1
  fi
done
if cargo tree -p mcpmux-core --no-default-features -e features -i hyper --prefix none --locked | grep -q '^hyper feature "server"'; then
  echo "mcpmux-core --no-default-features compiles hyper's server" >&2
  exit 1
fi
cargo clippy -p mcpmux-core --no-default-features --all-targets --locked -- -D warnings
cargo_test -p mcpmux-core --no-default-features --locked

step "the C library and the Python and Node extensions do not compile the gateway"
for front in mcpmux-ffi mcpmux-python mcpmux-node; do
  if cargo tree -p "$front" -e normal --prefix none --locked | grep -q '^mcpmux-gateway v'; then
    echo "$front depends on mcpmux-gateway" >&2
    exit 1
  fi
done

step "each feature of each library crate compiles alone (cargo check --no-default-features --features F)"
for crate in mcpmux-core mcpmux-policy mcpmux-sessions mcpmux-gateway; do
  features="$(cargo metadata --format-version 1 --no-deps --locked | python3 -c '
import json, sys
crate = sys.argv[1]
pkg = next(p for p in json.load(sys.stdin)["packages"] if p["name"] == crate)
print(" ".join(f for f in pkg["features"] if f != "default"))' "$crate")"
  cargo check -p "$crate" --no-default-features --locked
  for feature in $features; do
    cargo check -p "$crate" --no-default-features --features "$feature" --locked
  done
  cargo check -p "$crate" --all-features --locked
done

# Each front end that lives outside the Rust test harness brings its own
# test script (C ABI, Python, Node); each installs what it needs into
# folders of the checkout and exits non-zero on failure.
for suite in tests/conformance/run.sh ffi/ci.sh bindings/python/ci.sh bindings/node/ci.sh; do
  if [ -f "$suite" ]; then
    step "$suite"
    bash "$suite"
  fi
done

step "cargo doc --no-deps (-D warnings)"
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --workspace --locked

step "fuzz corpus: short runs of every target (skipped without nightly + cargo-fuzz; the corpus itself is replayed above)"
bash fuzz/run.sh --ci 10

step "cargo publish --dry-run (mcpmux-core, mcpmux-policy, mcpmux-sessions, mcpmux-gateway, mcpmux-cli)"
# Cargo verifies each crate against the packaged crates below it through a
# local overlay registry and reuses an extracted copy of the same version
# left by an earlier run in this checkout's path: remove ours so the
# current sources are the ones checked.
for crate in mcpmux-core mcpmux-policy mcpmux-sessions mcpmux-gateway; do
  rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/"$crate"-[0-9]*
done
cargo publish --dry-run --locked -p mcpmux-core -p mcpmux-policy -p mcpmux-sessions -p mcpmux-gateway -p mcpmux-cli

step "scripts/dist.sh (release artifacts into dist/)"
bash scripts/dist.sh

step "tests/dist.sh (the artifacts installed as users do, without cargo)"
bash tests/dist.sh

step "all tests passed"
du -sh "$CARGO_TARGET_DIR" 2>/dev/null || true
