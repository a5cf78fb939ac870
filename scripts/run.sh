#!/usr/bin/env bash
# Sets up, builds and runs toolexecd with sensible defaults: listens on
# 127.0.0.1:50051, the workspace is the current directory, the example tools on.
# Extra arguments go to toolexecd (see toolexecd --help).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
"$here/scripts/setup.sh"
(cd "$here" && scripts/build.sh toolexecd toolexec)
exec "$here/${BUILD_DIR:-build}/toolexecd" --workspace="$PWD" --example_tools "$@"
