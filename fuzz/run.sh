#!/usr/bin/env bash
# Runs every cargo-fuzz target of mcpmux (the fuzzing entry points of core, policy and sessions) (fuzz/fuzz_targets/).
#
#   bash fuzz/run.sh SECONDS         each target for SECONDS, growing its corpus
#                                    in fuzz/corpus/<target>/ (crashes go to
#                                    fuzz/artifacts/<target>/); then prints the
#                                    executions per target
#   bash fuzz/run.sh --ci SECONDS    the CI step: the same on a scratch copy of
#                                    the corpus (the checkout is not changed);
#                                    skipped, exit 0, when the nightly toolchain
#                                    or cargo-fuzz is missing
#   bash fuzz/run.sh --cmin          minimizes every corpus in place, by edge
#                                    coverage only, to keep it small (run after
#                                    a long run, before committing the corpus)
#
# Needs `rustup toolchain install nightly` and `cargo install cargo-fuzz`.
# Exits non-zero when a target crashed (the input is in fuzz/artifacts/).
# The committed corpus is replayed on stable by crates/sessions/tests/fuzz_corpus_replay.rs (with --features fuzzing).
set -u
cd "$(dirname "$0")"
# Release build with debug assertions (overflow checks), no sanitizer: the
# code under test is safe Rust, and ASan would halve the executions.
FLAGS="-O -a -s none"
# Inputs kept per target by --cmin besides seeds and regressions.
KEEP=50
TARGETS="jsonrpc_stream config_toml config_json sse session_input redact tool_names"

mode=run
case "${1:-}" in
  --ci) mode=ci; shift ;;
  --cmin) mode=cmin; shift ;;
esac
seconds="${1:-60}"

if ! cargo +nightly --version >/dev/null 2>&1 || ! cargo +nightly fuzz --help >/dev/null 2>&1; then
  if [ "$mode" = ci ]; then
    echo "fuzz: skipped (needs the nightly toolchain and cargo-fuzz)"
    exit 0
  fi
  echo "fuzz: needs the nightly toolchain (rustup toolchain install nightly) and cargo-fuzz (cargo install cargo-fuzz)" >&2
  exit 2
fi

# Build once (all targets), quietly.
cargo +nightly fuzz build $FLAGS >/dev/null 2>fuzz-build.log || { cat fuzz-build.log >&2; exit 1; }
rm -f fuzz-build.log

scratch=""
if [ "$mode" = ci ]; then
  scratch="$(mktemp -d)"
  trap 'rm -rf "$scratch"' EXIT
fi

failed=0
printf '%-16s %12s %8s %s\n' target executions corpus result
for t in $TARGETS; do
  mkdir -p "corpus/$t" "artifacts/$t"
  if [ "$mode" = cmin ]; then
    mkdir -p "corpus/$t.min"
    cargo +nightly fuzz run $FLAGS "$t" "corpus/$t.min" "corpus/$t" -- -merge=1 -use_counters=0 -max_len=4096 >/dev/null 2>&1
    # Hand-written seeds and regressions stay; of the rest (named by their
    # SHA-1, so in no particular order) at most KEEP are kept.
    cp corpus/"$t"/seed-* corpus/"$t"/regression-* "corpus/$t.min/" 2>/dev/null
    ls "corpus/$t.min" | grep -v -e '^seed-' -e '^regression-' | sort | tail -n +$((KEEP + 1)) |
      while read -r f; do rm -f "corpus/$t.min/$f"; done
    rm -rf "corpus/$t" && mv "corpus/$t.min" "corpus/$t"
    printf '%-16s %12s %8s %s\n' "$t" - "$(ls "corpus/$t" | wc -l)" minimized
    continue
  fi
  corpus="corpus/$t"
  if [ -n "$scratch" ]; then
    corpus="$scratch/$t"
    cp -r "corpus/$t" "$corpus"
  fi
  log="artifacts/$t/last-run.log"
  cargo +nightly fuzz run $FLAGS "$t" "$corpus" -- \
    -max_total_time="$seconds" -max_len=4096 -rss_limit_mb=2048 -timeout=10 \
    -print_final_stats=1 -artifact_prefix="artifacts/$t/" >"$log" 2>&1
  status=$?
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
  result=ok
  if [ "$status" -ne 0 ]; then
    result="CRASH (see $log and artifacts/$t/)"
    failed=1
    grep -m3 -E 'panicked|ERROR: libFuzzer|SUMMARY' "$log" | sed 's/^/    /'
  fi
  printf '%-16s %12s %8s %s\n' "$t" "${execs:-?}" "$(ls "$corpus" | wc -l)" "$result"
done
exit "$failed"
