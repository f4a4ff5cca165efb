#!/usr/bin/env bash
# Test suite of the Python binding (called by tests/run.sh; runs on its own
# too, from any directory). Everything goes into folders of this checkout:
#
#   .deps/venv/      the repository venv (tests/setup.sh makes it, with the
#                    official MCP SDK); here it also gets the pinned tools of
#                    bindings/python/requirements-dev.txt, the agent
#                    frameworks of requirements-frameworks.txt and the mcpmux
#                    package itself (pip install ./bindings/python)
#   target/          cargo's output ($CARGO_TARGET_DIR if set)
#
# Then: pytest on bindings/python/tests, the examples, and a smoke run of
# the benchmark (figures only). Idempotent; when nothing changed since the
# last install the package is not rebuilt (a stamp in the venv holds a
# hash of every source that goes into it).
#
# Env:
#   MCPMUX_PY_PROFILE  cargo profile of the native module: dev (default
#                      here: fast to build, shares the workspace's debug
#                      artifacts) or release (what `pip install` gives users;
#                      use it before running the benchmark for real figures)
#   PYTEST_ARGS        extra pytest arguments (e.g. "-k cancel -x")
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
export PIP_DISABLE_PIP_VERSION_CHECK=1
PROFILE="${MCPMUX_PY_PROFILE:-dev}"
VENV="$ROOT/.deps/venv"
PY="$VENV/bin/python"
HERE="$ROOT/bindings/python"

log() { printf 'python/ci.sh: %s\n' "$*" >&2; }
sha() { sha256sum "$@" | cut -d' ' -f1; }

# ---------------------------------------------------------------- peers + venv
bash tests/setup.sh >/dev/null

# requirements-frameworks.txt: the agent frameworks the adapters are tested
# against (mcpmux.langchain, .openai_agents, .pydantic_ai). The stamp covers
# tests/requirements.txt too: a reinstall by setup.sh redoes this step.
DEV_STAMP="$VENV/.mcpmux-python-dev.sha256"
dev_sha="$(cat "$HERE/requirements-dev.txt" "$HERE/requirements-frameworks.txt" tests/requirements.txt | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$DEV_STAMP" 2>/dev/null || true)" != "$dev_sha" ]; then
  log "installing $HERE/requirements-dev.txt and requirements-frameworks.txt into $VENV"
  "$PY" -m pip install --quiet -r "$HERE/requirements-dev.txt" -r "$HERE/requirements-frameworks.txt" >&2
  printf '%s\n' "$dev_sha" > "$DEV_STAMP"
fi

# ---------------------------------------------------------------- binaries the tests start
log "cargo build (mcpmux-demo-server, mcpmux)"
cargo build --locked -p mcpmux-demo-server -p mcpmux-cli >&2

# ---------------------------------------------------------------- the package
PKG_STAMP="$VENV/.mcpmux-python-package.sha256"
pkg_sha="$(
  {
    printf 'profile=%s\n' "$PROFILE"
    find "$HERE/src" "$HERE/python" "$ROOT/core" -type f \
      \( -name '*.rs' -o -name '*.py' -o -name '*.pyi' -o -name 'py.typed' -o -name Cargo.toml \) \
      -not -path '*/__pycache__/*' -print0 | sort -z | xargs -0 sha256sum
    sha256sum "$HERE/Cargo.toml" "$HERE/pyproject.toml" "$ROOT/Cargo.toml" "$ROOT/Cargo.lock"
  } | sha256sum | cut -d' ' -f1
)"
if [ "$(cat "$PKG_STAMP" 2>/dev/null || true)" = "$pkg_sha" ] \
  && "$PY" -c 'import mcpmux' >/dev/null 2>&1; then
  log "mcpmux package up to date"
else
  log "pip install ./bindings/python (cargo profile $PROFILE)"
  rm -f "$PKG_STAMP"
  # --no-build-isolation: build with the pinned maturin of the venv (no
  # download per run); maturin is found on PATH.
  PATH="$VENV/bin:$PATH" MATURIN_PEP517_ARGS="--profile $PROFILE --locked" \
    "$PY" -m pip install --quiet --no-build-isolation --no-deps --force-reinstall \
    "$HERE" >&2
  printf '%s\n' "$pkg_sha" > "$PKG_STAMP"
fi

# ---------------------------------------------------------------- tests
export MCPMUX_DEMO_SERVER_DEBUG="$CARGO_TARGET_DIR/debug/mcpmux-demo-server"
export MCPMUX_CLI="$CARGO_TARGET_DIR/debug/mcpmux"
log "pytest"
# shellcheck disable=SC2086
(cd "$HERE" && "$PY" -m pytest -p no:cacheprovider -q ${PYTEST_ARGS:-} tests)

log "examples"
# examples/python/frameworks/ need the framework packages this venv has
# (tests/dist.sh runs only the plain ones, in a venv without them).
for example in "$ROOT"/examples/python/*.py "$ROOT"/examples/python/frameworks/*.py; do
  MCPMUX_DEMO_SERVER="$MCPMUX_DEMO_SERVER_DEBUG" "$PY" "$example" >/dev/null
done

log "benchmark smoke run (figures only, no assertions)"
MCPMUX_DEMO_SERVER="$MCPMUX_DEMO_SERVER_DEBUG" "$PY" "$HERE/bench/bench_calls.py" --quick
