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
