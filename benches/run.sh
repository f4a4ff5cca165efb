#!/usr/bin/env bash
# Every performance figure of mcpmux in one run, each next to its reference
# measured in the same run against the same server, interleaved: each bench
# alternates reference(s) and subject in short blocks (about 1 s each) over
# at least 10 rounds (3 with --quick), so that a machine whose speed moves
# (other load, CPU frequency, idle states) affects both alike. Each figure
# is the median of the per-round ratios, with their range (min-max); for
# latency also the overhead above the blocking floor in µs. Printed as one
# table and written to docs/performance.md.
#
#   bash benches/run.sh [--quick] [--only LIST] [--no-write]
#
#   --quick      MCPMUX_BENCH_QUICK=1: 3 rounds of 0.25 s blocks, a smoke run
#                whose figures are noise
#   --only LIST  comma-separated subset of rust,http,python,node,gateway,tools
#                (default: all)
#   --no-write   print the table only; leave docs/performance.md alone
#   --from-logs  run nothing: the table (and docs/performance.md) from the
#                rows the benches of LIST wrote in the last run(s)
#
# Stdio figures are measured against two servers: the minimal echo server of
# benches/echo-server (one thread, serde_json values) and the bundled demo
# server (examples/demo-server, tuned). The references:
#
#   blocking floor   a raw client on one thread, no MCP library: one request
#            line written, one response line read (a blocking read) per call
#   spinning floor   the same with the pipe non-blocking and busy-polled: no
#            thread is ever put to sleep (a second reference)
#            (the Rust bench runs both in-process; Python and Node drive
#            benches/echo-server's mcpmux-bench-floor block by block)
#   pipelined ceiling  the same raw pipe with 64 requests outstanding (a
#            writer and a reader thread)
#   SDK      the official MCP SDK of that language (Python `mcp`,
#            TypeScript `@modelcontextprotocol/sdk`), same server, same run
#   rmcp     the official Rust SDK's Streamable HTTP client (benches/http,
#            its own server; not interleaved in blocks: one measurement)
#   direct   the gateway bench's hub calling the server itself instead of
#            through `mcpmux gateway --http`
#
# The benches it runs (each also runs on its own; see their headers):
#
#   rust     cargo bench -p mcpmux-core --bench stdio      (both servers)
#   python   bindings/python/bench/bench_calls.py           (both servers)
#   node     bindings/node/bench/bench_calls.mjs            (both servers)
#   http     cargo run --release --manifest-path benches/http/Cargo.toml
#   gateway  cargo bench -p mcpmux-gateway --bench gateway  (echo server over
#            stdio, mcpmux's HTTP server, server-everything; the fleet:
#            gateway vs HAProxy, one replica vs three; 256 sessions)
#   tools    benches/tools/bench_tools.py: `mcpmux tools` over nine public
#            servers (npm and PyPI, installed by benches/tools/setup.sh) vs
#            the official Python SDK listing them concurrently
#
# Each bench appends its rows to $CARGO_TARGET_DIR/bench-run/<name>.tsv in
# one tab-separated format (core/benches/stdio/report.rs documents it).
#
# What it builds or installs, all inside this checkout (nothing global):
# release builds into $CARGO_TARGET_DIR (default <repo>/target), the Python
# test venv .deps/venv (tests/setup.sh, plus the pinned maturin of
# bindings/python/requirements-dev.txt), the mcpmux Python package built in
# release into $CARGO_TARGET_DIR/bench-python (put on PYTHONPATH, so the
# venv's own mcpmux, if any, is left as it is), bindings/node/node_modules
# (npm ci, pinned) and the release addon in bindings/node. Each bench's full
# output goes to $CARGO_TARGET_DIR/bench-run/<name>.log.
#
# Targets are informational: the exit status is non-zero only when a bench
# fails to build or run (then docs/performance.md is not written).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
export PIP_DISABLE_PIP_VERSION_CHECK=1
T="$CARGO_TARGET_DIR"
ALL="rust,http,python,node,gateway,tools"

quick=0
from_logs=0
only="$ALL"
write=1
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --only) only="${2:?--only needs a list}"; shift ;;
    --only=*) only="${1#--only=}" ;;
    --no-write) write=0 ;;
    --from-logs) from_logs=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "run.sh: unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
for part in ${only//,/ }; do
  case ",$ALL," in
    *",$part,"*) ;;
    *) echo "run.sh: --only: unknown bench '$part' (known: $ALL)" >&2; exit 2 ;;
  esac
done
wants() { case ",$only," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }

if [ "$quick" = 1 ]; then
  export MCPMUX_BENCH_QUICK=1
else
  unset MCPMUX_BENCH_QUICK
fi
unset MCPMUX_BENCH_ROUNDS

LOGS="$T/bench-run"
mkdir -p "$LOGS"
ROWS="$LOGS/rows.tsv"
: > "$ROWS"
failed=()
started=$(date +%s)

log() { printf '==> [%4ss] %s\n' "$(($(date +%s) - started))" "$*" >&2; }

# run NAME CMD...: runs CMD with its output in $LOGS/NAME.log; on failure
# shows the log's tail, records NAME and returns 1.
run() {
  local name="$1"
  shift
  if "$@" > "$LOGS/$name.log" 2>&1; then
    return 0
  fi
  echo "---- $name failed; last lines of $LOGS/$name.log:" >&2
  tail -n 30 "$LOGS/$name.log" >&2
  failed+=("$name")
  return 1
}

# collect NAME PREFIX: appends the rows of $LOGS/NAME.tsv to the table,
# each figure prefixed with PREFIX; a bench that printed no row fails.
collect() {
  if [ ! -s "$LOGS/$1.tsv" ]; then
    echo "run.sh: $1: the bench wrote no rows" >&2
    failed+=("parse: $1")
    return 0
  fi
  awk -v p="$2" '{ print p $0 }' "$LOGS/$1.tsv" >> "$ROWS"
}

# bench NAME PREFIX LABEL CMD...: runs CMD (see run) with its rows going to
# $LOGS/NAME.tsv, labelled LABEL, then collects them.
bench() {
  local name="$1" prefix="$2" label="$3"
  shift 3
  rm -f "$LOGS/$name.tsv"
  run "$name" env MCPMUX_BENCH_ROWS="$LOGS/$name.tsv" MCPMUX_BENCH_LABEL="$label" "$@" || return 1
  collect "$name" "$prefix"
}

SKIPPED=()
if [ "$from_logs" = 1 ]; then
  log "from the rows of the last run in $LOGS"
  wants rust && collect rust-echo "Rust Hub: " && collect rust-demo "Rust Hub: "
  wants python && collect python-echo "" && collect python-demo ""
  wants node && collect node-echo "" && collect node-demo ""
  wants http && collect http ""
  wants gateway && collect gateway "Gateway: "
  wants tools && collect tools ""
else
# ------------------------------------------------------------------ builds
log "building the servers (release): benches/echo-server (with mcpmux-bench-floor), mcpmux-demo-server"
run build-servers sh -c "cargo build --release --locked --manifest-path benches/echo-server/Cargo.toml \
  && cargo build --release --locked -p mcpmux-demo-server" || exit 1
ECHO_SERVER="$T/release/mcpmux-echo-server"
DEMO_SERVER="$T/release/mcpmux-demo-server"
export MCPMUX_BENCH_FLOOR="$T/release/mcpmux-bench-floor"
SERVERS="echo:$ECHO_SERVER demo:$DEMO_SERVER"

# ------------------------------------------------------------------ rust
if wants rust; then
  for entry in $SERVERS; do
    server="${entry%%:*}" path="${entry#*:}"
    # Connect needs the demo server's DEMO_INIT_DELAY_MS; memory is one figure;
    # scale needs the echo server's ECHO_TOOLS.
    sections="latency,throughput,scale"
    [ "$server" = demo ] && sections="latency,throughput,connect,memory"
    log "rust: cargo bench -p mcpmux-core --bench stdio ($server server: $sections)"
    bench "rust-$server" "Rust Hub: " "$server" env MCPMUX_DEMO_SERVER="$path" \
      MCPMUX_BENCH_ONLY="$sections" cargo bench --locked -p mcpmux-core --bench stdio || true
  done
fi

# ------------------------------------------------------------------ python
if wants python; then
  VENV="$ROOT/.deps/venv"
  PY="$VENV/bin/python"
  PYSITE="$T/bench-python"
  log "python: test venv (tests/setup.sh), maturin, the mcpmux package in release"
  dev_stamp="$VENV/.mcpmux-python-dev.sha256"
  # (Called as a condition, where `set -e` does not apply: each step says
  # `|| return 1`.) The same stamp as bindings/python/ci.sh: the pinned
  # requirements-dev are installed once.
  python_build() {
    bash tests/setup.sh || return 1
    local want
    want="$(sha256sum bindings/python/requirements-dev.txt | cut -d' ' -f1)"
    if [ "$(cat "$dev_stamp" 2>/dev/null || true)" != "$want" ]; then
      "$PY" -m pip install --quiet -r bindings/python/requirements-dev.txt || return 1
      printf '%s\n' "$want" > "$dev_stamp"
    fi
    rm -rf "$T/bench-wheels" "$PYSITE"
    PATH="$VENV/bin:$PATH" "$VENV/bin/maturin" build --release --locked \
      --manifest-path bindings/python/Cargo.toml --interpreter "$PY" --out "$T/bench-wheels" || return 1
    "$PY" -m pip install --quiet --no-deps --target "$PYSITE" "$T"/bench-wheels/mcpmux-*.whl
  }
  if run python-build python_build; then
    for entry in $SERVERS; do
      server="${entry%%:*}" path="${entry#*:}"
      log "python: bench_calls.py ($server server)"
      bench "python-$server" "" "$server" env MCPMUX_DEMO_SERVER="$path" PYTHONPATH="$PYSITE" \
        "$PY" bindings/python/bench/bench_calls.py || true
    done
  fi
fi

# ------------------------------------------------------------------ node
if wants node; then
  log "node: npm devDependencies (npm ci, pinned), the addon in release"
  node_build() {
    local stamp="bindings/node/node_modules/.mcpmux-lock.sha256" want
    want="$(sha256sum bindings/node/package-lock.json | cut -d' ' -f1)"
    # The same stamp as bindings/node/ci.sh.
    if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
      (cd bindings/node && npm ci --ignore-scripts --no-audit --no-fund) || return 1
      echo "$want" > "$stamp"
    fi
    (cd bindings/node && node scripts/build.js --release --locked)
  }
  if run node-build node_build; then
    for entry in $SERVERS; do
      server="${entry%%:*}" path="${entry#*:}"
      log "node: bench_calls.mjs ($server server)"
      bench "node-$server" "" "$server" env MCPMUX_DEMO_SERVER="$path" MCPMUX_BENCH_NO_BUILD=1 \
        node bindings/node/bench/bench_calls.mjs || true
    done
  fi
fi

# ------------------------------------------------------------------ http
if wants http; then
  log "http: benches/http (its own minimal Streamable HTTP server; builds rmcp the first time)"
  if run http cargo run --release --locked --manifest-path benches/http/Cargo.toml; then
    # "  calls/s  <mcpmux> <rmcp> <rmcp-pooled> ..." under "1. sequential" /
    # "2. ...": one measurement each, as rows of one round.
    http_row() {
      awk -v sec="$1" -v fig="$2" -v target="$3" '/^[0-9]\. / { in_sec = (substr($0, 1, 2) == sec ".") }
        in_sec && $1 == "calls/s" { best = ($3 > $4) ? $3 : $4; r = $2 / best
          printf "%s\thttp\t%s\t%s\tfaster rmcp\t%.4f\t%.4f\t%.4f\tx\t%s\t-\t1\n", fig, $2, best, r, r, r, target; exit }' \
        "$LOGS/http.log"
    }
    {
      http_row 1 "Streamable HTTP Hub: calls/s, sequential" ">=1"
      http_row 2 "Streamable HTTP Hub: calls/s, 64 in flight" ">=2"
    } > "$LOGS/http.tsv"
    collect http ""
  fi
fi

# ------------------------------------------------------------------ gateway
if wants gateway; then
  log "gateway: cargo bench -p mcpmux-gateway --bench gateway (echo over stdio, mcpmux's HTTP server, server-everything, the fleet beside HAProxy, 256 sessions)"
  # server-everything and HAProxy (tests/setup.sh unpacks it into .deps/debian).
  run gateway-peers bash tests/setup.sh || true
  # The gateway is the mcpmux command of this checkout: built here, because
  # the bench only builds it when it is missing (a cargo build started from
  # inside a cargo bench sees cargo's run-time environment and rebuilds
  # half the dependency tree, each time).
  if run gateway-build cargo build --release --locked -p mcpmux-cli; then
    bench gateway "Gateway: " "-" env MCPMUX_DEMO_SERVER="$DEMO_SERVER" MCPMUX_ECHO_SERVER="$ECHO_SERVER" \
      MCPMUX_BIN="$T/release/mcpmux" cargo bench --locked -p mcpmux-gateway --bench gateway || true
  fi
fi

# ------------------------------------------------------------------ tools
if wants tools; then
  log "tools: benches/tools/setup.sh (nine public servers), bench_tools.py"
  tools_build() {
    bash tests/setup.sh || return 1
    bash benches/tools/setup.sh || return 1
    cargo build --release --locked -p mcpmux-cli
  }
  if run tools-build tools_build; then
    bench tools "" "nine public" "$ROOT/.deps/venv/bin/python" benches/tools/bench_tools.py \
      --mcpmux "$T/release/mcpmux" || true
  fi
fi
fi # from_logs

# ------------------------------------------------------------------ report
# The table: one line per row of the benches, as markdown (for the doc) and
# as text. Columns of a row: figure, server, subject, reference, reference
# kind, median, min, max, unit, target, overhead (µs), rounds.
table() {
  awk -F'\t' -v md="$1" '
    function num(x) { x += 0; return x >= 10000 ? sprintf("%.0f", x) : x >= 100 ? sprintf("%.1f", x) : sprintf("%.2f", x) }
    function judged(x) { return unit == "x" ? sprintf("%.2f×", x) : num(x) " " unit }
    {
      figure = $1; server = $2; ours = $3; ref = $4; kind = $5; m = $6 + 0; lo = $7 + 0; hi = $8 + 0
      unit = $9; target = $10; over = $11; rounds = $12
      if (target == "-" || target == "") { ttext = "-"; verdict = "info" }
      else {
        op = substr(target, 1, 2); x = substr(target, 3) + 0
        ttext = (op == "<=" ? "≤ " : "≥ ") (unit == "x" ? sprintf("%.2f×", x) : num(x) " " unit)
        verdict = ((op == "<=" && m <= x) || (op == ">=" && m >= x)) ? "yes" : "no"
      }
      otext = (ours == "-") ? "-" : num(ours)
      reftext = (ref == "-") ? kind : num(ref) " (" kind ")"
      if (kind == "-" && ref == "-") reftext = "-"
      range = judged(lo) "–" judged(hi)
      overtext = (over == "-" || over == "") ? "-" : sprintf("%+.2f", over)
      if (md) printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", figure, server, otext, reftext, judged(m), range, overtext, ttext, verdict, rounds
      else { gsub(/µ/, "u", figure); gsub(/µ/, "u", range); printf "%-66s %-5s %10s  %-30s %10s  %-22s %8s  %-9s %s\n", figure, server, otext, reftext, judged(m), range, overtext, ttext, verdict }
    }' "$ROWS"
}

echo
printf '%-66s %-5s %10s  %-30s %10s  %-22s %8s  %-9s %s\n' figure server mcpmux "reference" median range "+us" target held
printf '%s\n' "$(printf '%.0s-' {1..176})"
table 0
for s in "${SKIPPED[@]}"; do echo "skipped: $s"; done
echo
echo "bench logs: $LOGS/"

if [ ${#failed[@]} -gt 0 ]; then
  echo "run.sh: failed: ${failed[*]} (docs/performance.md not written)" >&2
  exit 1
fi
[ "$write" = 1 ] || exit 0

# ------------------------------------------------------------------ docs/performance.md
cpu="$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -n 1)"
version() { "$@" 2>/dev/null | head -n 1 || echo "n/a"; }
invocation="bash benches/run.sh"
[ "$quick" = 1 ] && invocation="$invocation --quick"
[ "$from_logs" = 1 ] && invocation="bash benches/run.sh (rows of its last run of each bench; the latest: $(date -u -r "$(ls -t "$LOGS"/*.tsv | head -n 1)" '+%Y-%m-%d %H:%M UTC'))"
[ "$only" != "$ALL" ] && invocation="$invocation --only $only"
# Before the file is rewritten (which would itself count as a change).
local_changes="$(git diff --quiet HEAD 2>/dev/null || echo ' (with local changes)')"
{
  echo "# Performance"
  echo
  echo "Generated by \`$invocation\` on $(date -u '+%Y-%m-%d %H:%M UTC') at commit"
  echo "\`$(git rev-parse --short HEAD 2>/dev/null || echo unknown)\`$local_changes."
  if [ "$quick" = 1 ]; then
    echo
    echo "**Quick run** (3 rounds of 0.25 s blocks): the figures are noise, only proof that every bench runs."
  fi
  echo
  echo "## Machine"
  echo
  echo "- CPUs: $(nproc) ($cpu)"
  echo "- kernel: $(uname -sr)"
  echo "- rustc: $(version rustc --version)"
  wants node && echo "- node: $(version node --version)"
  wants python && echo "- python: $(version "$ROOT/.deps/venv/bin/python" --version)"
  echo
  echo "## Figures"
  echo
  echo "Every bench interleaves: each round runs the reference(s) and mcpmux back to back"
  echo "in blocks of about 1 s, in rotating order, over the rounds of the last column;"
  echo "**Median** is the median of the per-round ratios mcpmux / reference (for latency"
  echo "lower is better, for calls/s higher), or of the figure itself where there is no"
  echo "reference; **Range** is their min–max; **+µs** is the median per-round overhead"
  echo "above the reference (latency rows). **mcpmux** and **Reference** are the medians"
  echo "of the per-round values. **Held?** compares the median with the target; targets"
  echo "are informational."
  echo
  echo "| Figure | Server | mcpmux | Reference | Median | Range | +µs | Target | Held? | Rounds |"
  echo "|---|---|---:|---:|---:|---:|---:|---:|---|---:|"
  table 1
  if [ ${#SKIPPED[@]} -gt 0 ]; then
    echo
    for s in "${SKIPPED[@]}"; do echo "- $s."; done
  fi
  echo
  echo "Servers: \`echo\` is benches/echo-server (a minimal one-thread stdio server,"
  echo "serde_json values), \`demo\` the bundled demo server (examples/demo-server), \`http\`"
  echo "the minimal hyper Streamable HTTP server of benches/http; the gateway rows name"
  echo "their downstream server in brackets."
  echo
  echo "References:"
  echo
  echo "- **blocking floor**: a raw client on one thread writing one request line and"
  echo "  reading one response line per call (a blocking read), no MCP library. The"
  echo "  Rust bench runs it in-process; Python and Node drive the same loop in"
  echo "  \`mcpmux-bench-floor\` (benches/echo-server) block by block."
  echo "- **spinning floor**: the same loop with the pipe non-blocking and busy-polled, so"
  echo "  no thread is put to sleep and woken."
  echo "- **pipelined ceiling**: the same raw pipe with 64 requests outstanding (writer and"
  echo "  reader threads)."
  echo "- **Python SDK** / **TypeScript SDK**: the official MCP SDK client of that language"
  echo "  (\`ClientSession\` over \`stdio_client\`; \`Client\` over \`StdioClientTransport\`),"
  echo "  connected for the whole run."
  echo "- **faster rmcp**: the official Rust SDK's Streamable HTTP client, with its"
  echo "  defaults and with a pooled reqwest client, whichever was faster (one"
  echo "  measurement, not interleaved in blocks)."
  echo "- **direct**: the gateway bench's hub calling the downstream server itself (over"
  echo "  stdio for the echo server, over HTTP for the HTTP servers) instead of through"
  echo "  \`mcpmux gateway --http\`. The gateway's CPU per relayed call is its process's"
  echo "  user + system time over the calls of each block."
  echo
  echo "The targets of several runs, quiet and under load, side by side:"
  echo "[performance-runs.md](performance-runs.md) (kept by hand)."
  echo
  echo "## Reproduce"
  echo
  echo '```sh'
  echo 'bash benches/run.sh                    # everything, writes this file'
  echo 'bash benches/run.sh --quick --no-write # smoke run'
  echo 'bash benches/run.sh --only rust,node   # a subset'
  echo '```'
  echo
  echo "It needs Rust, Node.js >= 20, Python >= 3.10 and network access for the pinned"
  echo "npm and pip packages and rmcp (installed into the checkout only). Each bench's"
  echo "header documents its figures in detail (\`core/benches/stdio/main.rs\`,"
  echo "\`benches/http\`, \`crates/gateway/benches/gateway.rs\`,"
  echo "\`bindings/python/bench/bench_calls.py\`, \`bindings/node/bench/bench_calls.mjs\`)."
} > docs/performance.md
echo "wrote docs/performance.md" >&2
