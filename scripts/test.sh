#!/usr/bin/env bash
# Sets up, builds and runs every test: unit, integration, e2e (Node reflection
# client) and the deploy checks, all through ctest, then the Python client's
# (scripts/test_python.sh). Installs what it needs.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
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
# A CI run has 25 minutes on a fresh 2-core machine, and the build and tests
# above take 15-20 of them. After them: the fuzz smoke (every target 10 s;
# ~4-5 min with its clang build), then the day's sanitizer job, by day of the
# year: ASan+UBSan, then TSan, over the unit tests (an instrumented file costs
# ~2.7x the CPU of a plain one to compile, so ~20+ min with its build: it runs
# where the build is warm, e.g. from a kept ccache). Each runs only if it fits
# in what is left of TOOLEXEC_CI_BUDGET_MIN (25), else says so and is skipped.
# TOOLEXEC_CI_FULL=1 runs the fuzz targets 20 s each and both sanitizers over
# every test, whatever the time.
ci_minutes_left() { echo $(( ${TOOLEXEC_CI_BUDGET_MIN:-25} - SECONDS / 60 )); }
if [ "${TOOLEXEC_CI_FULL:-0}" = 1 ]; then
  scripts/fuzz.sh 20
  scripts/sanitize.sh address
  scripts/sanitize.sh thread
else
  if [ "$(ci_minutes_left)" -ge "${TOOLEXEC_CI_FUZZ_MIN:-6}" ]; then
    scripts/fuzz.sh 10
  else
    echo "test.sh: fuzz smoke skipped: $(ci_minutes_left) min of the CI budget left" >&2
  fi
  if (( 10#$(date -u +%j) % 2 == 0 )); then sanitizer=address; else sanitizer=thread; fi
  if [ "$(ci_minutes_left)" -ge "${TOOLEXEC_CI_SANITIZER_MIN:-15}" ]; then
    SANITIZE_TARGETS=unit_tests scripts/sanitize.sh "$sanitizer" -L unit
  else
    echo "test.sh: sanitizer job ($sanitizer, unit tests) skipped: $(ci_minutes_left) min of the" \
         "CI budget left; TOOLEXEC_CI_FULL=1 runs it" >&2
  fi
fi
