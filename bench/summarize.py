#!/usr/bin/python3
"""Turns one bench/run_all.sh run into Markdown tables of figures.

  /usr/bin/python3 bench/summarize.py bench/out/latest > figures.md

Reads the raw outputs of the run (overhead.txt, command.txt, grep.txt, ...) and
prints, per benchmark, a table: figure, the docs/DESIGN.md goal, measured, the
anchor measured in the same run, the ratio, and whether the target is met.
A benchmark whose output is missing or unparsable is listed as not measured.
"""

import os
import pathlib
import re
import sys


def read(out, name):
    path = out / f"{name}.txt"
    return path.read_text(errors="replace") if path.exists() else ""


REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def command_of(text):
    """The command line a step ran (its first line, `$ cmd`), with paths in this
    checkout written relative to it, so the summary reads the same on any machine."""
    first = text.splitlines()[0] if text else ""
    return first[2:].replace(REPO + "/", "") if first.startswith("$ ") else "?"


def loadavg_of(text):
    m = re.search(r"^loadavg: (.*)$", text, re.M)
    return m.group(1) if m else "?"


def verdict(ok):
    return "met" if ok else "**not met**"


def table(rows):
    lines = ["| figure | target | measured | anchor (same run) | ratio | |",
             "|---|---|---|---|---|---|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def section(title, text, rows, note="", show_command=True):
    print(f"### {title}\n")
    if not text:
        print("Not measured in this run.\n")
        return
    if show_command:
        print(f"`{command_of(text)}` (load average at its start: {loadavg_of(text)})\n")
    if rows:
        print(table(rows))
    if note:
        print(f"\n{note}")
    print()


def overhead_tables(text):
    """{"Sequential"/"Concurrent": {"echo": (p50, p99, rps), "daemon": ...}}."""
    tables, current = {}, None
    for line in text.splitlines():
        m = re.match(r"^(Sequential|Concurrent):", line)
        if m:
            current = tables.setdefault(m.group(1), {})
            continue
        if line.startswith("Batches") or line.startswith("Auth"):
            current = None
        m = re.match(r"^\s+(echo|daemon)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", line)
        if m and current is not None:
            current[m.group(1)] = tuple(float(m.group(i)) for i in (2, 3, 4))
    return tables


def batch_median(text, what):
    m = re.search(re.escape(what) + r"\s+min\s+([\d.]+) ms\s+median\s+([\d.]+) ms", text)
    return float(m.group(2)) if m else None


def overhead(out):
    text = read(out, "overhead")
    rows = []
    tables = overhead_tables(text)
    for mode, label in (("Sequential", "sequential"), ("Concurrent", "8 clients")):
        t = tables.get(mode, {})
        if "echo" not in t or "daemon" not in t:
            continue
        (ep50, _, erps), (dp50, dp99, drps) = t["echo"], t["daemon"]
        r = dp50 / ep50
        rows.append([f"trivial call p50, {label}", "≤ 1.10× echo", f"{dp50:.0f} µs (p99 {dp99:.0f})",
                     f"{ep50:.0f} µs", f"{r:.2f}×", verdict(r <= 1.10)])
        r = drps / erps
        rows.append([f"trivial call throughput, {label}", "≥ 0.95× echo", f"{drps:.0f} RPC/s",
                     f"{erps:.0f} RPC/s", f"{r:.2f}×", verdict(r >= 0.95)])
    waits = batch_median(text, "x wait{ms:100}")
    if waits is not None:
        rows.append(["64 × wait 100 ms in one batch (median)", "< 110 ms", f"{waits:.1f} ms", "",
                     "", verdict(waits < 110)])
    d = batch_median(text, "daemon 1000 x get_weather")
    e = batch_median(text, "echo   1000 x get_weather")
    if d is not None and e is not None:
        rows.append(["1,000 trivial calls in one batch (median)", "≤ 1.5× echo", f"{d:.1f} ms",
                     f"{e:.1f} ms", f"{d / e:.2f}×", verdict(d / e <= 1.5)])
    auth = []
    for line in text.splitlines():
        if line.startswith("Auth, "):
            auth.append(f"\n{line.strip()}\n")
        m = re.match(r"^\s+(plaintext|token|TLS\+token|TLS)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+"
                     r"([\d.]+)x\s+([+-]\d+)\s+([\d.]+)x", line)
        if m:
            auth.append(f"- {m.group(1)}: p50 {float(m.group(2)):.0f} µs ({m.group(5)}× plaintext, "
                        f"{m.group(6)} µs), {float(m.group(4)):.0f} RPC/s ({m.group(7)}×)")
    note = "What authentication costs per call (no DESIGN target; anchor: plaintext):\n" + \
        "\n".join(auth) if auth else ""
    section("bench_overhead: ExecuteBatch against a bare gRPC echo", text, rows, note)
    return tables


def policy(out, plain):
    text = read(out, "overhead_policy")
    rows = []
    with_policy = overhead_tables(text)
    for mode, label in (("Sequential", "sequential"), ("Concurrent", "8 clients")):
        a, b = plain.get(mode, {}), with_policy.get(mode, {})
        if not all(k in t for t in (a, b) for k in ("echo", "daemon")):
            continue
        plain_ratio = a["daemon"][0] / a["echo"][0]
        policy_ratio = b["daemon"][0] / b["echo"][0]
        r = policy_ratio / plain_ratio
        rows.append([f"trivial call p50 with a 20-rule policy + audit log, {label}",
                     "≤ 1.10× without", f"{b['daemon'][0]:.0f} µs = {policy_ratio:.2f}× its echo",
                     f"without: {a['daemon'][0]:.0f} µs = {plain_ratio:.2f}× its echo",
                     f"{r:.2f}×", verdict(r <= 1.10)])
    section("Policy and audit log: the same call with and without them", text, rows,
            "The two daemons ran in separate bench_overhead runs, one after the other; each is "
            "normalised by the echo of its own run, so the ratio is of daemon/echo ratios.")


def command(out):
    text = read(out, "command")
    p50 = {}
    for line in text.splitlines():
        m = re.match(r"^\s+(.+?)\s{2,}(\d+)\s+(\d+)\s+(\d+)$", line)
        if m:
            p50[m.group(1)] = (float(m.group(2)), float(m.group(4)))
    rows = []
    d = p50.get('run_command "true" (ExecuteBatch to toolexecd)')
    b = p50.get("posix_spawn /bin/bash -c true + waitpid")
    t = p50.get("posix_spawn /bin/true + waitpid")
    if d and b:
        r = d[0] / b[0]
        rows.append(['run_command "true" through the daemon, p50', "≤ 1.3× bash -c true",
                     f"{d[0]:.0f} µs (p99 {d[1]:.0f})", f"bash -c true: {b[0]:.0f} µs",
                     f"{r:.2f}×", verdict(r <= 1.3)])
    if d and t:
        rows.append(['run_command "true" through the daemon, p50', "(reference)",
                     f"{d[0]:.0f} µs", f"/bin/true: {t[0]:.0f} µs", f"{d[0] / t[0]:.2f}×", ""])
    section("bench_command: run_command against spawning the command directly", text, rows)


def grep(out):
    text = read(out, "grep")
    rows = []
    for line in text.splitlines():
        m = re.match(r"^(.+?)\s{2,}(\S+)\s+(.+?)\s+wall: grep_search\s+([\d.]+) ms\s+rg\s+([\d.]+) ms"
                     r"\s+ratio\s+([\d.]+)", line)
        if m:
            r = float(m.group(6))
            rows.append([f"`{m.group(1).strip()}` ({m.group(2)}, {m.group(3).strip()})",
                         "≤ 0.8× rg", f"{float(m.group(4)):.1f} ms", f"rg {float(m.group(5)):.1f} ms",
                         f"{r:.2f}×", verdict(r <= 0.8)])
    m = re.search(r"^tree: (.*)$", text, re.M)
    section("bench_grep: grep_search against ripgrep", text, rows,
            f"Tree: {m.group(1)}. Best-of-N wall time per query; both must find the same files."
            if m else "")


def mcp(out):
    text = read(out, "mcp_view_file")
    rows = []
    stats = {}
    for line in text.splitlines():
        m = re.match(r"^(toolexec \(C\+\+ client\)|MCP \(its SDK client\)|toolexec via grpc-js.*?)"
                     r"\s+(\d+)\s+(\d+) us\s+(\d+) us\s+(\d+) us\s+(\d+) us", line)
        if m:
            stats[m.group(1)] = (float(m.group(4)), float(m.group(6)))
    t, mc = stats.get("toolexec (C++ client)"), stats.get("MCP (its SDK client)")
    if t and mc:
        rows.append(["view_file of a 2.9 KB file, p50", "MCP ≥ 3× toolexec", f"{t[0]:.0f} µs",
                     f"MCP read_text_file {mc[0]:.0f} µs", f"MCP/toolexec {mc[0] / t[0]:.2f}×",
                     verdict(mc[0] / t[0] >= 3)])
        rows.append(["view_file of a 2.9 KB file, p99", "MCP ≥ 5× toolexec", f"{t[1]:.0f} µs",
                     f"MCP read_text_file {mc[1]:.0f} µs", f"MCP/toolexec {mc[1] / t[1]:.2f}×",
                     verdict(mc[1] / t[1] >= 5)])
    section("view_file against the MCP reference filesystem server", text, rows,
            "Each side from its own client: toolexec from its C++ client, the MCP server "
            "(`@modelcontextprotocol/server-filesystem`, stdio) from the MCP SDK's client.")


def latency_pair(out, name, title, labels, anchor, figure, target, limit, note):
    """A step that prints `<label> calls N p50 X us p99 Y us` for a measured side
    and its anchor (`labels`: the two line prefixes as regexes)."""
    text = read(out, name)
    rows = []
    found = [re.search(rf"^{label}\s+calls (\d+)\s+p50 (\d+) us\s+p99 (\d+) us", text, re.M)
             for label in labels]
    if all(found):
        (m50, m99), (a50, a99) = ((float(m.group(2)), float(m.group(3))) for m in found)
        rows.append([f"{figure}, p50", target, f"{m50:.0f} µs", f"{anchor} {a50:.0f} µs",
                     f"{m50 / a50:.2f}×", verdict(m50 / a50 <= limit)])
        rows.append([f"{figure}, p99", "(reference)", f"{m99:.0f} µs", f"{anchor} {a99:.0f} µs",
                     f"{m99 / a99:.2f}×", ""])
    section(title, text, rows, note)


def view_file_echo(out):
    latency_pair(out, "view_file_echo", "view_file against a cross-process gRPC echo",
                 (r"daemon view_file", r"echo"), "echo", "view_file of a 60-line file",
                 "≤ 1.3× cross-process echo", 1.3,
                 "Both from toolexec's C++ client, one process per round; the echo "
                 "(`bench_echo_server`) answers the same ExecuteBatch with the call's arguments.")


def mcp_tool(out):
    latency_pair(out, "mcp_tool",
                 "An MCP tool through toolexec against the MCP server called directly",
                 (r"toolexec \(C\+\+ client\)", r"direct \(MCP SDK\)"), "direct",
                 "MCP read_text_file through toolexec", "≤ 1.2× direct", 1.2,
                 "The MCP reference filesystem server over stdio, once as toolexecd's configured "
                 "MCP server (called as `fs__read_text_file` from toolexec's C++ client) and once "
                 "spawned by the MCP SDK's client and called directly (the anchor).")


def key_values(text):
    return dict(re.findall(r"(\w+)=(\S+)", text.splitlines()[-1])) if text.strip() else {}


def memory_threads(out):
    rows = []
    gt = read(out, "grep_threads")
    kv = key_values(gt)
    if kv:
        rows.append([f"threads during {kv.get('calls')} concurrent grep_search calls", "bounded",
                     f"peak {kv.get('threads_peak')}", f"idle {kv.get('threads_idle')}", "", ""])
    for n in (1, 4):
        text = read(out, f"unread_results_{n}")
        kv = key_values(text)
        if kv:
            rows.append([f"RSS, {n} client(s) never reading 1,000 × 300 KB view_file results",
                         "bounded", f"peak {kv.get('peak_rss')}, held {kv.get('held_rss')}",
                         f"after {kv.get('after_rss')}", "", ""])
    st = read(out, "startup")
    ms = [int(x) for x in re.findall(r"serving after (\d+) ms", st)]
    rss = [int(x) for x in re.findall(r"idle RSS (\d+) KiB", st)]
    if ms:
        med = sorted(ms)[len(ms) // 2]
        rows.append(["start to serving (address file written), median of 5", "< 100 ms",
                     f"{med} ms", "", "", verdict(med < 100)])
    split = [(int(a), int(f)) for a, f in re.findall(r"\(anon (\d+) KiB, file (\d+) KiB\)", st)]
    if rss:
        med = sorted(rss)[len(rss) // 2] / 1024
        parts = ""
        if split:
            anon = sorted(a for a, _ in split)[len(split) // 2] / 1024
            mapped = sorted(f for _, f in split)[len(split) // 2] / 1024
            parts = f" ({anon:.1f} anonymous + {mapped:.1f} mapped from files)"
        rows.append(["idle RSS 1 s after start, median of 5", "< 20 MiB", f"{med:.1f} MiB{parts}",
                     "", "", verdict(med < 20)])
    what = re.search(r"^what: (.*)$", st, re.M)
    commands = [f"`{command_of(read(out, n))}` (load average {loadavg_of(read(out, n))})"
                for n in ("grep_threads", "unread_results_1", "unread_results_4") if read(out, n)]
    section("Start-up, idle memory, threads and memory under clients that do not read",
            gt or st, rows,
            (f"Start-up: {what.group(1)} (load average {loadavg_of(st)}).\n\n" if what else "") +
            "Commands: " + ", ".join(commands) + ".", show_command=False)


def load_summary(text):
    s = {"tools": {}}
    for key in ("batches", "cancelled", "disconnected", "results", "lost", "misordered", "wrong",
                "stuck", "rpc_errors"):
        m = re.search(rf"\b{key}=(\d+)", text)
        s[key] = int(m.group(1)) if m else None
    m = re.search(r"([\d.]+) results/s", text)
    s["rate"] = float(m.group(1)) if m else None
    for line in text.splitlines():
        m = re.match(r"^\s+(\S+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)$", line)
        if m:
            s["tools"][m.group(1)] = tuple(float(m.group(i)) for i in range(2, 7))
        m = re.match(r"^\s+(baseline|peak|after)\s+rss=([\d.]+) MiB threads=(\d+) fds=(\d+) "
                     r"children=(\d+)", line)
        if m:
            s[m.group(1)] = (float(m.group(2)), int(m.group(3)), int(m.group(4)), int(m.group(5)))
    m = re.search(r"resources (returned|did NOT return) to baseline (\d+) s after the load; "
                  r"daemon exit on SIGTERM: (.*)$", text, re.M)
    if m:
        s["returned"], s["settle_s"], s["exit"] = m.group(1) == "returned", m.group(2), m.group(3)
    return s


def load(out):
    text = read(out, "load_long-64")
    rows = []
    s = load_summary(text) if text else None
    if s and s.get("baseline"):
        for key in ("lost", "misordered", "wrong", "stuck", "rpc_errors"):
            rows.append([f"{key} results" if key not in ("stuck", "rpc_errors") else key, "0",
                         str(s[key]), "", "", verdict(s[key] == 0)])
        b, p, a = s["baseline"], s["peak"], s["after"]
        rows.append(["RSS after the load", "≤ baseline + 64 MiB", f"{a[0]:.1f} MiB (peak {p[0]:.1f})",
                     f"baseline {b[0]:.1f} MiB", f"+{a[0] - b[0]:.1f} MiB",
                     verdict(a[0] <= b[0] + 64)])
        for i, name in ((1, "threads"), (2, "open fds"), (3, "child processes")):
            tol = 0 if i == 3 else 4
            rows.append([f"{name} after the load", f"≤ baseline + {tol}", f"{a[i]} (peak {p[i]})",
                         f"baseline {b[i]}", f"{a[i] - b[i]:+d}", verdict(a[i] <= b[i] + tol)])
        rows.append(["daemon exit on SIGTERM", "exit 0", s.get("exit", "?"), "", "",
                     verdict(s.get("exit") == "exit 0")])
    note = ""
    if s and s.get("baseline"):
        note = (f"{s['batches']} batches ({s['cancelled']} cancelled by the client, "
                f"{s['disconnected']} lost their client to a deadline), {s['results']} results, "
                f"{s['rate']:.0f} results/s; resources back {s.get('settle_s', '?')} s after "
                "the load.\n\n| tool | calls | p50 ms | p99 ms | run p50 ms | run p99 ms |\n"
                "|---|---|---|---|---|---|\n" +
                "\n".join(f"| {t} | {v[0]:.0f} | {v[1]:.2f} | {v[2]:.2f} | {v[3]:.2f} | {v[4]:.2f} |"
                          for t, v in sorted(s["tools"].items())) +
                "\n\np50/p99: the result's arrival after the batch was sent (it includes waiting "
                "for earlier calls of the batch, as a harness sees it); run: the daemon's own "
                "duration of the call.")
    section("bench_load: 64 concurrent ExecuteBatch streams of mixed tools", text, rows, note)

    sweep = []
    for path in sorted(out.glob("load_streams-*.txt"), key=lambda p: int(p.stem.split("-")[1])):
        n = int(path.stem.split("-")[1])
        t = path.read_text(errors="replace")
        s = load_summary(t)
        if s["rate"] is None:
            continue
        tools = s["tools"]
        cell = lambda k: (f"{tools[k][1]:.1f} / {tools[k][2]:.1f}" if k in tools else "")  # noqa: E731
        sweep.append(f"| {n} | {s['rate']:.0f} | {cell('calculate_sum')} | {cell('view_file')} | "
                     f"{cell('grep_search')} | {cell('run_command')} | {cell('wait')} | "
                     f"{s['lost']}/{s['misordered']}/{s['wrong']}/{s['stuck']} | "
                     f"{loadavg_of(t)} |")
    if sweep:
        first = sorted(out.glob("load_streams-*.txt"))[0].read_text(errors="replace")
        print("### bench_load: latency over load\n")
        print(f"`{command_of(first)}` and the same with the other stream counts.\n")
        print("| streams | results/s | calculate_sum p50/p99 ms | view_file | grep_search | "
              "run_command | wait 5–50 ms | lost/misordered/wrong/stuck | load average |")
        print("|---|---|---|---|---|---|---|---|---|")
        print("\n".join(sweep))
        print()


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = pathlib.Path(sys.argv[1])
    machine = (out / "machine.txt").read_text() if (out / "machine.txt").exists() else ""
    print("Machine:\n\n```\n" + machine.strip() + "\n```\n")
    plain = overhead(out)
    policy(out, plain)
    command(out)
    grep(out)
    mcp(out)
    view_file_echo(out)
    mcp_tool(out)
    memory_threads(out)
    load(out)
    status = (out / "status.txt").read_text().split("\n") if (out / "status.txt").exists() else []
    failed = [line for line in status if line and not line.endswith(" 0")]
    print("Steps that exited non-zero: " + (", ".join(failed) if failed else "none") + ".")


if __name__ == "__main__":
    main()
