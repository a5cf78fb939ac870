#!/usr/bin/env bash
# cancel_load.sh: clients that keep cancelling process trees, against a toolexecd
# on 127.0.0.1 (bounded; nothing else is contacted).
#
# CLIENTS client loops (default 16) each keep starting run_command calls whose
# command starts children (a plain one, a double-forked setsid'd one, a bash with
# its own child) and cancel each by dropping the connection CANCEL_AFTER seconds
# in (default 2; the client itself takes a while to start), for DURATION seconds (default 60). Every 5 s it prints the
# daemon's zombie children, its thread count and the live processes of the
# commands; at the end the same once the calls are over. Then it starts four
# such trees, SIGKILLs the daemon and counts the processes of those trees still
# alive a second later.
#
#   bench/command/cancel_load.sh [BUILD_DIR]       (default build/)
#   CLIENTS=16 DURATION=60 CANCEL_AFTER=2 bench/command/cancel_load.sh
set -euo pipefail
build=${1:-build}
clients=${CLIENTS:-16}
duration=${DURATION:-60}
after=${CANCEL_AFTER:-2}
dir=$(mktemp -d /tmp/cancel_load.XXXXXX)
marker="cancel-load-$$-$RANDOM"
daemon=
cleanup() {
  [ -n "$daemon" ] && kill -9 "$daemon" 2>/dev/null || true
  wait 2>/dev/null || true
  for f in /proc/[0-9]*/environ; do
    if grep -qs "$marker" "$f"; then p=${f#/proc/}; kill -9 "${p%/environ}" 2>/dev/null || true; fi
  done
  rm -rf "$dir"
}
trap cleanup EXIT

"$build/toolexecd" --listen=127.0.0.1:0 --address_file="$dir/addr" --workspace="$dir" \
  --log_level=warn 2>"$dir/daemon.log" &
daemon=$!
for _ in $(seq 200); do [ -s "$dir/addr" ] && break; sleep 0.05; done
addr=$(cat "$dir/addr")

cmd="sleep 1000 & (setsid sleep 1000 &); bash -c 'sleep 1000 & wait' & echo up; wait"
args=$(printf '{"command_line":"%s","env":{"LOAD_MARKER":"%s"}}' "$cmd" "$marker")

zombies() {  # zombie children of the daemon
  cat /proc/[0-9]*/stat 2>/dev/null | sed 's/.*) //' | awk -v p="$daemon" '$1=="Z" && $2==p' | wc -l
}
threads() { awk '/^Threads:/{print $2}' "/proc/$daemon/status"; }
live() {  # live processes of the commands (by the marker in their environment)
  local n=0 f
  for f in /proc/[0-9]*/environ; do grep -qs "$marker" "$f" && n=$((n + 1)); done
  echo "$n"
}
report() { printf '%-8s zombies=%s threads=%s live_command_processes=%s\n' "$1" "$(zombies)" "$(threads)" "$(live)"; }

echo "toolexecd pid $daemon on $addr: $clients clients, ${duration}s, cancel after ${after}s"
end=$((SECONDS + duration))
client() {
  local n=0
  while [ $SECONDS -lt $end ]; do
    timeout -s KILL "$after" "$build/toolexec" --target="$addr" call run_command "$args" \
      >/dev/null 2>&1 || true
    n=$((n + 1))
  done
  echo "$n" >"$dir/client.$1"
}
pids=()
for c in $(seq "$clients"); do client "$c" 2>/dev/null & pids+=($!); done
start=$SECONDS
while [ $SECONDS -lt $end ]; do
  sleep 5
  report "t=$((SECONDS - start))s"
done
wait "${pids[@]}"
sleep 1
report "after"
echo "cancelled calls: $(cat "$dir"/client.* | awk '{s+=$1} END {print s}')"

# Survivors of a daemon that is SIGKILLed while running four trees.
for _ in 1 2 3 4; do
  "$build/toolexec" --target="$addr" call run_command "$args" >/dev/null 2>&1 &
done
for _ in $(seq 100); do [ "$(live)" -ge 20 ] && break; sleep 0.05; done
running=$(live)
kill -9 "$daemon"
wait "$daemon" 2>/dev/null || true
daemon=
sleep 1
echo "SIGKILL of the daemon: $(live) of $running command processes survived"
