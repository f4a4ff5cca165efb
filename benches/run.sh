#!/usr/bin/env bash
# Every performance figure of mcpmux in one run: each front end next to its
# reference measured in the same run against the same server, as a ratio,
# with its target (PASS/MISS), printed as one table and written to
# docs/performance.md with the machine, the date and how to reproduce.
#
#   bash benches/run.sh [--quick] [--only LIST] [--no-write]
#
#   --quick      MCPMUX_BENCH_QUICK=1 (about 10x fewer calls): a smoke run
#                whose figures are noise
#   --only LIST  comma-separated subset of rust,http,python,node,gateway
#                (default: all)
#   --no-write   print the table only; leave docs/performance.md alone
#
# Stdio figures are measured against two servers: the minimal echo server of
# benches/echo-server (one thread, serde_json values) and the bundled demo
# server (examples/demo-server, tuned). The references:
#
#   floor    a blocking raw client: one request line written, one response
#            line read per call, on one thread, no MCP library, measured by
#            the Rust stdio bench interleaved with its own calls; Python and
#            Node are compared with that same floor (same server, same run;
#            the stdio bench's latency section runs for it when --only
#            leaves rust out)
#   async floor  the floor's loop in a task on the bench's tokio runtime,
#            through tokio's pipes: what any client on an async runtime pays
#            (its thread waits in epoll_wait, not in read; informational)
#   ceiling  the same raw pipe with 64 requests outstanding (a writer and a
#            reader thread)
#   SDK      the official MCP SDK of that language (Python `mcp`,
#            TypeScript `@modelcontextprotocol/sdk`), same server, same run
#   rmcp     the official Rust SDK's Streamable HTTP client, default and
#            pooled, the faster of the two (benches/http, its own server)
#
# The benches it runs (each also runs on its own; see their headers):
#
#   rust     cargo bench -p mcpmux-core --bench stdio      (both servers)
#   python   bindings/python/bench/bench_calls.py           (both servers)
#   node     bindings/node/bench/bench_calls.mjs            (both servers)
#   http     cargo run --release --manifest-path benches/http/Cargo.toml
#   gateway  cargo bench -p mcpmux-core --bench gateway     (server-everything; mcpmux gateway + demo server)
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
# Benchmarks only print: a MISS is information, not a failure. The exit
# status is non-zero only when a bench fails to build or run (then
# docs/performance.md is not written).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
export PIP_DISABLE_PIP_VERSION_CHECK=1
T="$CARGO_TARGET_DIR"
ALL="rust,http,python,node,gateway"

quick=0
only="$ALL"
write=1
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --only) only="${2:?--only needs a list}"; shift ;;
    --only=*) only="${1#--only=}" ;;
    --no-write) write=0 ;;
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
  NODE_ROUNDS=2
else
  unset MCPMUX_BENCH_QUICK
  NODE_ROUNDS=5
fi

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

# row FIGURE SERVER OURS REFERENCE REF_KIND TARGET [RATIO]: one line of the
# table. TARGET is "-" (information), "<=X" or ">=X" (ratio X, shown as
# "X×") or ">=N%" (shown as a percentage); RATIO, when given, is the ratio
# as the bench printed it (OURS and REFERENCE are then "-").
row() {
  if [ -z "$3" ] || [ -z "$4" ] || { [ "$3" = - ] && [ -z "${7:-}" ]; }; then
    echo "run.sh: '$1' ($2): figure not found in the bench's output" >&2
    failed+=("parse: $1 ($2)")
    return 0
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" "$6" "${7:-}" >> "$ROWS"
}

# value NAME FILE: the number after NAME on its line of a figures file.
value() { awk -v k="$1" '$1 == k { print $2; found = 1 } END { exit !found }' "$2"; }

# stdio_row LOG NAME: "<mcpmux> <reference>" of the stdio bench's report row
# NAME (3 spaces, the name padded to 33, then the figures).
stdio_row() {
  awk -v name="$2" 'index($0, "   " name " ") == 1 {
    split(substr($0, 4 + length(name)), f, " "); print f[1], f[2]; exit }' "$1"
}

# floor SERVER PATH: the stdio bench's floor of sequential latency against
# SERVER, in µs, into FLOOR: the rust section's when it ran, else the bench's
# latency section runs now.
declare -A FLOORS=()
floor() {
  FLOOR="${FLOORS[$1]:-}"
  [ -n "$FLOOR" ] && return 0
  log "floor: cargo bench -p mcpmux-core --bench stdio ($1 server: latency)"
  run "floor-$1" env MCPMUX_DEMO_SERVER="$2" MCPMUX_BENCH_ONLY=latency \
    cargo bench --locked -p mcpmux-core --bench stdio || return 1
  read -r _ FLOOR <<< "$(stdio_row "$LOGS/floor-$1.log" "mean latency (µs)")"
  FLOORS[$1]="$FLOOR"
}

# ------------------------------------------------------------------ builds
log "building the servers (release): benches/echo-server, mcpmux-demo-server"
run build-servers sh -c "cargo build --release --locked --manifest-path benches/echo-server/Cargo.toml \
  && cargo build --release --locked -p mcpmux-demo-server" || exit 1
ECHO_SERVER="$T/release/mcpmux-echo-server"
DEMO_SERVER="$T/release/mcpmux-demo-server"
SERVERS="echo:$ECHO_SERVER demo:$DEMO_SERVER"

# ------------------------------------------------------------------ rust
if wants rust; then
  for entry in $SERVERS; do
    server="${entry%%:*}" path="${entry#*:}"
    # Connect needs the demo server's DEMO_INIT_DELAY_MS; memory is one figure.
    sections="latency,throughput"
    [ "$server" = demo ] && sections="latency,throughput,connect,memory"
    log "rust: cargo bench -p mcpmux-core --bench stdio ($server server: $sections)"
    if run "rust-$server" env MCPMUX_DEMO_SERVER="$path" MCPMUX_BENCH_ONLY="$sections" \
      cargo bench --locked -p mcpmux-core --bench stdio; then
      figure() { stdio_row "$LOGS/rust-$server.log" "$1"; }
      read -r ours ref <<< "$(figure "mean latency (µs)")"
      FLOORS[$server]="$ref"
      row "Rust Hub: sequential latency, mean (µs)" "$server" "$ours" "$ref" floor "<=1.1"
      read -r ours ref <<< "$(figure "p50 latency (µs)")"
      row "Rust Hub: sequential latency, p50 (µs)" "$server" "$ours" "$ref" "floor p50" "-"
      read -r ours ref <<< "$(figure "mean latency (µs), async floor")"
      row "Rust Hub: sequential latency, mean (µs)" "$server" "$ours" "$ref" "async floor" "-"
      read -r ours ref <<< "$(figure "throughput (calls/s)")"
      row "Rust Hub: calls/s, 64 in flight" "$server" "$ours" "$ref" ceiling ">=75%"
      if [ "$server" = demo ]; then
        read -r ours ref <<< "$(figure "Hub::connect, 20 vs 1 server (ms)")"
        row "Rust Hub::connect: 20 vs 1 slow server (ms)" "$server" "$ours" "$ref" "1 server" "<=1.5"
        read -r ours ref <<< "$(figure "RSS per connection (KB)")"
        row "Rust Hub: RSS per idle connection (KB)" "$server" "$ours" "$ref" "rmcp, quoted" "-"
      fi
    fi
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
      floor "$server" "$path" || continue
      log "python: bench_calls.py ($server server)"
      run "python-$server" env MCPMUX_DEMO_SERVER="$path" PYTHONPATH="$PYSITE" \
        MCPMUX_BENCH_FIGURES="$LOGS/python-$server.figures" \
        "$PY" bindings/python/bench/bench_calls.py || continue
      f="$LOGS/python-$server.figures"
      seq="$(value sync.sequential "$f")"
      row "Python Hub (blocking): sequential latency, mean (µs)" "$server" \
        "$(awk -v r="$seq" 'BEGIN { printf "%.2f", 1e6 / r }')" "$FLOOR" floor "<=1.2"
      row "Python AsyncHub: calls/s, sequential" "$server" \
        "$(value async.sequential "$f")" "$(value sdk.sequential "$f")" "Python SDK" ">=5"
      row "Python Hub (blocking): calls/s, sequential" "$server" \
        "$seq" "$(value sdk.sequential "$f")" "Python SDK" "-"
      row "Python AsyncHub: calls/s, 16 in flight" "$server" \
        "$(value async.in_flight "$f")" "$(value sdk.in_flight "$f")" "Python SDK" ">=12"
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
      floor "$server" "$path" || continue
      log "node: bench_calls.mjs ($server server)"
      run "node-$server" env MCPMUX_DEMO_SERVER="$path" MCPMUX_BENCH_NO_BUILD=1 \
        MCPMUX_BENCH_ROUNDS="$NODE_ROUNDS" MCPMUX_BENCH_FIGURES="$LOGS/node-$server.figures" \
        node bindings/node/bench/bench_calls.mjs || continue
      f="$LOGS/node-$server.figures"
      seq="$(value mcpmux.sequential "$f")"
      row "Node Hub: sequential latency, mean (µs)" "$server" \
        "$(awk -v r="$seq" 'BEGIN { printf "%.2f", 1e6 / r }')" "$FLOOR" floor "<=1.25"
      row "Node Hub: calls/s, sequential" "$server" \
        "$seq" "$(value sdk.sequential "$f")" "TypeScript SDK" ">=1.5"
      row "Node Hub: calls/s, 16 in flight" "$server" \
        "$(value mcpmux.in_flight "$f")" "$(value sdk.in_flight "$f")" "TypeScript SDK" ">=2.5"
    done
  fi
fi

# ------------------------------------------------------------------ http
if wants http; then
  log "http: benches/http (its own minimal Streamable HTTP server; builds rmcp the first time)"
  if run http cargo run --release --locked --manifest-path benches/http/Cargo.toml; then
    # "  calls/s  <mcpmux> <rmcp> <rmcp-pooled> ..." under "1. sequential" / "2. ...".
    http_figure() { awk -v sec="$1" '/^[0-9]\. / { in_sec = (substr($0, 1, 2) == sec ".") }
      in_sec && $1 == "calls/s" { best = ($3 > $4) ? $3 : $4; print $2, best; exit }' "$LOGS/http.log"; }
    read -r ours ref <<< "$(http_figure 1)"
    row "Streamable HTTP Hub: calls/s, sequential" http "$ours" "$ref" "faster rmcp" ">=1"
    read -r ours ref <<< "$(http_figure 2)"
    row "Streamable HTTP Hub: calls/s, 64 in flight" http "$ours" "$ref" "faster rmcp" ">=2"
  fi
fi

# ------------------------------------------------------------------ gateway
if wants gateway; then
  log "gateway: cargo bench -p mcpmux-core --bench gateway (server-everything, and mcpmux's own HTTP server)"
  # The gateway is the mcpmux command of this checkout: built here, because
  # the bench only builds it when it is missing (a cargo build started from
  # inside a cargo bench sees cargo's run-time environment and rebuilds
  # half the dependency tree, each time).
  if run gateway-build cargo build --release --locked -p mcpmux-cli \
    && run gateway env MCPMUX_DEMO_SERVER="$DEMO_SERVER" MCPMUX_BIN="$T/release/mcpmux" \
    cargo bench --locked -p mcpmux-core --bench gateway; then
    # Per downstream server, three lines: "direct ... N calls/s",
    # "gateway ... M calls/s ...", then "<label>: ratio gateway/direct R
    # (target >= X): ..."; one row each.
    while IFS=$'\t' read -r label direct through ratio goal; do
      row "Gateway: calls/s, 64 in flight, gateway / direct" "$label" "$through" "$direct" "direct" \
        ">=$goal" "$ratio"
    done < <(awk '
      $1 == "direct" { d = $(NF - 1) }
      $1 == "gateway" { g = $0; sub(/ calls\/s.*/, "", g); n = split(g, w, " "); g = w[n] }
      /ratio gateway\/direct/ {
        label = $0; sub(/^ */, "", label); sub(/: ratio.*/, "", label)
        r = $0; sub(/.*ratio gateway\/direct /, "", r); split(r, rr, " ")
        t = $0; sub(/.*target >= /, "", t); sub(/\).*/, "", t)
        printf "%s\t%s\t%s\t%s\t%s\n", label, d, g, rr[1], t
      }' "$LOGS/gateway.log")
  fi
fi

# ------------------------------------------------------------------ report
# The table: one line per figure, as markdown (for the doc) and as text.
table() {
  awk -F'\t' -v md="$1" '
    function num(x) { return x >= 10000 ? sprintf("%.0f", x) : x >= 100 ? sprintf("%.1f", x) : sprintf("%.2f", x) }
    {
      figure = $1; server = $2; ours = $3; ref = $4; kind = $5; target = $6; given = $7
      pct = (target ~ /%$/)
      ratio = (given != "") ? given + 0 : (ref + 0 > 0 ? ours / ref : 0)
      if (target == "-" || target == "") { ttext = "-"; verdict = "info" }
      else {
        op = substr(target, 1, 2); x = substr(target, 3) + 0
        if (pct) x = x / 100
        ttext = (op == "<=" ? "≤ " : "≥ ") (pct ? sprintf("%.0f%%", x * 100) : sprintf("%.2f×", x))
        verdict = ((op == "<=" && ratio <= x) || (op == ">=" && ratio >= x)) ? "PASS" : "MISS"
      }
      rtext = pct ? sprintf("%.0f%%", ratio * 100) : sprintf("%.2f×", ratio)
      otext = (ours == "-") ? "-" : num(ours)
      reftext = (ref == "-") ? kind : num(ref) " (" kind ")"
      if (md) printf "| %s | %s | %s | %s | %s | %s | %s |\n", figure, server, otext, reftext, rtext, ttext, verdict
      else { gsub(/µ/, "u", figure); printf "%-52s %-6s %10s  %-28s %8s  %-8s %s\n", figure, server, otext, reftext, rtext, ttext, verdict }
    }' "$ROWS"
}

echo
printf '%-52s %-6s %10s  %-28s %8s  %-8s %s\n' figure server mcpmux "reference" ratio target result
printf '%s\n' "$(printf '%.0s-' {1..124})"
table 0
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
[ "$only" != "$ALL" ] && invocation="$invocation --only $only"
{
  echo "# Performance"
  echo
  echo "Generated by \`$invocation\` on $(date -u '+%Y-%m-%d %H:%M UTC') at commit"
  echo "\`$(git rev-parse --short HEAD 2>/dev/null || echo unknown)\`$(git diff --quiet HEAD 2>/dev/null || echo ' (with local changes)')."
  if [ "$quick" = 1 ]; then
    echo
    echo "**Quick run** (about 10x fewer calls): the figures are noise, only proof that every bench runs."
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
  echo "Each figure is next to its reference, measured in the same run against the same"
  echo "server; the ratio is mcpmux / reference (for latency lower is better, for calls/s"
  echo "higher). Targets are informational: a MISS does not fail the run."
  echo
  echo "| Figure | Server | mcpmux | Reference | Ratio | Target | Result |"
  echo "|---|---|---:|---:|---:|---:|---|"
  table 1
  echo
  echo "Servers: \`echo\` is benches/echo-server (a minimal one-thread stdio server,"
  echo "serde_json values), \`demo\` the bundled demo server (examples/demo-server), \`http\`"
  echo "the minimal hyper Streamable HTTP server of benches/http."
  echo
  echo "References:"
  echo
  echo "- **floor**: a blocking raw client on one thread writing one request line and"
  echo "  reading one response line per call, no MCP library, measured by the Rust stdio"
  echo "  bench interleaved with its own calls. Python and Node are compared with the same"
  echo "  floor (same server, same run); their latency is 1 / their best round's"
  echo "  sequential calls/s."
  echo "- **async floor**: the floor's loop in a task on the Rust bench's tokio runtime,"
  echo "  through tokio's pipes: what any client on an async runtime pays before doing any"
  echo "  work (its thread sleeps in \`epoll_wait\`, not in \`read\`). Informational."
  echo "- **floor p50**: the floor's median call, next to mcpmux's median call: on a machine"
  echo "  where waking an idle CPU costs tens of µs, calls are either fast (client and"
  echo "  server take turns on one CPU) or slow (each wake-up crosses CPUs), and the mean"
  echo "  depends on how often the scheduler picks each; the median shows the fast case."
  echo "- **ceiling**: the same raw pipe with 64 requests outstanding (writer and reader"
  echo "  threads)."
  echo "- **Python SDK** / **TypeScript SDK**: the official MCP SDK client of that language"
  echo "  (\`ClientSession\` over \`stdio_client\`; \`Client\` over \`StdioClientTransport\`)."
  echo "- **faster rmcp**: the official Rust SDK's Streamable HTTP client, with its"
  echo "  defaults and with a pooled reqwest client, whichever was faster."
  echo "- **direct**: the gateway bench's hub calling the Streamable HTTP server"
  echo "  directly instead of through \`mcpmux gateway --http\`."
  echo
  echo "## Reproduce"
  echo
  echo '```sh'
  echo 'bash benches/run.sh                    # everything, writes this file'
  echo 'bash benches/run.sh --quick --no-write # smoke run'
  echo 'bash benches/run.sh --only rust,http   # a subset'
  echo '```'
  echo
  echo "It needs Rust, Node.js >= 20, Python >= 3.10 and network access for the pinned"
  echo "npm and pip packages and rmcp (installed into the checkout only). Run it on an"
  echo "otherwise idle machine: client and server share its CPUs. Each bench's header"
  echo "documents its figures in detail (\`core/benches/stdio/main.rs\`, \`benches/http\`,"
  echo "\`core/benches/gateway.rs\`, \`bindings/python/bench/bench_calls.py\`,"
  echo "\`bindings/node/bench/bench_calls.mjs\`)."
} > docs/performance.md
echo "wrote docs/performance.md" >&2
