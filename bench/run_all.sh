#!/usr/bin/env bash
# Builds the benchmarks and runs every one of them with its anchor, in one run:
#   bench/run_all.sh            the full run whose figures BENCHMARKS.md reports (~15 min)
#   bench/run_all.sh --quick    a short run to check the runner itself (~3 min);
#                               its figures are not meaningful and are never reported
# Raw outputs go to bench/out/<UTC time>/ (git-ignored; bench/out/latest points at the
# newest); bench/summarize.py turns them into figures.md there. A full run also renders
# the PNG plots and copies them, with figures.md and machine.txt, into bench/results/
# (committed, embedded in BENCHMARKS.md). A quick run leaves bench/results/ alone.
#
# Every step is bounded (timeout) and the run goes on when one fails; each step's exit
# status is in status.txt. Only 127.0.0.1 is used. Needs: a Debian machine set up by
# scripts/setup.sh, ripgrep (bench_grep's anchor), the npm packages of bench/mcp
# (the MCP filesystem server and SDK) and of tests/e2e (grpc-js), and
# /usr/bin/python3 with python3-matplotlib for the plots.
set -uo pipefail
cd "$(dirname "$0")/.."
root="$PWD"

quick=0
[ "${1:-}" = "--quick" ] && quick=1
if [ "$quick" = 1 ]; then
  sweep_seconds=5; long_seconds=10; sweep_streams=(8 32); grep_runs=1
  overhead_args=(--quick); mcp_args=(--quick); command_args=(--quick); grep_args=(--quick)
else
  sweep_seconds="${SWEEP_SECONDS:-30}"; long_seconds=180; sweep_streams=(8 16 32 64); grep_runs=5
  overhead_args=(); mcp_args=(); command_args=(); grep_args=(--runs "$grep_runs")
fi

stamp="$(date -u +%Y%m%dT%H%M%SZ)"
out="bench/out/$stamp"
mkdir -p "$out"
ln -sfn "$stamp" bench/out/latest
echo "bench/run_all.sh: raw outputs in $out" >&2

# ---- the build ----------------------------------------------------------------
BUILD_JOBS="${BUILD_JOBS:-2}" nice -n 5 scripts/build.sh toolexecd bench_overhead bench_command \
  bench_grep bench_load bench_view_file_client bench_echo_server >"$out/build.txt" 2>&1 ||
  { echo "build failed: see $out/build.txt" >&2; exit 2; }

# ---- the machine --------------------------------------------------------------
{
  echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "commit: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!bench/results' ':!BENCHMARKS.md' || echo ' (with local changes)')"
  echo "mode: $([ "$quick" = 1 ] && echo 'QUICK (not meaningful)' || echo full)"
  echo "nproc: $(nproc)"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
  echo "memory: $(free -m | awk '/^Mem:/ {print $2 " MiB"}')"
  echo "kernel: $(uname -sr)"
  echo "os: $(. /etc/os-release && echo "$PRETTY_NAME")"
  echo "loadavg_before: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "ripgrep: $(rg --version 2>/dev/null | head -1)"
  echo "node: $(node --version 2>/dev/null)"
} >"$out/machine.txt"

: >"$out/status.txt"
# step NAME TIMEOUT_S COMMAND...: runs COMMAND with its output in $out/NAME.txt.
step() {
  local name="$1" limit="$2"
  shift 2
  echo "[$(date -u +%H:%M:%S)] $name: $*" >&2
  echo "\$ $*" >"$out/$name.txt"
  echo "loadavg: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/$name.txt"
  timeout --kill-after=10 "$limit" "$@" >>"$out/$name.txt" 2>&1
  local rc=$?
  echo "$name $rc" >>"$out/status.txt"
  [ "$rc" = 0 ] || echo "  $name exited $rc (see $out/$name.txt)" >&2
}

# ---- start-up: time to serve and idle RSS of a fresh daemon ---------------------
startup() {
  local ws addr
  ws="$(mktemp -d)"
  echo "what: 5 starts of \`build/toolexecd --listen=127.0.0.1:0 --workspace=TMP" \
    "--address_file=F --log_level=warn\` (default tools); time from fork to F written" \
    "(toolexecd writes it once serving; polled every 2 ms), and VmRSS 1 s later, split" \
    "into RssAnon (the daemon's own heap and stacks) and RssFile (program and library" \
    "pages mapped from files, shared with other processes)"
  for i in 1 2 3 4 5; do
    addr="$ws/addr-$i"
    local t0 t1 pid rss anon file
    t0=$(date +%s%N)
    build/toolexecd --listen=127.0.0.1:0 --workspace="$ws" --address_file="$addr" \
      --log_level=warn &
    pid=$!
    for _ in $(seq 1 1000); do [ -s "$addr" ] && break; sleep 0.002; done
    t1=$(date +%s%N)
    sleep 1
    rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status")
    anon=$(awk '/^RssAnon:/ {print $2}' "/proc/$pid/status")
    file=$(awk '/^RssFile:/ {print $2}' "/proc/$pid/status")
    kill -TERM "$pid"
    wait "$pid"
    echo "start $i: serving after $(( (t1 - t0) / 1000000 )) ms (address file written); idle RSS ${rss} KiB (anon ${anon} KiB, file ${file} KiB)"
  done
  rm -rf "$ws"
}

export -f startup
step startup 60 bash -c startup
step overhead 300 build/bench/bench_overhead "${overhead_args[@]}"
audit="$(mktemp)"
step overhead_policy 300 build/bench/bench_overhead "${overhead_args[@]}" --policy_rules=20 \
  --audit_log="$audit"
rm -f "$audit"
step command 120 build/bench/command/bench_command "${command_args[@]}"
step grep 600 build/bench/grep/bench_grep "${grep_args[@]}"
step mcp_view_file 300 env -C bench/mcp node view_file_vs_mcp.mjs "${mcp_args[@]}" \
  --toolexecd="$root/build/toolexecd" --client="$root/build/bench/mcp/bench_view_file_client"
step view_file_echo 300 env -C bench/mcp node view_file_vs_echo.mjs "${mcp_args[@]}" \
  --toolexecd="$root/build/toolexecd" --client="$root/build/bench/mcp/bench_view_file_client" \
  --echo_server="$root/build/bench/bench_echo_server"
step mcp_tool 300 env -C bench/mcp node mcp_tool_vs_direct.mjs "${mcp_args[@]}" \
  --toolexecd="$root/build/toolexecd" --client="$root/build/bench/mcp/bench_view_file_client"
step grep_threads 120 node bench/grep_threads.mjs build/toolexecd
step unread_results_1 60 node bench/unread_results.mjs build/toolexecd 1
step unread_results_4 60 node bench/unread_results.mjs build/toolexecd 4

# ---- bench_load: latency over load, then the long run ----------------------------
for n in "${sweep_streams[@]}"; do
  step "load_streams-$n" $(( sweep_seconds + 300 )) build/bench/load/bench_load --streams="$n" \
    --seconds="$sweep_seconds" --csv="$out/load_streams-$n.csv"
done
step load_long-64 $(( long_seconds + 300 )) build/bench/load/bench_load --streams=64 \
  --seconds="$long_seconds" --csv="$out/load_long-64.csv"

echo "loadavg_after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/machine.txt"
echo "finished: $(date -u '+%Y-%m-%d %H:%M:%S UTC')" >>"$out/machine.txt"

# ---- plots and the summary --------------------------------------------------------
/usr/bin/python3 bench/load/plot.py "$out" >&2 || echo "plots failed (python3-matplotlib?)" >&2
/usr/bin/python3 bench/summarize.py "$out" >"$out/figures.md" ||
  echo "summarize failed" >&2
if [ "$quick" = 0 ]; then
  mkdir -p bench/results
  cp "$out"/*.png "$out/figures.md" "$out/machine.txt" "$out/status.txt" bench/results/ 2>/dev/null
  echo "bench/run_all.sh: plots and figures copied to bench/results/" >&2
fi
echo "bench/run_all.sh: done; $out/figures.md" >&2
! grep -qv ' 0$' "$out/status.txt"
