#!/usr/bin/env bash
# Installs the Debian bookworm packages toolexec needs, only those missing.
# Used by run.sh, test.sh, CI and the Dockerfile.
#   scripts/setup.sh          build + test dependencies
#   scripts/setup.sh runtime  only the shared libraries toolexecd needs at run time
#   scripts/setup.sh python   only what the Python client (client/python) needs to install
set -euo pipefail

build_pkgs=(
  cmake ninja-build ccache g++ pkg-config
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev rapidjson-dev libvalijson-dev libre2-dev libspdlog-dev libssl-dev
  libgtest-dev libgmock-dev
  prometheus-cpp-dev libcurl4-openssl-dev
  libcivetweb-dev
  zlib1g-dev
)
test_pkgs=(python3 python3-yaml ripgrep bubblewrap git openssl)
# The fuzz targets (scripts/fuzz.sh): clang with libFuzzer and its sanitizers.
test_pkgs+=(clang libclang-rt-14-dev)
# libcurl4: MCP servers over streamable HTTP; prometheus-cpp: /metrics;
# libcivetweb1: toolexecd's own MCP streamable HTTP endpoint (--mcp_listen).
# zlib1g: the checkpoint store's compression.
runtime_pkgs=(libgrpc++1.51 libprotobuf32 libspdlog1.10 libre2-9 ca-certificates
              libcurl4 libprometheus-cpp-core1.0 libprometheus-cpp-pull1.0 libcivetweb1 zlib1g)
# The Python client: Debian's python3 with grpcio and protobuf; protoc and
# grpc_python_plugin generate its stubs; pytest runs its tests, jsonschema checks
# its exported transcripts against the providers' request shapes.
python_pkgs=(python3 python3-grpcio python3-protobuf python3-venv python3-pip python3-setuptools
             protobuf-compiler protobuf-compiler-grpc)
python_test_pkgs=(python3-pytest python3-jsonschema)

case "${1:-build}" in
  runtime) wanted=("${runtime_pkgs[@]}") ;;
  build) wanted=("${build_pkgs[@]}" "${test_pkgs[@]}" "${python_pkgs[@]}" "${python_test_pkgs[@]}") ;;
  python) wanted=("${python_pkgs[@]}") ;;
  *) echo "usage: $0 [build|runtime|python]" >&2; exit 2 ;;
esac

missing=()
for p in "${wanted[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
# Node.js and npm drive the end-to-end tests; any installed Node >= 18 will do.
if [ "${1:-build}" = build ] && ! command -v npm >/dev/null 2>&1; then
  missing+=(nodejs npm)
fi

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
