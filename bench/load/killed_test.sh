#!/usr/bin/env bash
# When bench_load dies (a crash, SIGKILL), the toolexecd it started must die
# with it: a daemon left behind keeps running and holds the output pipe of
# whoever ran bench_load (ctest then waits for it until its timeout).
#   bench/load/killed_test.sh BENCH_LOAD
set -uo pipefail
bench_load="$1"
"$bench_load" --streams=2 --seconds=60 >/dev/null 2>&1 &
load=$!
daemon=""
for _ in $(seq 1 300); do
  daemon="$(pgrep -P "$load" | head -1)"
  [ -n "$daemon" ] && break
  sleep 0.1
done
[ -n "$daemon" ] || { kill -KILL "$load"; echo "FAIL: bench_load started no daemon"; exit 1; }
sleep 1  # under load now
# bench_load's scratch directory (the daemon's workspace is <dir>/ws), removed
# here since a SIGKILLed bench_load cannot.
scratch="$(tr '\0' '\n' <"/proc/$daemon/cmdline" | sed -n 's|^--workspace=\(/tmp/toolexec-load-[^/]*\)/ws$|\1|p')"
trap '[ -n "$scratch" ] && rm -rf "$scratch"' EXIT
kill -KILL "$load"
wait "$load" 2>/dev/null
for _ in $(seq 1 100); do
  if ! kill -0 "$daemon" 2>/dev/null; then echo "PASS: daemon $daemon died with bench_load"; exit 0; fi
  # A zombie (reparented, not yet reaped) counts as gone.
  [ "$(awk '{print $3}' "/proc/$daemon/stat" 2>/dev/null)" = "Z" ] && { echo "PASS"; exit 0; }
  sleep 0.1
done
kill -KILL "$daemon"
echo "FAIL: toolexecd (pid $daemon) outlived bench_load by 10 s"
exit 1
