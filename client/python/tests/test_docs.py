"""The README's Python example and examples/python/agent_loop.py run as written."""

import os
import re
import subprocess
import sys

import pytest

from conftest import CONFIG, REPO, Daemon, subprocess_env

EXAMPLE = os.path.join(REPO, "examples", "python", "agent_loop.py")
# Until toolexecd serves declaration formats, list_tools(format) says so; nothing
# else may fail.
PREDATES_FORMATS = "predates declaration formats"


def readme_python_example():
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
        section = f.read().split("\n## Python client\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"^```python\n(.*?)^```", section, re.S | re.M)
    assert len(blocks) == 1, "the README's Python client section has one Python example"
    return blocks[0]


def run_python(args, daemon, tmp_path):
    env = subprocess_env(TOOLEXEC_TARGET=daemon.address)
    proc = subprocess.run([sys.executable, *args], env=env, cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    if proc.returncode != 0 and PREDATES_FORMATS in proc.stderr:
        pytest.skip(f"this toolexecd has no declaration formats yet:\n{proc.stderr[-500:]}")
    assert proc.returncode == 0, f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    return proc.stdout


def test_readme_example_runs_as_written(daemon, tmp_path):
    out = run_python(["-c", readme_python_example()], daemon, tmp_path)
    lines = out.splitlines()
    assert re.match(r"\d+ tools, e\.g\. view_file$", lines[0])
    assert "progress: hello" in lines
    assert "'tool_use_id': 'toolu_1'" in out and "'tool_use_id': 'toolu_2'" in out
    assert '"answers": ["yes"]' in out
    assert "ERROR_CODE_UNKNOWN_TOOL no_such_tool" in lines
    assert lines[-1] == "{'count': 1}"


# What each provider's fake model does beyond the common turns, in its native shapes:
# the Responses API's model patches a file with an apply_patch_call, then reads it back
# with a shell_call; Claude runs bash, then the text editor's insert (and memory, when
# the daemon's config sets memory_dir).
NATIVE_TURNS = {
    "openai": [], "gemini": [],
    "openai_responses": ["  apply_patch -> success", "  [stdout] hello from the user",
                         "  shell -> success"],
    "anthropic": ["  [stdout] hello from the user", "  bash -> success",
                  "  str_replace_based_edit_tool -> success"],
}
ANTHROPIC_WITH_MEMORY = ["  [stdout] hello from the user", "  bash -> success",
                         "  memory -> success", "  str_replace_based_edit_tool -> success",
                         "  memory -> success"]


def agent_loop_transcript(out, provider, native):
    transcript = out.split(f"== {provider}\n", 1)[1].split("\n== ", 1)[0]
    assert transcript.splitlines() == [
        "  ask_question -> success", "  list_directory -> success",
        "  [stdout] hello from the user", "  run_command -> success",
        "  view_file -> error", *native,
        "  model: The command printed 'hello from the user'; no-such-file.txt is missing."]


def test_agent_loop_example_round_trips_in_every_provider_format(daemon, tmp_path):
    out = run_python([EXAMPLE, "--target", daemon.address], daemon, tmp_path)
    for provider, native in NATIVE_TURNS.items():
        agent_loop_transcript(out, provider, native)
    with open(os.path.join(daemon.workspace, "claude.txt"), encoding="utf-8") as f:
        assert f.read() == "# What the user said\nhello from the user\n"


def test_agent_loop_example_keeps_a_memory_when_memory_dir_is_set(tmp_path):
    # Anthropic's memory tool is declared only with memory_dir: Claude views /memories
    # and creates its note; a second run finds the note and views it instead.
    workspace, memories = tmp_path / "ws", tmp_path / "memories"
    workspace.mkdir()
    config = tmp_path / "toolexecd.textproto"
    with open(CONFIG, encoding="utf-8") as f:
        config.write_text(f.read() + f'memory_dir: "{memories}"\n', encoding="utf-8")
    d = Daemon(str(workspace), config=str(config))
    try:
        for _ in range(2):
            out = run_python([EXAMPLE, "anthropic", "--target", d.address], d, tmp_path)
            agent_loop_transcript(out, "anthropic", ANTHROPIC_WITH_MEMORY)
    finally:
        d.stop()
    [note] = list(memories.rglob("agent_loop.md"))
    assert note.read_text(encoding="utf-8") == "The user says hello.\n"


def test_agent_loop_example_refuses_an_unknown_provider(daemon, tmp_path):
    proc = subprocess.run([sys.executable, EXAMPLE, "claude"], capture_output=True, text=True,
                          env=subprocess_env(), timeout=60)
    assert proc.returncode == 2 and "unknown provider 'claude'" in proc.stderr
