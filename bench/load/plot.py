#!/usr/bin/python3
"""Renders bench_load's figures to PNG.

  /usr/bin/python3 bench/load/plot.py OUT_DIR

Reads OUT_DIR/load_streams-N.txt (bench_load's printed summary at N streams)
and OUT_DIR/load_long-64.csv (the per-second samples of the long run), and writes
OUT_DIR/latency_over_load.png (p50/p99 per tool against the stream count)
and OUT_DIR/resources_over_time.png (RSS, threads, fds, child processes and
results per second of the long run). Needs matplotlib (python3-matplotlib).
"""

import csv
import pathlib
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROW = re.compile(r"^\s+(\S+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)$")


def read_summary(path):
    """{tool: (p50_ms, p99_ms)} and results/s from one bench_load output."""
    tools, rate = {}, None
    for line in path.read_text().splitlines():
        m = ROW.match(line)
        if m:
            tools[m.group(1)] = (float(m.group(3)), float(m.group(4)))
        m = re.search(r"([\d.]+) results/s", line)
        if m:
            rate = float(m.group(1))
    return tools, rate


def latency_over_load(out):
    points = []
    for path in out.glob("load_streams-*.txt"):
        streams = int(path.stem.split("-")[1])
        tools, rate = read_summary(path)
        if tools and rate is not None:  # a run that failed to finish has no summary
            points.append((streams, tools, rate))
    if not points:
        return None
    points.sort(key=lambda p: p[0])
    names = sorted({t for _, tools, _ in points for t in tools})
    fig, (lat, thr) = plt.subplots(1, 2, figsize=(13, 5))
    for name in names:
        xs = [s for s, tools, _ in points if name in tools]
        line = lat.plot(xs, [tools[name][0] for s, tools, _ in points if name in tools],
                        marker="o", label=f"{name} p50")
        lat.plot(xs, [tools[name][1] for s, tools, _ in points if name in tools],
                 marker="x", linestyle="--", color=line[0].get_color())
    lat.set_xscale("log", base=2)
    lat.set_yscale("log")
    lat.set_xlabel("concurrent ExecuteBatch streams")
    lat.set_ylabel("result arrival after the batch was sent (ms); solid p50, dashed p99")
    lat.legend(fontsize=7)
    lat.grid(True, which="both", alpha=0.3)
    thr.plot([p[0] for p in points], [p[2] or 0 for p in points], marker="o")
    thr.set_xscale("log", base=2)
    thr.set_ylim(bottom=0)
    thr.set_xlabel("concurrent ExecuteBatch streams")
    thr.set_ylabel("results per second")
    thr.grid(True, alpha=0.3)
    fig.suptitle("toolexecd under bench_load: latency and throughput over load")
    target = out / "latency_over_load.png"
    fig.tight_layout()
    fig.savefig(target, dpi=110)
    return target


def resources_over_time(out):
    path = out / "load_long-64.csv"
    if not path.exists():
        return None
    with path.open() as f:
        rows = [{k: float(v) for k, v in row.items()} for row in csv.DictReader(f)]
    t = [r["t_s"] for r in rows]
    summary = out / "load_long-64.txt"
    m = re.search(r"(\d+) streams for (\d+) s against", summary.read_text()) \
        if summary.exists() else None
    streams, load_end = (m.group(1), float(m.group(2))) if m else ("64", None)
    fig, axes = plt.subplots(5, 1, figsize=(10, 11), sharex=True)
    for ax, key, label in zip(axes, ["rss_mib", "threads", "fds", "children"],
                              ["RSS (MiB)", "threads", "open fds", "child processes"]):
        ax.plot(t, [r[key] for r in rows])
        # The first row is the baseline, taken after warm-up and before the load.
        ax.axhline(rows[0][key], color="grey", linestyle=":", label="baseline")
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
    axes[0].legend(fontsize=8)
    if load_end is not None:
        for ax in axes:
            ax.axvline(load_end, color="red", linestyle="--", alpha=0.5)
    rate = [0.0] + [(b["results"] - a["results"]) / max(b["t_s"] - a["t_s"], 1e-9)
                    for a, b in zip(rows, rows[1:])]
    axes[4].plot(t, rate)
    axes[4].set_ylabel("results/s")
    axes[4].set_xlabel("seconds since the load started (red dashes: the load ends; after it the "
                       "daemon settles)")
    axes[4].grid(True, alpha=0.3)
    fig.suptitle(f"toolexecd resources during and after {streams} streams of bench_load")
    target = out / "resources_over_time.png"
    fig.tight_layout()
    fig.savefig(target, dpi=110)
    return target


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = pathlib.Path(sys.argv[1])
    for target in (latency_over_load(out), resources_over_time(out)):
        if target:
            print(f"wrote {target}")


if __name__ == "__main__":
    main()
