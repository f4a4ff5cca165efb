#!/usr/bin/env bash
# Runs every test of mcpmux. Installs what the tests need into folders of
# this checkout first (tests/setup.sh: npm peers, Python venv), then:
#   cargo fmt --check, clippy (-D warnings, which also compiles the benchmarks),
#   all workspace tests, the conformance suite, and each front end's suite.
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

step() { printf '\n==> %s\n' "$*"; }

step "installing test peers"
bash tests/setup.sh

step "cargo fmt --check"
cargo fmt --all -- --check

step "Markdown links (tests/doc_links.py: every relative link and #anchor resolves)"
python3 tests/doc_links.py

step "cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "cargo build (the binaries the tests start: mcpmux, mcpmux-demo-server)"
cargo build --workspace --locked

step "cargo test"
cargo test --workspace --locked

step "mcpmux-core --no-default-features (an MCP-only embedder's build: no ring, no tokio-tungstenite)"
direct="$(cargo tree -p mcpmux-core --no-default-features -e normal --depth 1 --prefix none --locked)"
for dep in ring tokio-tungstenite; do
  if grep -q "^$dep v" <<<"$direct"; then
    echo "mcpmux-core --no-default-features depends on $dep directly:" >&2
    echo "$direct" >&2
    exit 1
  fi
done
cargo clippy -p mcpmux-core --no-default-features --all-targets --locked -- -D warnings
cargo test -p mcpmux-core --no-default-features --locked

step "mcpmux-core: each feature alone compiles (cargo check --no-default-features --features F)"
for feature in websocket sse oauth sessions telemetry; do
  cargo check -p mcpmux-core --no-default-features --features "$feature" --locked
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

step "fuzz corpus: short runs of every target (skipped without nightly + cargo-fuzz; the corpus itself is replayed by cargo test)"
bash fuzz/run.sh --ci 10

step "cargo publish --dry-run (mcpmux-core, mcpmux-cli)"
# Cargo verifies mcpmux-cli against the packaged mcpmux-core through a local
# overlay registry and reuses an extracted copy of that same version left by
# an earlier run in this checkout's path: remove ours so the current sources
# are the ones checked.
rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/mcpmux-core-[0-9]*
cargo publish --dry-run --locked -p mcpmux-core -p mcpmux-cli

step "scripts/dist.sh (release artifacts into dist/)"
bash scripts/dist.sh

step "tests/dist.sh (the artifacts installed as users do, without cargo)"
bash tests/dist.sh

step "all tests passed"
du -sh "$CARGO_TARGET_DIR" 2>/dev/null || true
