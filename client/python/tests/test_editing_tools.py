"""The editing tools models are trained on, driven through the Python client:
Anthropic's text editor tool (str_replace_based_edit_tool) with tool_use blocks
as Claude sends them, and OpenAI's apply_patch with a V4A patch."""

import os

import pytest

import toolexec
from toolexec import providers


def tool_use(n, **input_):
    return {"type": "tool_use", "id": f"toolu_{n}", "name": "str_replace_based_edit_tool",
            "input": input_}


def read(workspace, name):
    with open(os.path.join(workspace, name), encoding="utf-8") as f:
        return f.read()


def test_text_editor_round_trip_in_anthropic_form(client, workspace):
    # Anthropic's documented example: create primes.py, fix the bug, insert a
    # line: the writes of one file in one batch apply in call order. (Reads are
    # not ordered after writes: the view comes in the next batch.)
    source = ("def is_prime(n):\n    if n < 2:\n        return False\n"
              "    for i in range(2, n):\n        if n % i == 0:\n            return True\n"
              "    return True\n")
    calls = [
        tool_use(1, command="create", path="primes.py", file_text=source),
        tool_use(2, command="str_replace", path="primes.py",
                 old_str="            return True\n    return True",
                 new_str="            return False\n    return True"),
        tool_use(3, command="str_replace", path="primes.py", old_str="range(2, n)",
                 new_str="range(2, int(n ** 0.5) + 1)"),
        tool_use(4, command="insert", path="primes.py", insert_line=0,
                 new_str="# Primes by trial division.\n"),
    ]
    results = client.run_batch(calls)
    results += client.run_batch([tool_use(5, command="view", path="primes.py",
                                          view_range=[1, 2])])
    assert [r["id"] for r in results] == [f"toolu_{n}" for n in range(1, 6)]
    for r in results:
        assert r["status"] == "RESULT_STATUS_SUCCESS", (r["id"], r.get("error_message"))
    text = read(workspace, "primes.py")
    assert text.startswith("# Primes by trial division.\ndef is_prime(n):\n")
    assert "range(2, int(n ** 0.5) + 1)" in text
    assert "            return False\n    return True\n" in text
    view = results[4]["payload"]["output"]
    assert "cat -n" in view and "# Primes by trial division." in view

    # The tool_result blocks Claude expects back, one per tool_use.
    blocks = [providers.anthropic_tool_result(r) for r in results]
    assert [b["tool_use_id"] for b in blocks] == [f"toolu_{n}" for n in range(1, 6)]
    assert not any(b["is_error"] for b in blocks)
    assert all(b["content"] for b in blocks)


def test_text_editor_errors_are_tool_results_for_the_model(client, workspace):
    with open(os.path.join(workspace, "twice.txt"), "w", encoding="utf-8") as f:
        f.write("x = 1\nx = 1\n")
    results = client.run_batch([
        tool_use(1, command="str_replace", path="twice.txt", old_str="x = 1", new_str="x = 2"),
        tool_use(2, command="str_replace", path="twice.txt", old_str="y = 1", new_str="y = 2"),
        tool_use(3, command="view", path="../outside.txt"),
    ])
    several, none, outside = (providers.anthropic_tool_result(r) for r in results)
    assert several["is_error"] and "Found 2 matches" in several["content"]
    assert none["is_error"] and "No match found" in none["content"]
    assert outside["is_error"] and results[2]["exception"]["code"] == "ERROR_CODE_DENIED"
    assert read(workspace, "twice.txt") == "x = 1\nx = 1\n"  # nothing changed


def test_apply_patch_adds_updates_and_deletes_all_or_nothing(client, workspace):
    with open(os.path.join(workspace, "app.py"), "w", encoding="utf-8") as f:
        f.write("def greet():\n    print('hi')\n")
    with open(os.path.join(workspace, "old.txt"), "w", encoding="utf-8") as f:
        f.write("obsolete\n")
    patch = ("*** Begin Patch\n"
             "*** Add File: added.txt\n+hello\n"
             "*** Update File: app.py\n@@ def greet():\n-    print('hi')\n+    print('hello')\n"
             "*** Delete File: old.txt\n"
             "*** End Patch\n")
    client.call("apply_patch", input=patch)
    assert read(workspace, "added.txt") == "hello\n"
    assert read(workspace, "app.py") == "def greet():\n    print('hello')\n"
    assert not os.path.exists(os.path.join(workspace, "old.txt"))

    # A hunk that does not apply fails the whole patch: the file it would
    # have added is not there either.
    bad = ("*** Begin Patch\n"
           "*** Add File: never.txt\n+no\n"
           "*** Update File: app.py\n@@\n-    print('absent')\n+    print('x')\n"
           "*** End Patch\n")
    with pytest.raises(toolexec.ToolCallError) as e:
        client.call("apply_patch", input=bad)
    assert "app.py" in e.value.message
    assert not os.path.exists(os.path.join(workspace, "never.txt"))
    assert read(workspace, "app.py") == "def greet():\n    print('hello')\n"
