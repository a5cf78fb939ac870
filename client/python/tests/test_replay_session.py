"""A 100-batch coding session recorded against a real toolexecd and replayed.

The session builds a small Python package as a model would: it reads a ticket
(a command tool), explores the workspace (list_directory, find_file,
grep_search, view_file, the text editor's view), adds a function at a time
(edit_file, create_file, str_replace_based_edit_tool), runs the tests and
small scripts that write files and print (run_command), reads back what those
wrote, and posts notes through an MCP server's tool (tests/mcp/fixtures'
stdio server). Batches often hold several calls, which run concurrently, so
calls of one batch never touch a file or directory another call of it writes.
Checkpoints are on, as they would be for an agent.

Replayed from a fresh copy of the starting workspace against the same build,
every call is re-run and compared and none differs; with the ticket changed,
exactly the fetch_ticket results differ."""

import json
import os
import shutil
import sys
import tempfile

import pytest

import toolexec
from conftest import CONFIG, REPO, TOOLEXEC_CLI, Daemon, cli_replay, eventually, write_files
from toolexec import Client

# The commands' python: this one's binary itself (a shim on PATH may cost a second a start).
PYTHON = os.path.realpath(sys.executable)
UNRULY = os.path.join(REPO, "tests", "mcp", "fixtures", "unruly_server.py")
TICKET = "TICKET-7: textstats needs more statistics; add each with a unittest.\n"

START = {
    "README.md": "# textstats\n\nSmall statistics helpers.\n\n## Functions\n\n- mean\n",
    "CHANGELOG.md": "# Changelog\n\n## Unreleased\n\n## 0.1.0\n\n- mean\n",
    ".gitignore": "build/\n",
    "textstats/__init__.py": '"""textstats: statistics over lists of numbers."""\n'
                             "from .core import *  # noqa: F401,F403\n",
    "textstats/core.py": '"""Statistics over lists of numbers."""\n\n\n'
                         "def mean(values):\n    return sum(values) / len(values)\n\n"
                         "# end of functions\n",
    "tests/__init__.py": "",
    "tests/test_mean.py": "import unittest\n\nfrom textstats import mean\n\n\n"
                          "class TestMean(unittest.TestCase):\n    def test_mean(self):\n"
                          "        self.assertEqual(mean([1, 2, 3]), 2)\n",
}

# (name, code, the test's assertEqual arguments): one function per 5 batches.
# No `key=...` in the code: the recorder masks NAME=VALUE in any string when NAME
# looks secret (KEY does), and the replay sends the arguments as recorded, so
# such a file would be written as `key=[redacted]` on replay.
FEATURES = [
    ("median", "def median(values):\n    s = sorted(values)\n    m = len(s) // 2\n"
               "    return s[m] if len(s) % 2 else (s[m - 1] + s[m]) / 2\n",
     "median([3, 1, 2]), 2"),
    ("mode", "def mode(values):\n    best = None\n    for v in sorted(set(values)):\n"
             "        if best is None or values.count(v) > values.count(best):\n"
             "            best = v\n    return best\n",
     "mode([1, 2, 2, 3]), 2"),
    ("variance", "def variance(values):\n    m = mean(values)\n"
                 "    return sum((v - m) ** 2 for v in values) / len(values)\n",
     "variance([1, 2, 3, 4]), 1.25"),
    ("stdev", "def stdev(values):\n    return variance(values) ** 0.5\n",
     "stdev([2, 4, 4, 4, 5, 5, 7, 9]), 2.0"),
    ("value_range", "def value_range(values):\n    return max(values) - min(values)\n",
     "value_range([4, 9, 1]), 8"),
    ("total", "def total(values):\n    return sum(values)\n", "total([1, 2, 3]), 6"),
    ("product", "def product(values):\n    out = 1\n    for v in values:\n        out *= v\n"
                "    return out\n", "product([2, 3, 4]), 24"),
    ("geometric_mean", "def geometric_mean(values):\n"
                       "    return product(values) ** (1 / len(values))\n",
     "round(geometric_mean([1, 3, 9]), 6), 3.0"),
    ("harmonic_mean", "def harmonic_mean(values):\n"
                      "    return len(values) / sum(1 / v for v in values)\n",
     "harmonic_mean([1, 4, 4]), 2.0"),
    ("normalize", "def normalize(values):\n    low, span = min(values), value_range(values)\n"
                  "    return [(v - low) / span for v in values]\n",
     "normalize([2, 4, 6]), [0.0, 0.5, 1.0]"),
    ("zscores", "def zscores(values):\n    m, s = mean(values), stdev(values)\n"
                "    return [(v - m) / s for v in values]\n",
     "zscores([2, 4, 4, 4, 5, 5, 7, 9])[0], -1.5"),
    ("clamp", "def clamp(values, low, high):\n"
              "    return [min(max(v, low), high) for v in values]\n",
     "clamp([-1, 5, 11], 0, 10), [0, 5, 10]"),
]

TESTS = f"{PYTHON} -B -m unittest discover -s tests -t . 2>&1"


def c(name, **args):
    return {"name": name, "args": args}


def view(path, **args):
    return c("view_file", file_path=path, **args)


def run(command_line):
    return c("run_command", command_line=command_line)


def editor(command, path, **args):
    return c("str_replace_based_edit_tool", command=command, path=path, **args)


def note(text):
    return c("unruly__echo", text=text)


def unittest_source(name, check):
    camel = "".join(part.title() for part in name.split("_"))
    return (f"import unittest\n\nfrom textstats import {name}\n\n\n"
            f"class Test{camel}(unittest.TestCase):\n    def test_{name}(self):\n"
            f"        self.assertEqual({check})\n")


def session_batches():
    """The session's batches, each a list of calls (ids added by number)."""
    batches = [
        # Getting to know the task and the code.
        [c("list_directory", directory_path="."), c("fetch_ticket"), view("README.md")],
        [c("find_file", pattern="*.py"),
         c("grep_search", pattern=r"def \w+", output_mode="content"),
         note("starting TICKET-7")],
        [view("textstats/core.py"), view("tests/test_mean.py"), view("CHANGELOG.md")],
        [run(TESTS)],
        [run(f"mkdir -p build && {PYTHON} -B -c 'import textstats; "
             "print(textstats.mean([1, 2, 6]))' | tee build/smoke.txt")],
        [view("build/smoke.txt"), c("list_directory", directory_path="build"),
         c("find_file", pattern="*.txt")],
        [editor("view", "textstats"), editor("view", "README.md")],
        # A miss: edit_file names the closest line, nothing is written.
        [c("edit_file", file_path="textstats/core.py",
           edits=[{"old_string": "def  mean(values):", "new_string": "def mean(xs):"}])],
        [view("textstats/stats.py"),
         c("grep_search", pattern="mean", output_mode="files_with_matches")],
        [editor("create", "docs/DESIGN.md",
                file_text="# Design\n\nPure functions over lists; no dependencies.\n"),
         c("create_file", file_path="tests/helpers.py",
           contents="def approx(a, b, eps=1e-9):\n    return abs(a - b) < eps\n")],
    ]
    previous = "mean"
    for i, (name, code, check) in enumerate(FEATURES):
        look = [view("textstats/core.py"),
                c("grep_search", pattern=rf"def {name}\b", path="textstats",
                  output_mode="count")]
        if i % 4 == 0:
            look.append(c("fetch_ticket"))
        if i % 3 == 1:
            look.append(c("find_file", pattern="test_*.py", directory_path="tests"))
        batches += [
            look,
            # Two files, one call each: concurrent and independent.
            [c("edit_file", file_path="textstats/core.py",
               edits=[{"old_string": "# end of functions\n",
                       "new_string": f"{code}\n\n# end of functions\n"}]),
             c("create_file", file_path=f"tests/test_{name}.py",
               contents=unittest_source(name, check))],
            # The log holds no timing: view_file's sha256 of it could not be normalized.
            [run(f"{PYTHON} -B -m unittest -v tests.test_{name} 2>&1 | grep -E ' (ok|FAIL|ERROR)$'"
                 f" | tee build/{name}.log"),
             run("grep -c '^def ' textstats/core.py")],
            [view(f"build/{name}.log"), editor("view", "textstats/core.py", view_range=[1, 12]),
             note(f"{name}: added, its test passes")],
            [editor("str_replace", "README.md", old_str=f"- {previous}\n",
                    new_str=f"- {previous}\n- {name}\n"),
             c("edit_file", file_path="CHANGELOG.md",
               edits=[{"old_string": "## Unreleased\n\n", "new_string":
                       f"## Unreleased\n\n- add {name}\n"}])],
        ]
        previous = name
    batches += [
        # Everything together, then tidying up.
        [run(f"{TESTS} | tail -n 3")],
        [c("grep_search", pattern=r"^def ", path="textstats", output_mode="content"),
         c("find_file", pattern="test_*.py"), c("list_directory", directory_path="tests")],
        [run("wc -l textstats/*.py tests/*.py > build/lines.txt; cat build/lines.txt")],
        [view("build/lines.txt"), c("fetch_ticket"), note("all 13 tests pass")],
        # A str_replace that is not unique fails and says where.
        [editor("str_replace", "textstats/core.py", old_str="    return ",
                new_str="    return  ")],
        [editor("insert", "textstats/core.py", insert_line=1,
                insert_text="# Every function takes a non-empty list.\n")],
        [view("textstats/core.py", start_line=1, end_line=8)],
        [run(f"{PYTHON} -B -c 'import json, textstats; print(json.dumps(sorted(n for n in "
             "dir(textstats) if not n.startswith(\"_\"))))' | tee build/api.json")],
        [view("build/api.json"), c("grep_search", pattern="import", glob="*.py",
                                   output_mode="count")],
        [c("create_file", file_path="docs/API.md",
           contents="# API\n\n" + "".join(f"- `{n}(values)`\n" for n, _, _ in FEATURES)),
         editor("str_replace", "README.md", old_str="## Functions\n",
                new_str="## Functions\n\nSee docs/API.md.\n")],
        # 81: a failing command: a traceback through the workspace's files.
        [run(f"{PYTHON} -B -c 'import textstats; textstats.median([])'")],
        [c("grep_search", pattern=r"s\[m\]", path="textstats", output_mode="content",
           context_lines=1)],
        [c("edit_file", file_path="textstats/core.py",
           edits=[{"old_string": "    s = sorted(values)\n",
                   "new_string": "    if not values:\n"
                                 "        raise ValueError('median of nothing')\n"
                                 "    s = sorted(values)\n"}])],
        [run(f"{PYTHON} -B -c 'import textstats; textstats.median([])' 2>&1 | tail -n 1")],
        [c("edit_file", file_path="textstats/core.py",
           edits=[{"old_string": "values", "new_string": "xs", "replace_all": True}],
           dry_run=True)],
        [c("edit_file", file_path="textstats/core.py",
           edits=[{"old_string": "values", "new_string": "xs", "replace_all": True}])],
        [run(f"{TESTS} | tail -n 3"),
         c("grep_search", pattern="values", path="textstats", output_mode="count")],
        [run("sha256sum textstats/core.py README.md CHANGELOG.md | tee build/sums.txt")],
        [view("build/sums.txt"), c("list_directory", directory_path=".", depth=2)],
        [run("mkdir -p build/dist && cp -r textstats build/dist/ && "
             "find build/dist -type f | sort && echo copied > build/dist/STATUS")],
        # 91
        [view("build/dist/STATUS"), c("list_directory", directory_path="build/dist/textstats"),
         c("find_file", pattern="*.py", directory_path="build/dist")],
        [editor("str_replace", "CHANGELOG.md", old_str="## Unreleased\n",
                new_str="## 0.2.0\n")],
        [view("CHANGELOG.md", start_line=1, end_line=6), view("README.md")],
        [run("sed -n '1,4p' CHANGELOG.md > build/release-notes.txt && "
             "wc -c build/release-notes.txt")],
        [view("build/release-notes.txt"), note("release notes drafted")],
        [run("rm build/smoke.txt && ls build")],
        [c("find_file", pattern="*.txt", directory_path="build"),
         c("grep_search", pattern="TICKET", output_mode="files_with_matches")],
        [editor("view", "docs"), view("docs/API.md")],
        [run(f"{TESTS} | tail -n 1"), run("cat build/*.log | grep -c ' ok$'")],
        [c("fetch_ticket"), note("TICKET-7 done"), c("list_directory", directory_path="docs")],
    ]
    for b, calls in enumerate(batches, 1):
        for i, call in enumerate(calls):
            call["id"] = f"call_{b}_{i}"
    return batches


BATCHES = session_batches()
# The calls meant to fail (the rest must succeed, so the replay compares real work).
FAILING = {"call_8_0", "call_9_0", "call_75_0"}


def fill(directory):
    write_files(directory, START)


def set_ticket(root, text):
    with open(os.path.join(root, "ticket.txt"), "w", encoding="utf-8") as f:
        f.write(text)


@pytest.fixture(scope="module")
def coding_session():
    """The session recorded in ws-recorded (a daemon with the example config, a
    recording dir, checkpoints, the MCP server and the fetch_ticket command tool)."""
    root = tempfile.mkdtemp(prefix="toolexec-replay100-")
    workspaces = os.path.join(root, "workspaces")
    fill(os.path.join(workspaces, "ws-recorded"))
    set_ticket(root, TICKET)
    config = os.path.join(root, "toolexecd.textproto")
    with open(CONFIG, encoding="utf-8") as f:
        text = f.read()
    with open(config, "w", encoding="utf-8") as f:
        f.write(text + f'''
recording {{ dir: "{root}/recordings" }}
checkpoints {{ enabled: true store_dir: "{root}/checkpoints" }}
mcp_servers {{
  name: "unruly"
  command: ["{PYTHON}", "{UNRULY}"]
  prefix_tool_names: true
}}
command_tools {{
  name: "fetch_ticket"
  description: "The ticket being worked on."
  argv: ["/bin/sh", "-c", "cat > /dev/null; cat {root}/ticket.txt"]
  read_only: true
}}
''')
    daemon = Daemon(workspaces, config=config)
    try:
        with Client(daemon.address) as client:
            assert eventually(lambda: any(
                t["name"] == "unruly__echo" and not t.get("unavailable_reason")
                for t in client.list_tools())), daemon.log()
            session = client.open_session("conv", workspaces=["ws-recorded"], record=True)
            results = [session.run_batch(calls) for calls in BATCHES]
            path = session.info["recording"]
            session.close()
        yield {"root": root, "workspaces": workspaces, "daemon": daemon, "path": path,
               "results": results}
    finally:
        daemon.stop()
        shutil.rmtree(root, ignore_errors=True)


def fresh_workspace(recorded, name):
    fill(os.path.join(recorded["workspaces"], name))
    return name


def test_the_session_did_real_work(coding_session):
    assert len(BATCHES) == 100
    assert sum(map(len, BATCHES)) == len({c["id"] for calls in BATCHES for c in calls})
    failed = {r["id"]: r for results in coding_session["results"] for r in results
              if r["status"] != "RESULT_STATUS_SUCCESS"}
    assert set(failed) == FAILING, json.dumps(failed, indent=1)
    # Later batches read what earlier ones wrote.
    by_id = {r["id"]: r for results in coding_session["results"] for r in results}
    assert "Ran 13 tests" in by_id["call_71_0"]["model_content"]
    assert "OK" in by_id["call_99_0"]["model_content"]
    assert "ValueError: median of nothing" in by_id["call_84_0"]["model_content"]
    assert by_id["call_86_0"]["payload"]["replacements"] > 10
    assert "geometric_mean" in by_id["call_79_0"]["payload"]["content"]
    assert by_id["call_1_1"]["model_content"] == TICKET.strip()
    assert by_id["call_2_2"]["payload"] == {"result": "starting TICKET-7"}


def test_replay_against_the_same_build_compares_every_call_and_none_differs(coding_session):
    set_ticket(coding_session["root"], TICKET)
    code, report = cli_replay(coding_session["daemon"].address, coding_session["path"],
                              fresh_workspace(coding_session, "ws-same"))
    assert report["differences"] == 0, json.dumps(
        [b for b in report["batches"] if b["differences"]], indent=1)
    assert code == 0
    with open(coding_session["path"], encoding="utf-8") as f:
        recorded_results = sum(1 for line in f if json.loads(line).get("type") == "result")
    assert recorded_results == sum(map(len, BATCHES))
    # Not vacuous: every batch was run, every call sent and compared.
    assert [(b["batch"], b["calls"], b["compared"], b["from_recording"], b["notes"])
            for b in report["batches"]] == \
        [(n, len(calls), len(calls), 0, []) for n, calls in enumerate(BATCHES, 1)]
    assert sum(b["compared"] for b in report["batches"]) == recorded_results


def test_replay_with_another_ticket_reports_exactly_the_fetch_ticket_results(coding_session):
    set_ticket(coding_session["root"], "TICKET-8: something else entirely.\n")
    try:
        with Client(coding_session["daemon"].address) as client:
            report = toolexec.replay(coding_session["path"], client, cli=TOOLEXEC_CLI,
                                     workspace=fresh_workspace(coding_session, "ws-changed"),
                                     report=True)
    finally:
        set_ticket(coding_session["root"], TICKET)
    expected = [(b, i, c["id"], "fetch_ticket") for b, calls in enumerate(BATCHES, 1)
                for i, c in enumerate(calls) if c["name"] == "fetch_ticket"]
    assert len(expected) == 6
    diffs = [(b["batch"], d["index"], d["id"], d["name"])
             for b in report["batches"] for d in b["differences"]]
    assert diffs == expected, json.dumps(report, indent=1)
    assert report["differences"] == len(expected)
    assert sum(b["compared"] for b in report["batches"]) == sum(map(len, BATCHES))
    for b in report["batches"]:
        for d in b["differences"]:
            fields = {f["field"]: f for f in d["fields"]}
            assert set(fields) == {"payload", "model_content", "display.content"}
            assert "TICKET-7" in fields["model_content"]["recorded"]
            assert "TICKET-8" in fields["model_content"]["replayed"]
