#!/usr/bin/env bash
# Builds the unit and integration tests with a sanitizer and runs them.
#   scripts/sanitize.sh address [ctest args...]   ASan + UBSan, into build-asan/
#                                                 (clang; shared with the fuzz targets)
#   scripts/sanitize.sh thread  [ctest args...]   TSan, into build-tsan/ (clang)
# Extra arguments go to ctest (e.g. -L unit, -R 'Engine'); by default every
# test but the e2e and deploy groups (Node client, YAML: nothing to sanitize).
# SANITIZE_TARGETS (default: every unit and integration test executable)
# limits what is built; asan_tests and tsan_tests are the CI subsets
# (tests/sanitizers/CMakeLists.txt).
# Any report fails the run (halt_on_error); the only suppressions are in
# tests/sanitizers/, each with its reason.
set -euo pipefail
cd "$(dirname "$0")/.."
kind=${1:-}
case "$kind" in
  address) dir=build-asan; fuzz=-DTOOLEXEC_FUZZ=ON ;;
  thread) dir=build-tsan; fuzz= ;;
  *) echo "usage: scripts/sanitize.sh address|thread [ctest args...]" >&2; exit 2 ;;
esac
shift
supp=$PWD/tests/sanitizers
targets=${SANITIZE_TARGETS:-unit_tests engine_tests builtin_tests integration_tests limits_test isolation_tests}
if [ "$kind" = thread ]; then targets="$targets absl_sync_tsan_test"; fi
# shellcheck disable=SC2086
CC=${CC:-clang} CXX=${CXX:-clang++} BUILD_DIR=${BUILD_DIR:-$dir} \
  CMAKE_ARGS="-DTOOLEXEC_SANITIZE=$kind $fuzz -DTOOLEXEC_BUILD_BENCH=OFF ${CMAKE_ARGS:-}" \
  scripts/build.sh $targets
export ASAN_OPTIONS="halt_on_error=1:abort_on_error=1:detect_leaks=1:detect_stack_use_after_return=0:strict_string_checks=1:check_initialization_order=1"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp:print_suppressions=0"
cd "${BUILD_DIR:-$dir}"
if [ $# -eq 0 ]; then set -- -LE 'e2e|deploy'; fi
# Sanitized code runs 2-15x slower: the per-test timeout is generous.
ctest --output-on-failure --timeout 900 -j "${TEST_JOBS:-2}" "$@"
