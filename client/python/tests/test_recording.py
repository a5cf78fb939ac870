"""Session recordings against a real toolexecd: the exported transcripts are
exactly what tool_result_messages builds from the results the client got, and
`toolexec replay` finds no difference against the same build and exactly the
one result a changed file changes."""

import contextlib
import json
import os
import shutil
import subprocess
import tempfile

import pytest

from conftest import BATCHES, TOOLEXEC_CLI, Daemon, cli_replay, fill
import toolexec
from toolexec import Client, tool_result_messages

def test_native_export_holds_every_event_in_order(recorded):
    events = recorded["exports"][None]
    assert events[0]["format"] == "toolexec-recording/1"
    assert events[0]["session_id"] == recorded["session_id"]
    types = [e["type"] for e in events[1:]]
    expected = ["open_session"]
    for calls in BATCHES:
        expected += ["batch"] + ["result"] * len(calls)
    assert types == expected
    for b, calls in enumerate(BATCHES):
        got = [e["result"] for e in events[1:] if e["type"] == "result" and e["batch"] == b + 1]
        assert [r["id"] for r in got] == [c["id"] for c in calls]
        assert [r["model_content"] for r in got] == \
            [r["model_content"] for r in recorded["results"][b]]
    # The file on disk is the same, and ends with close_session.
    with open(recorded["path"], encoding="utf-8") as f:
        lines = [json.loads(line) for line in f]
    assert lines[:len(events)] == events
    assert lines[-1]["type"] == "close_session"


@pytest.mark.parametrize("fmt", ["openai", "anthropic", "gemini"])
def test_export_is_what_tool_result_messages_builds(recorded, fmt):
    exported = recorded["exports"][fmt]
    pos = 0
    for calls, results in zip(BATCHES, recorded["results"]):
        turn = exported[pos]
        pos += 1
        if fmt == "openai":
            assert turn["role"] == "assistant"
            assert [(c["id"], c["function"]["name"], json.loads(c["function"]["arguments"]))
                    for c in turn["tool_calls"]] == \
                [(c["id"], c["name"], c["args"]) for c in calls]
        elif fmt == "anthropic":
            assert turn["role"] == "assistant"
            assert [(b["type"], b["id"], b["name"], b["input"]) for b in turn["content"]] == \
                [("tool_use", c["id"], c["name"], c["args"]) for c in calls]
        else:
            assert turn["role"] == "model"
            assert [(p["functionCall"]["id"], p["functionCall"]["name"], p["functionCall"]["args"])
                    for p in turn["parts"]] == [(c["id"], c["name"], c["args"]) for c in calls]
        answer = tool_result_messages(results, fmt)
        assert exported[pos:pos + len(answer)] == answer
        pos += len(answer)
    assert pos == len(exported)


def test_responses_export_pairs_each_call_with_its_output(recorded):
    items = recorded["exports"]["openai_responses"]
    pos = 0
    for calls, results in zip(BATCHES, recorded["results"]):
        assert [(i["type"], i["call_id"], i["name"]) for i in items[pos:pos + len(calls)]] == \
            [("function_call", c["id"], c["name"]) for c in calls]
        pos += len(calls)
        assert items[pos:pos + len(results)] == [
            {"type": "function_call_output", "call_id": r["id"], "output": r["model_content"]}
            for r in results]
        pos += len(results)


def replay(recorded, workspace):
    return cli_replay(recorded["daemon"].address, recorded["path"], workspace)


def test_replay_against_the_same_build_finds_no_difference(recorded):
    code, report = replay(recorded, "ws2")
    assert report["differences"] == 0, json.dumps(report, indent=1)
    assert code == 0
    assert [b["calls"] for b in report["batches"]] == [len(c) for c in BATCHES]
    # ask_question is the harness's: answered from the recording.
    assert report["batches"][3]["from_recording"] == 1


def test_replay_reports_the_one_result_a_changed_file_changes(recorded):
    for ws in ("ws3", "ws4"):  # a fresh copy for each replay: a replay writes too
        fill(os.path.join(recorded["root"], ws))
        with open(os.path.join(recorded["root"], ws, "a.txt"), "w", encoding="utf-8") as f:
            f.write("omega\nneedle here\n")  # same size, same lines with "needle"
    code, report = replay(recorded, "ws3")
    assert code == 1
    assert report["differences"] == 1, json.dumps(report, indent=1)
    # The same through the Python client.
    with Client(recorded["daemon"].address) as client:
        [diff] = toolexec.replay(recorded["path"], client, workspace="ws4", cli=TOOLEXEC_CLI)
    assert (diff["batch"], diff["index"], diff["id"], diff["name"]) == (1, 0, "v1", "view_file")
    assert "model_content" in [f["field"] for f in diff["fields"]]


@contextlib.contextmanager
def recording_daemon(prefix, workspaces, config=""):
    """A daemon recording into <root>/recordings (plus `config`), whose
    workspace <root> holds `workspaces`: yields (root, daemon)."""
    root = tempfile.mkdtemp(prefix=prefix)
    try:
        for ws in workspaces:
            os.makedirs(os.path.join(root, ws))
        path = os.path.join(root, "toolexecd.textproto")
        with open(path, "w", encoding="utf-8") as f:
            f.write(f'recording {{ dir: "{root}/recordings" }}\n' + config)
        daemon = Daemon(root, config=path)
        try:
            yield root, daemon
        finally:
            daemon.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_replay_leaves_a_recorded_ask_timeout_to_time_out():
    """A permission request nobody answered is not answered in the replay either:
    the replayed call times out as the recorded one did, instead of being denied."""
    policy = ('policy { default_decision: DECISION_ALLOW ask_timeout_ms: 300\n'
              '  rules { name: "writes ask" tool: "create_file" decision: DECISION_ASK } }\n')
    with recording_daemon("toolexec-rec-ask-", ["ws1", "ws2"], policy) as (root, daemon):
        with Client(daemon.address) as client:
            session = client.open_session("conv", workspaces=["ws1"], record=True)
            for name, answer in (("yes.txt", "allow_once"), ("late.txt", None)):
                call = {"id": name, "name": "create_file",
                        "args": {"file_path": name, "contents": "x\n"}}
                for event in session.execute([call]):
                    if "permission_request" in event and answer:
                        client.respond_permission(
                            event["permission_request"]["request_id"], answer)
            path = session.info["recording"]
            session.close()
            with open(path, encoding="utf-8") as f:
                decisions = [json.loads(line).get("decision") for line in f
                             if '"permission_answer"' in line]
            assert decisions == ["allow_once", "timeout"]
            report = toolexec.replay(path, client, workspace="ws2", cli=TOOLEXEC_CLI,
                                     report=True)
        assert report["differences"] == 0, json.dumps(report, indent=1)


def test_replay_in_a_workspace_of_another_length_finds_no_difference():
    """A command's output naming the workspace is compared with the path made
    <workspace>; the streams' byte counts, which the path's length changes, are
    not compared (ReplayRules)."""
    with recording_daemon("toolexec-rec-path-", ["ws", "a-longer-workspace"]) as (root, daemon):
        with Client(daemon.address) as client:
            session = client.open_session("conv", workspaces=["ws"], record=True)
            [result] = session.run_batch([{"id": "p", "name": "run_command",
                                           "args": {"command_line": "pwd; pwd >&2"}}])
            path = session.info["recording"]
            session.close()
            here = os.path.realpath(os.path.join(root, "ws")) + "\n"
            assert (result["payload"]["stdout"], result["payload"]["stderr"]) == (here, here)
            report = toolexec.replay(path, client, workspace="a-longer-workspace",
                                     cli=TOOLEXEC_CLI, report=True)
        assert report["differences"] == 0, json.dumps(report, indent=1)
        assert report["batches"][0]["compared"] == 1


def test_replay_notes_a_call_recorded_with_a_masked_value():
    """The recorder masks what looks like a secret, also in code (`key=...` in
    Python); the replay sends the arguments as recorded and says which calls
    carried a masked value, so a difference that follows is explained."""
    with recording_daemon("toolexec-rec-mask-", ["ws1", "ws2"]) as (root, daemon):
        with Client(daemon.address) as client:
            session = client.open_session("conv", workspaces=["ws1"], record=True)
            session.run_batch([
                {"id": "plain", "name": "create_file",
                 "args": {"file_path": "a.py", "contents": "print(1)\n"}},
                {"id": "masked", "name": "create_file",
                 "args": {"file_path": "b.py", "contents": "API_KEY=sk-live-0123456789abcdef\n"}}])
            path = session.info["recording"]
            session.close()
            with open(path, encoding="utf-8") as f:
                assert "sk-live-0123456789abcdef" not in f.read()
            report = toolexec.replay(path, client, workspace="ws2", cli=TOOLEXEC_CLI, report=True)
        [batch] = report["batches"]
        assert batch["compared"] == 2
        notes = [n for n in batch["notes"] if "masked" in n]
        assert len(notes) == 1 and notes[0].startswith("call 1 (create_file)"), batch["notes"]


@pytest.mark.parametrize("fmt", [None, "anthropic", "openai_responses"])
def test_the_cli_exports_what_the_client_exports(recorded, fmt):
    """`toolexec export SESSION [--format F]`, as the README shows it."""
    argv = [TOOLEXEC_CLI, f"--target={recorded['daemon'].address}", "export",
            recorded["session_id"]] + (["--format", fmt] if fmt else [])
    run = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    if fmt is None:  # JSON lines, as written (the session is closed by now)
        with open(recorded["path"], encoding="utf-8") as f:
            assert run.stdout == f.read()
    else:
        assert json.loads(run.stdout) == recorded["exports"][fmt]


def test_responses_export_gives_native_items_back_in_their_own_form():
    """apply_patch_call and shell_call items are recorded as such and exported as
    the model sent them, answered exactly as tool_result_messages answers them."""
    root = tempfile.mkdtemp(prefix="toolexec-rec-native-")
    try:
        os.makedirs(os.path.join(root, "ws"))
        recordings = os.path.join(root, "recordings")
        config = os.path.join(root, "toolexecd.textproto")
        with open(config, "w", encoding="utf-8") as f:
            f.write(f'recording {{ dir: "{recordings}" }}\n')
        daemon = Daemon(root, config=config)
        try:
            items = [
                {"type": "apply_patch_call", "id": "apc_1", "call_id": "call_p",
                 "status": "completed",
                 "operation": {"type": "create_file", "path": "n.txt", "diff": "+one\n"}},
                {"type": "shell_call", "id": "sh_1", "call_id": "call_s", "status": "completed",
                 "action": {"commands": ["cat n.txt", "exit 3"], "timeout_ms": 10000,
                            "max_output_length": 4096}},
                {"type": "function_call", "call_id": "call_f", "name": "list_directory",
                 "arguments": "{}"},
            ]
            with Client(daemon.address) as client:
                session = client.open_session("conv", workspaces=["ws"], record=True)
                results = []
                for item in items:  # one batch each: the shell reads what the patch wrote
                    results += session.run_batch([item])
                exported = session.export("openai_responses")
                session.close()
        finally:
            daemon.stop()
        expected = []
        for item, result in zip(items, results):
            expected.append({k: v for k, v in item.items() if k != "id"})
            expected += tool_result_messages([result], "openai_responses")
        assert exported == expected, json.dumps(exported, indent=1)
        assert [e["type"] for e in exported[1::2]] == \
            ["apply_patch_call_output", "shell_call_output", "function_call_output"]
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_replay_starts_from_the_sessions_first_checkpoint():
    """Without --workspace, a replay first restores the recorded workspace to the
    session's first checkpoint (kept after the session closed), so it finds the
    files as the recorded session did; the report names that checkpoint and the
    undo checkpoint holding the workspace as it was before the replay."""
    root = tempfile.mkdtemp(prefix="toolexec-rec-cp-")
    try:
        # The store lies outside the daemon's workspace, as it must.
        ws = os.path.join(root, "daemon", "ws")
        os.makedirs(ws)
        with open(os.path.join(ws, "notes.txt"), "w", encoding="utf-8") as f:
            f.write("first\n")
        config = os.path.join(root, "toolexecd.textproto")
        with open(config, "w", encoding="utf-8") as f:
            f.write(f'recording {{ dir: "{root}/recordings" }}\n'
                    f'checkpoints {{ enabled: true store_dir: "{root}/store" }}\n')
        daemon = Daemon(os.path.join(root, "daemon"), config=config)
        try:
            with Client(daemon.address) as client:
                session = client.open_session("conv", workspaces=["ws"], record=True)
                batches = [
                    [{"id": "v", "name": "view_file", "args": {"file_path": "notes.txt"}}],
                    [{"id": "c", "name": "create_file",
                      "args": {"file_path": "plan.md", "contents": "step 1\n"}},
                     {"id": "r", "name": "run_command",
                      "args": {"command_line": "echo second >> notes.txt && cat notes.txt"}}],
                    [{"id": "v2", "name": "view_file", "args": {"file_path": "notes.txt"}}],
                ]
                checkpoints = []
                for calls in batches:
                    for event in session.execute(calls):
                        if "checkpoint" in event:
                            checkpoints.append(event["checkpoint"]["id"])
                        if "result" in event:
                            assert event["result"]["status"] == "RESULT_STATUS_SUCCESS", event
                path = session.info["recording"]
                session.close()
                assert len(checkpoints) == 1
                with open(os.path.join(ws, "notes.txt"), "a", encoding="utf-8") as f:
                    f.write("edited after the session\n")

                report = toolexec.replay(path, client, cli=TOOLEXEC_CLI, report=True)
            assert report["differences"] == 0, json.dumps(report, indent=1)
            assert [b["compared"] for b in report["batches"]] == [1, 2, 1]
            assert report["start_checkpoint"] == checkpoints[0]
            assert report["undo_checkpoint"]
            with open(os.path.join(ws, "notes.txt"), encoding="utf-8") as f:
                assert f.read() == "first\nsecond\n"  # as the replay left it
        finally:
            daemon.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)
