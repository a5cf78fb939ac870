#!/usr/bin/env bash
# The Python client's tests (client/python/tests, pytest against a real toolexecd).
# Installs client/python with pip, offline (--no-index), into a virtualenv that sees
# Debian's python3-grpcio and python3-protobuf, as the README says, and runs the tests
# against that installed copy. Expects scripts/setup.sh and a built toolexecd
# (scripts/test.sh does both first). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
# Debian's python3: the one its python3-* packages are for (a python3 earlier on
# PATH, e.g. pyenv's, would not see them).
python=/usr/bin/python3
venv="$build/python-venv"
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv --system-site-packages "$venv"
fi
"$venv/bin/pip" install --quiet --no-index --no-deps --force-reinstall ./client/python
TOOLEXECD="${TOOLEXECD:-$PWD/$build/toolexecd}" TOOLEXEC_EXPECT_INSTALLED=1 \
  "$venv/bin/python" -m pytest -p no:cacheprovider -q client/python/tests "$@"
