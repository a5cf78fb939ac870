"""The providers' own documented examples, replayed against a real toolexecd.

Each test feeds a model's tool call exactly as the provider's documentation
shows it (an Anthropic tool_use block; a Responses API shell_call or
apply_patch_call item) to ``Session.execute`` and checks that
``tool_result_messages`` answers it in the documented shape (keys and types),
with the documented text wherever that text is deterministic. The source of
each example is named above it. What test_editing_tools.py and
test_scripted_agent.py already cover (the is_prime round trip, str_replace's
match errors, apply_patch's V4A text, a shell_call with exit 0) is not
repeated here.
"""

import os

import pytest

from conftest import memory_daemon, tool_use
from toolexec import Client, providers

BASH_DOC = "https://platform.claude.com/docs/en/agents-and-tools/tool-use/bash-tool"
EDITOR_DOC = "https://platform.claude.com/docs/en/agents-and-tools/tool-use/text-editor-tool"
MEMORY_DOC = "https://platform.claude.com/docs/en/agents-and-tools/tool-use/memory-tool"
SHELL_DOC = "https://developers.openai.com/api/docs/guides/tools-shell"
PATCH_DOC = "https://developers.openai.com/api/docs/guides/tools-apply-patch"


@pytest.fixture(scope="module")
def native_daemon():
    """A daemon with memory_dir set, so that every native tool is registered."""
    yield from memory_daemon("toolexec-doc")


@pytest.fixture
def session(native_daemon, request):
    with Client(native_daemon.address) as client:
        with client.open_session(request.node.name, user_id=request.node.name) as s:
            yield s


def ws_path(daemon, *parts):
    return os.path.join(daemon.workspace, *parts)


def write(daemon, name, text):
    path = ws_path(daemon, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def read(daemon, name):
    with open(ws_path(daemon, name), encoding="utf-8") as f:
        return f.read()


def execute(session, calls):
    """The results of one batch, in call order (session.execute's result events)."""
    results = [e["result"] for e in session.execute(calls) if "result" in e]
    assert [r["index"] for r in results] == list(range(len(calls)))
    return results


def claude_turn(session, *blocks):
    """Runs tool_use blocks; returns the tool_result blocks of the one user message
    tool_result_messages makes, each checked to be in the documented shape."""
    messages = providers.tool_result_messages(execute(session, blocks), "anthropic")
    assert len(messages) == 1 and messages[0]["role"] == "user"
    results = messages[0]["content"]
    assert [r["tool_use_id"] for r in results] == [b["id"] for b in blocks]
    for r in results:
        assert set(r) == {"type", "tool_use_id", "content", "is_error"}, r
        assert r["type"] == "tool_result"
        assert isinstance(r["content"], str) and isinstance(r["is_error"], bool)
    return results


def responses_turn(session, *items):
    """Runs Responses API output items; returns their output items."""
    outputs = providers.tool_result_messages(execute(session, items), "openai_responses")
    assert [o["call_id"] for o in outputs] == [i["call_id"] for i in items]
    return outputs


def check_shell_call_output(item, n_commands):
    assert item["type"] == "shell_call_output"
    assert set(item) <= {"type", "call_id", "output", "max_output_length"}
    assert len(item["output"]) == n_commands
    for out in item["output"]:
        assert set(out) == {"stdout", "stderr", "outcome"}, out
        assert isinstance(out["stdout"], str) and isinstance(out["stderr"], str)
        outcome = out["outcome"]
        if outcome["type"] == "exit":
            assert set(outcome) == {"type", "exit_code"} and isinstance(outcome["exit_code"], int)
        else:
            assert outcome == {"type": "timeout"}


def check_apply_patch_call_output(item, call_id, status):
    assert set(item) == {"type", "call_id", "status", "output"}, item
    assert item["type"] == "apply_patch_call_output" and item["call_id"] == call_id
    assert item["status"] == status and isinstance(item["output"], str) and item["output"]


# ---- Anthropic bash tool (bash_20250124) ---------------------------------------------


# BASH_DOC, "Command chaining" (a script made with a heredoc, then run: the session
# keeps the file) and the common commands it lists (export PATH=... && echo $PATH;
# state persists between commands), "Process Claude's tool calls" ({"restart": true}),
# error handling ("Command not found").
def test_bash_documented_commands(session):
    # Step 2 of the chaining example, with a script that needs no network.
    script = "cat > fetch_joke.py << 'EOF'\nprint('Setup: why?')\nprint('Punchline: because')\nEOF"
    claude_turn(session, tool_use("toolu_bash_1", "bash", command=script))
    [run] = claude_turn(session, tool_use("toolu_bash_2", "bash", command="python3 fetch_joke.py"))
    assert run == {"type": "tool_result", "tool_use_id": "toolu_bash_2",
                   "content": "Setup: why?\nPunchline: because\n", "is_error": False}

    [path] = claude_turn(session, tool_use("toolu_bash_3", "bash",
                                           command="export PATH=$PATH:/new/path && echo $PATH"))
    assert path["content"].endswith(":/new/path\n") and not path["is_error"]
    [again] = claude_turn(session, tool_use("toolu_bash_4", "bash", command="echo $PATH"))
    assert again["content"] == path["content"]  # the environment persists

    [restarted] = claude_turn(session, tool_use("toolu_bash_5", "bash", restart=True))
    assert restarted["content"] == "tool has been restarted." and not restarted["is_error"]
    [fresh] = claude_turn(session, tool_use("toolu_bash_6", "bash", command="echo $PATH"))
    assert "/new/path" not in fresh["content"]

    [missing] = claude_turn(session, tool_use("toolu_bash_7", "bash", command="nonexistentcommand"))
    assert "nonexistentcommand: command not found" in missing["content"]
    assert "exit code 127" in missing["content"]


# BASH_DOC, "Command chaining", step 2: the heredoc prints nothing. The documented
# handler returns the command's output as the tool_result's content: here a text
# that says there was none, never the bash payload as JSON (an empty model_content
# would make tool_result_messages send the payload).
def test_bash_command_without_output_answers_its_output(session):
    [created] = claude_turn(session, tool_use("toolu_quiet", "bash",
                                              command="cat > quiet.txt << 'EOF'\nhi\nEOF"))
    assert not created["is_error"]
    assert created["content"] == "(no output)"


# ---- Anthropic text editor tool (text_editor_20250728) ---------------------------------

PRIMES = ('def is_prime(n):\n    """Check if a number is prime."""\n    if n <= 1:\n'
          '        return False\n    i = 2\n    while i * i <= n:\n        if n % i == 0:\n'
          '            return False\n        i += 1\n    return True\n\n'
          'def get_primes(limit):\n    primes = []\n    for num in range(2, limit + 1)\n'
          '        if is_prime(num):\n            primes.append(num)\n    return primes\n')
DOCSTRING = ('"""Module for working with prime numbers.\n\nThis module provides functions to '
             'check if a number is prime\nand to generate a list of prime numbers up to a '
             'given limit.\n"""\n')
TEST_PRIMES = ("import unittest\nimport primes\n\nclass TestPrimes(unittest.TestCase):\n"
               "    def test_is_prime(self):\n        self.assertTrue(primes.is_prime(2))\n"
               "        self.assertTrue(primes.is_prime(3))\n"
               "        self.assertFalse(primes.is_prime(4))\n\n"
               "if __name__ == '__main__':\n    unittest.main()")


# EDITOR_DOC, "Example: Fixing a syntax error with the text editor tool" (view primes.py,
# then the str_replace that adds the missing colon; the tool_use ids are the doc's) and
# the example view (a directory), insert (insert_text at line 0) and create commands;
# "Handle errors", "File not found" (is_error: true).
def test_text_editor_documented_syntax_error_fix(session, native_daemon):
    write(native_daemon, "primes.py", PRIMES)
    write(native_daemon, "src/util.py", "")
    E = "str_replace_based_edit_tool"
    view, listing = claude_turn(
        session, tool_use("toolu_01AbCdEfGhIjKlMnOpQrStU", E, command="view", path="primes.py"),
        tool_use("toolu_02B19r91rw91mr917835mr9", E, command="view", path="src/"))
    assert not view["is_error"]
    # Line numbers, which view_range and insert_line rely on (the doc's note).
    assert "    14\t    for num in range(2, limit + 1)\n" in view["content"]
    assert "src/util.py" in listing["content"] and not listing["is_error"]

    [fixed] = claude_turn(session, tool_use(
        "toolu_01PqRsTuVwXyZAbCdEfGh", E, command="str_replace", path="primes.py",
        old_str="    for num in range(2, limit + 1)",
        new_str="    for num in range(2, limit + 1):"))
    assert not fixed["is_error"]
    assert fixed["content"].startswith("Successfully replaced text at exactly one location.")
    assert "for num in range(2, limit + 1):" in fixed["content"]
    assert "    for num in range(2, limit + 1):\n" in read(native_daemon, "primes.py")

    inserted, created = claude_turn(
        session, tool_use("toolu_ins", E, command="insert", path="primes.py", insert_line=0,
                          insert_text=DOCSTRING),
        tool_use("toolu_new", E, command="create", path="test_primes.py", file_text=TEST_PRIMES))
    assert not inserted["is_error"] and "Module for working with prime numbers." in inserted[
        "content"]
    assert read(native_daemon, "primes.py") == DOCSTRING + PRIMES.replace(
        "range(2, limit + 1)\n", "range(2, limit + 1):\n")
    assert created == {"type": "tool_result", "tool_use_id": "toolu_new",
                       "content": "File created successfully at: test_primes.py",
                       "is_error": False}
    assert read(native_daemon, "test_primes.py") == TEST_PRIMES
    # The fixed module passes the test file the model wrote.
    [tests] = claude_turn(session, tool_use("toolu_run", "bash",
                                            command="python3 -m unittest -q test_primes 2>&1 "
                                                    "| tail -n 1"))
    assert tests["content"] == "OK\n"

    [missing] = claude_turn(session, tool_use("toolu_01A09q90qw90lq917835lq9", E, command="view",
                                              path="no_such_file.py"))
    assert missing["is_error"] and "no_such_file.py" in missing["content"]
    assert "not found" in missing["content"].lower() or "does not exist" in missing["content"]


# ---- Anthropic memory tool (memory_20250818) ------------------------------------------


# MEMORY_DOC, "Tool commands": each command's documented example input and its
# documented return value or error text.
def test_memory_documented_commands(session):
    M = "memory"
    [empty] = claude_turn(session, tool_use("toolu_01C4D5E6F7G8H9I0J1K2L3M4", M, command="view",
                                            path="/memories"))
    assert empty["content"].startswith(
        "Here're the files and directories up to 2 levels deep in /memories, excluding hidden")
    assert not empty["is_error"]

    notes = "Meeting notes:\n- Discussed project timeline\n- Next steps defined\n"
    created = claude_turn(
        session, tool_use("toolu_m1", M, command="create", path="/memories/notes.txt",
                          file_text=notes),
        tool_use("toolu_m2", M, command="create", path="/memories/preferences.txt",
                 file_text="Favorite color: blue\n"),
        tool_use("toolu_m3", M, command="create", path="/memories/todo.txt",
                 file_text="- Write tests\n- Run tests\n- Ship\n"),
        tool_use("toolu_m4", M, command="create", path="/memories/old_file.txt", file_text="x\n"),
        tool_use("toolu_m5", M, command="create", path="/memories/draft.txt", file_text="d\n"))
    assert [c["content"] for c in created] == [
        f"File created successfully at: /memories/{name}"
        for name in ("notes.txt", "preferences.txt", "todo.txt", "old_file.txt", "draft.txt")]

    # view of a file: the header, then 6-wide right-aligned line numbers and a tab.
    [view] = claude_turn(session, tool_use("toolu_01D5E6F7G8H9I0J1K2L3M4N5", M, command="view",
                                           path="/memories/notes.txt"))
    assert view["content"].startswith(
        "Here's the content of /memories/notes.txt with line numbers:\n"
        "     1\tMeeting notes:\n     2\t- Discussed project timeline\n"
        "     3\t- Next steps defined\n")

    replaced, inserted = claude_turn(
        session, tool_use("toolu_m6", M, command="str_replace", path="/memories/preferences.txt",
                          old_str="Favorite color: blue", new_str="Favorite color: green"),
        tool_use("toolu_m7", M, command="insert", path="/memories/todo.txt", insert_line=2,
                 insert_text="- Review memory tool documentation\n"))
    assert replaced["content"].startswith("The memory file has been edited.")
    assert "Favorite color: green" in replaced["content"]
    assert inserted["content"] == "The file /memories/todo.txt has been edited."
    [todo] = claude_turn(session, tool_use("toolu_m8", M, command="view",
                                           path="/memories/todo.txt", view_range=[2, 4]))
    assert todo["content"] == ("Here's the content of /memories/todo.txt with line numbers:\n"
                               "     2\t- Run tests\n     3\t- Review memory tool documentation\n"
                               "     4\t- Ship")

    deleted, renamed = claude_turn(
        session, tool_use("toolu_m9", M, command="delete", path="/memories/old_file.txt"),
        tool_use("toolu_m10", M, command="rename", old_path="/memories/draft.txt",
                 new_path="/memories/final.txt"))
    assert deleted["content"] == "Successfully deleted /memories/old_file.txt"
    assert renamed["content"] == "Successfully renamed /memories/draft.txt to /memories/final.txt"
    assert not deleted["is_error"] and not renamed["is_error"]

    [listing] = claude_turn(session, tool_use("toolu_m11", M, command="view", path="/memories"))
    names = [line.split("\t")[1] for line in listing["content"].splitlines()[1:]]
    assert names == ["/memories", "/memories/final.txt", "/memories/notes.txt",
                     "/memories/preferences.txt", "/memories/todo.txt"]

    # The documented errors, as tool results marked is_error.
    gone, exists = claude_turn(
        session, tool_use("toolu_m12", M, command="view", path="/memories/none.txt"),
        tool_use("toolu_m13", M, command="create", path="/memories/notes.txt", file_text="x"))
    assert gone["is_error"] and (
        "The path /memories/none.txt does not exist. Please provide a valid path."
        in gone["content"])
    assert exists["is_error"] and "File /memories/notes.txt already exists" in exists["content"]


# MEMORY_DOC, "view", "Return values" for directories: the header says "excluding hidden
# items and node_modules" and node_modules is left out.
def test_memory_directory_view_as_documented(session):
    M = "memory"
    claude_turn(session, tool_use("toolu_n1", M, command="create",
                                  path="/memories/node_modules/x.js", file_text="x\n"),
                tool_use("toolu_n2", M, command="create", path="/memories/a.txt",
                         file_text="a\n"))
    [listing] = claude_turn(session, tool_use("toolu_n3", M, command="view", path="/memories"))
    assert listing["content"].startswith(
        "Here're the files and directories up to 2 levels deep in /memories, excluding hidden "
        "items and node_modules:\n")
    assert "node_modules" not in listing["content"].split("\n", 1)[1]


# ---- OpenAI Responses shell tool --------------------------------------------------------


# SHELL_DOC: the documented shell_call item (commands ["ls -l"], timeout_ms 120000,
# max_output_length 4096, status in_progress) answered by a shell_call_output that
# passes max_output_length back with one {stdout, stderr, outcome} per command;
# outcome {"type": "exit", "exit_code"} or {"type": "timeout"}.
def test_shell_documented_items(session, native_daemon):
    write(native_daemon, "shell_doc/a.txt", "a\n")
    [listed] = responses_turn(session, {
        "type": "shell_call", "id": "sh_doc_1", "call_id": "call_shell_1", "status": "in_progress",
        "action": {"commands": ["ls -l shell_doc"], "timeout_ms": 120000,
                   "max_output_length": 4096}})
    check_shell_call_output(listed, 1)
    assert listed["max_output_length"] == 4096
    [out] = listed["output"]
    assert out["outcome"] == {"type": "exit", "exit_code": 0} and out["stderr"] == ""
    assert out["stdout"].startswith("total ") and out["stdout"].endswith(" a.txt\n")

    # Several commands, in order, each with its own streams and exit code.
    [several] = responses_turn(session, {
        "type": "shell_call", "call_id": "call_shell_2",
        "action": {"commands": ["echo out; echo err >&2", "sh -c 'echo failing >&2; exit 3'",
                                "pwd"], "timeout_ms": 20000, "max_output_length": None}})
    check_shell_call_output(several, 3)
    assert "max_output_length" not in several
    assert several["output"][:2] == [
        {"stdout": "out\n", "stderr": "err\n", "outcome": {"type": "exit", "exit_code": 0}},
        {"stdout": "", "stderr": "failing\n", "outcome": {"type": "exit", "exit_code": 3}}]
    assert several["output"][2]["stdout"] == os.path.realpath(native_daemon.workspace) + "\n"

    # A command over its timeout_ms has the timeout outcome.
    [slow] = responses_turn(session, {"type": "shell_call", "call_id": "call_shell_3",
                                      "action": {"commands": ["sleep 30"], "timeout_ms": 500}})
    check_shell_call_output(slow, 1)
    assert slow["output"][0]["outcome"] == {"type": "timeout"}


# ---- OpenAI Responses apply_patch tool --------------------------------------------------

FIB = "def fib(n):\n    if n <= 1:\n        return n\n    return fib(n-1) + fib(n-2)\n"
RUN = "from lib.fib import fib\n\ndef main():\n  print(fib(42))\n"


# PATCH_DOC, "Example: Renaming a function with the Apply Patch Tool" (lib/fib.py and
# run.py; the documented apply_patch_call item, ids included), answered by one
# apply_patch_call_output {call_id, status, output} per call; "Handle common errors"
# (file not found, patch conflict: status "failed" with an output for the model);
# the create_file (tasks.md, the Agents SDK example's) and delete_file operations.
def test_apply_patch_documented_rename(session, native_daemon):
    write(native_daemon, "lib/fib.py", FIB)
    write(native_daemon, "run.py", RUN)
    documented = {
        "id": "apc_08f3d96c87a585390069118b594f7481a088b16cda7d9415fe",
        "type": "apply_patch_call", "status": "completed",
        "call_id": "call_Rjsqzz96C5xzPb0jUWJFRTNW",
        "operation": {"type": "update_file", "path": "lib/fib.py",
                      "diff": "@@\n-def fib(n):\n+def fibonacci(n):\n     if n <= 1:\n"
                              "         return n\n-    return fib(n-1) + fib(n-2)\n"
                              "+    return fibonacci(n-1) + fibonacci(n-2)"}}
    caller = {"type": "apply_patch_call", "id": "apc_2", "status": "completed",
              "call_id": "call_run_py",
              "operation": {"type": "update_file", "path": "run.py",
                            "diff": "@@\n-from lib.fib import fib\n+from lib.fib import fibonacci\n"
                                    "@@ def main():\n-  print(fib(42))\n+  print(fibonacci(42))"}}
    fib_out, run_out = responses_turn(session, documented, caller)
    check_apply_patch_call_output(fib_out, "call_Rjsqzz96C5xzPb0jUWJFRTNW", "completed")
    check_apply_patch_call_output(run_out, "call_run_py", "completed")
    assert fib_out["output"] == "Success. Updated the following files:\nM lib/fib.py\n"
    assert read(native_daemon, "lib/fib.py") == FIB.replace("fib(", "fibonacci(")
    assert read(native_daemon, "run.py") == RUN.replace("fib", "fibonacci").replace(
        "lib.fibonacci", "lib.fib")

    not_found, conflict = responses_turn(
        session,
        {"type": "apply_patch_call", "call_id": "call_abc",
         "operation": {"type": "update_file", "path": "lib/baz.py", "diff": "@@\n-x\n+y"}},
        {"type": "apply_patch_call", "call_id": "call_abd",
         "operation": {"type": "update_file", "path": "lib/fib.py",
                       "diff": "@@ def fib(n):\n-    if n <= 1:\n+    if n < 2:"}})
    check_apply_patch_call_output(not_found, "call_abc", "failed")
    assert "lib/baz.py" in not_found["output"]
    check_apply_patch_call_output(conflict, "call_abd", "failed")
    assert "def fib(n):" in conflict["output"]
    assert read(native_daemon, "lib/fib.py") == FIB.replace("fib(", "fibonacci(")

    created, = responses_turn(session, {
        "type": "apply_patch_call", "call_id": "call_tasks",
        "operation": {"type": "create_file", "path": "tasks.md",
                      "diff": "+- milk\n+- eggs\n+- bread\n+- apples\n+- coffee\n"}})
    check_apply_patch_call_output(created, "call_tasks", "completed")
    assert created["output"] == "Success. Updated the following files:\nA tasks.md\n"
    assert read(native_daemon, "tasks.md") == "- milk\n- eggs\n- bread\n- apples\n- coffee\n"
    deleted, = responses_turn(session, {"type": "apply_patch_call", "call_id": "call_rm",
                                        "operation": {"type": "delete_file", "path": "tasks.md"}})
    check_apply_patch_call_output(deleted, "call_rm", "completed")
    assert deleted["output"] == "Success. Updated the following files:\nD tasks.md\n"
    assert not os.path.exists(ws_path(native_daemon, "tasks.md"))
