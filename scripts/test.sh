#!/usr/bin/env bash
# Sets up, builds and runs every test: unit, integration, e2e (Node reflection
# client) and the deploy checks, all through ctest, then the Python client's
# (scripts/test_python.sh). Installs what it needs.
#   scripts/test.sh --fast   only the unit label: its test binaries built and run
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
if [ "${1:-}" = --fast ]; then
  scripts/build.sh unit_tests mcp_unit_tests mcp_server_unit_tests
  cd "${BUILD_DIR:-build}"
  exec ctest --output-on-failure --timeout 300 -j "${TEST_JOBS:-2}" -L unit
fi
# The e2e client's npm packages (exact versions in tests/e2e/package.json).
if [ ! -d tests/e2e/node_modules ] || [ tests/e2e/package.json -nt tests/e2e/node_modules ]; then
  (cd tests/e2e && npm install --no-audit --no-fund --loglevel=error)
  touch tests/e2e/node_modules
fi
# The MCP SDK client that drives `toolexec mcp` (exact version in tests/mcp_server/package.json).
if [ ! -d tests/mcp_server/node_modules ] || [ tests/mcp_server/package.json -nt tests/mcp_server/node_modules ]; then
  (cd tests/mcp_server && npm install --no-audit --no-fund --loglevel=error)
  touch tests/mcp_server/node_modules
fi
# The third-party MCP servers the MCP client tests run (tests/mcp/package.json).
if [ ! -d tests/mcp/node_modules ] || [ tests/mcp/package.json -nt tests/mcp/node_modules ]; then
  (cd tests/mcp && npm install --no-audit --no-fund --loglevel=error)
  touch tests/mcp/node_modules
fi
scripts/build.sh
cd "${BUILD_DIR:-build}"
ctest --output-on-failure --timeout 300 -j "${TEST_JOBS:-2}"
cd - >/dev/null
scripts/test_python.sh

# ---- fuzzing and sanitizers (README "Tests and benchmarks") ----------------
# After the suite (~11 of CI's 25 minutes on a fresh 2-core machine), ~10
# more minutes: every fuzz target for 10 s, then one sanitizer job, rotating
# by the day of the year (TOOLEXEC_CI_SANITIZER=address|thread picks one):
#   even days  ASan+UBSan over asan_tests, in build-asan/ beside the fuzz
#              targets (the libraries are built once for both);
#   odd days   TSan over tsan_tests (the concurrency-heavy tests), build-tsan/.
# The subsets are in tests/sanitizers/CMakeLists.txt. The job is skipped only
# when the suite overran so much that it cannot fit (a safety net: it says so).
# TOOLEXEC_CI_FULL=1 runs every fuzz target 20 s and both sanitizers over all
# the unit and integration tests, whatever the time.
if [ "${TOOLEXEC_CI_FULL:-0}" = 1 ]; then
  scripts/fuzz.sh 20
  scripts/sanitize.sh address
  scripts/sanitize.sh thread
else
  scripts/fuzz.sh 10
  sanitizer=${TOOLEXEC_CI_SANITIZER:-}
  if [ -z "$sanitizer" ]; then
    if (( 10#$(date -u +%j) % 2 == 0 )); then sanitizer=address; else sanitizer=thread; fi
  fi
  if [ "$sanitizer" = address ]; then subset=asan; else subset=tsan; fi
  left=$(( ${TOOLEXEC_CI_BUDGET_MIN:-25} - SECONDS / 60 ))
  if [ "$left" -ge "${TOOLEXEC_CI_SANITIZER_MIN:-7}" ]; then
    SANITIZE_TARGETS=${subset}_tests scripts/sanitize.sh "$sanitizer" -L "$subset"
  else
    echo "test.sh: SKIPPED the $sanitizer sanitizer job: only $left min of the CI budget" \
         "left; scripts/sanitize.sh $sanitizer runs it" >&2
  fi
fi
