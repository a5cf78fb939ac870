#!/usr/bin/env bash
# bench_load against a daemon that accepts connections, never answers and
# ignores SIGTERM (unresponsive_daemon.py) must end by itself, within its
# bounds, with exit 1, counting every batch as stuck, naming the call each
# stream waited for, and saying it had to kill the daemon.
#   bench/load/unresponsive_test.sh BENCH_LOAD
set -uo pipefail
bench_load="$1"
here="$(cd "$(dirname "$0")" && pwd)"
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
# Warm-up 3 s + load 1 s + each stream's last batch 3 s + shutdown 2 s: ~10 s.
timeout 120 "$bench_load" --streams=4 --seconds=1 --rpc_timeout=3 --shutdown_timeout=2 \
  --toolexecd="$here/unresponsive_daemon.py" >"$out" 2>&1
rc=$?
cat "$out"
fail() { echo "FAIL: $*"; exit 1; }
[ "$rc" -ne 124 ] || fail "bench_load hung (killed by timeout after 120 s)"
[ "$rc" -eq 1 ] || fail "exit status $rc, expected 1"
grep -q "stuck=4 " "$out" || fail "expected stuck=4 (one stuck batch per stream)"
for s in 0 1 2 3; do
  grep -q "FAILURE: stream $s: ExecuteBatch #0 (normal, [0-9]* calls) hit its 3 s deadline with 0 of [0-9]* results, waiting for c0 " "$out" ||
    fail "stream $s's stuck batch is not reported"
done
grep -q "FAILURE (warm-up): stream 0: .* hit its 3 s deadline" "$out" || fail "the warm-up's stuck batch is not reported"
grep -q "daemon exit on SIGTERM: FAILED: still running 2 s after SIGTERM, killed" "$out" ||
  fail "the daemon that ignored SIGTERM is not reported as killed"
echo PASS
