#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan+UBSan) into build-asan/ (shared
# with scripts/sanitize.sh address) and runs each on its seed corpus in
# fuzz/corpus/<target>/ for a bounded time.
#   scripts/fuzz.sh            every target, 20 s each
#   scripts/fuzz.sh 300        every target, 300 s each
#   scripts/fuzz.sh 60 glob_fuzzer path_fuzzer
# Fails (exit 1) when a target crashes, leaks, trips a sanitizer or an
# invariant; the input that did it is saved in build-asan/crashes/<target>/.
# New inputs found are kept in build-asan/corpus/<target>/ (not in the repo);
# see fuzz/README.md for longer runs and for adding a crash to the corpus.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(args_fuzzer path_fuzzer edit_fuzzer glob_fuzzer config_fuzzer mcp_fuzzer
           command_line_fuzzer)
fi
dir=${FUZZ_BUILD_DIR:-build-asan}
CC=${CC:-clang} CXX=${CXX:-clang++} BUILD_DIR=$dir \
  CMAKE_ARGS="-DTOOLEXEC_FUZZ=ON -DTOOLEXEC_SANITIZE=address -DTOOLEXEC_BUILD_BENCH=OFF ${CMAKE_ARGS:-}" \
  scripts/build.sh "${targets[@]}"
export ASAN_OPTIONS="halt_on_error=1:abort_on_error=1:detect_leaks=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
failed=()
for t in "${targets[@]}"; do
  work=$dir/corpus/$t
  crashes=$dir/crashes/$t
  mkdir -p "$work" "$crashes"
  echo "== $t: ${seconds} s"
  # Seeds are read from the repo; what the run finds goes to $work only.
  if ! "$dir/fuzz/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -max_len=4096 -print_final_stats=1 -artifact_prefix="$crashes/" \
      "$work" "fuzz/corpus/$t" 2>"$dir/$t.log"; then
    tail -n 60 "$dir/$t.log"
    failed+=("$t")
  else
    grep -E '^(stat::number_of_executed_units|stat::new_units_added)' "$dir/$t.log" | tr '\n' ' '
    echo
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: FAILED: ${failed[*]} (inputs in $dir/crashes/)" >&2
  exit 1
fi
echo "fuzz: every target ran ${seconds} s without a crash"
