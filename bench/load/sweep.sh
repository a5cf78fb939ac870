#!/usr/bin/env bash
# Runs bench_load at several stream counts and renders the plots.
#   bench/load/sweep.sh [SECONDS] [OUT_DIR] [STREAMS...]
# Defaults: 60 s per point, bench/load/out, streams 8 16 32 64; then a final
# 64-stream run of 180 s whose samples give the resources-over-time plot.
# Needs a build (scripts/build.sh bench_load) and, for the plots, python3-matplotlib.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds="${1:-60}"
out="${2:-bench/load/out}"
shift $(( $# > 2 ? 2 : $# ))
streams=("$@")
[ ${#streams[@]} -gt 0 ] || streams=(8 16 32 64)
mkdir -p "$out"
for n in "${streams[@]}"; do
  echo "bench_load: $n streams for $seconds s" >&2
  build/bench/load/bench_load --streams="$n" --seconds="$seconds" \
    --csv="$out/load_streams-$n.csv" | tee "$out/load_streams-$n.txt"
done
build/bench/load/bench_load --streams=64 --seconds=180 --csv="$out/load_long-64.csv" | tee "$out/load_long-64.txt"
/usr/bin/python3 bench/load/plot.py "$out"
