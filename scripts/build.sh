#!/usr/bin/env bash
# Configures (once) and builds toolexec with CMake + Ninja (+ ccache when present).
#   scripts/build.sh                 everything
#   scripts/build.sh toolexecd ...   only the named targets
# BUILD_DIR (default build/) and BUILD_TYPE (default RelWithDebInfo) may be set.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo}
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="$BUILD_TYPE" ${CMAKE_ARGS:-}
fi
# Two cores and gRPC headers: more than one job per core only thrashes.
jobs=${BUILD_JOBS:-$(nproc)}
if [ $# -gt 0 ]; then
  cmake --build "$BUILD_DIR" --parallel "$jobs" --target "$@"
else
  cmake --build "$BUILD_DIR" --parallel "$jobs"
fi
