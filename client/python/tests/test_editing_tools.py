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


# The Responses API's native items, as its documentation shows them: an
# apply_patch_call carries one operation (a V4A diff), a shell_call an action.
def apply_patch_call(n, operation):
    return {"type": "apply_patch_call", "id": f"apc_{n}", "call_id": f"call_{n}",
            "status": "completed", "operation": operation}


def test_responses_apply_patch_calls_and_their_outputs(client, workspace):
    with open(os.path.join(workspace, "main.ts"), "w", encoding="utf-8") as f:
        f.write("function main() {\n}\n")
    calls = [
        apply_patch_call(1, {"type": "update_file", "path": "main.ts",
                             "diff": "@@ function main() {\n+  console.log(\"hi\");\n }"}),
        apply_patch_call(2, {"type": "create_file", "path": "lib/util.ts",
                             "diff": "+export const x = 1;\n"}),
        apply_patch_call(3, {"type": "delete_file", "path": "absent.ts"}),
    ]
    results = client.run_batch(calls)
    assert [r["item_type"] for r in results] == ["apply_patch_call"] * 3
    assert read(workspace, "main.ts") == "function main() {\n  console.log(\"hi\");\n}\n"
    assert read(workspace, "lib/util.ts") == "export const x = 1;\n"
    updated, created, failed = providers.tool_result_messages(results, "openai_responses")
    assert updated == {"type": "apply_patch_call_output", "call_id": "call_1",
                       "status": "completed",
                       "output": "Success. Updated the following files:\nM main.ts\n"}
    assert created["status"] == "completed" and created["call_id"] == "call_2"
    assert failed["type"] == "apply_patch_call_output" and failed["status"] == "failed"
    assert "absent.ts" in failed["output"]


def test_responses_items_map_onto_the_tools(client):
    # A function_call is answered by a function_call_output, whatever the tool.
    [result] = client.run_batch([{"type": "function_call", "id": "fc_1", "call_id": "call_w",
                                  "name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}])
    [item] = toolexec.tool_result_messages([result], "openai_responses")
    assert item == {"type": "function_call_output", "call_id": "call_w",
                    "output": toolexec.result_text(result)}
    # shell_call: the action's fields are the shell tool's arguments.
    from toolexec._batch import normalize_call
    call = normalize_call({"type": "shell_call", "id": "sh_1", "call_id": "call_s",
                           "status": "completed",
                           "action": {"commands": ["ls -la", "pwd"], "timeout_ms": 120000,
                                      "max_output_length": 4096}})
    assert call == {"id": "call_s", "name": "shell", "step_id": "", "item_type": "shell_call",
                    "args": {"commands": ["ls -la", "pwd"], "timeout_ms": 120000,
                             "max_output_length": 4096}}
    bare = normalize_call({"type": "shell_call", "call_id": "c",
                           "action": {"commands": ["true"], "timeout_ms": None,
                                      "max_output_length": None}})
    assert bare["args"] == {"commands": ["true"]}
    # tool_calls_in finds the three kinds among a response's output items.
    response = {"output": [{"type": "reasoning", "id": "rs_1"},
                           {"type": "function_call", "call_id": "a", "name": "f",
                            "arguments": "{}"},
                           {"type": "apply_patch_call", "call_id": "b", "operation": {}},
                           {"type": "shell_call", "call_id": "c", "action": {}},
                           {"type": "message", "content": []}]}
    assert [c["call_id"] for c in toolexec.tool_calls_in(response, "openai_responses")] == [
        "a", "b", "c"]


def test_shell_call_output_from_the_shell_payload():
    # The shell tool's payload, as the shell tool answers it.
    result = {"id": "call_s", "name": "shell", "item_type": "shell_call",
              "status": "RESULT_STATUS_SUCCESS", "model_content": "",
              "payload": {"output": [
                  {"stdout": "a\n", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}},
                  {"stdout": "", "stderr": "", "outcome": {"type": "timeout"}}],
                  "max_output_length": 4096}}
    assert toolexec.responses_output_item(result) == {
        "type": "shell_call_output", "call_id": "call_s",
        "output": [{"stdout": "a\n", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}},
                   {"stdout": "", "stderr": "", "outcome": {"type": "timeout"}}],
        "max_output_length": 4096}
    failed = {"id": "call_t", "name": "shell", "item_type": "shell_call",
              "status": "RESULT_STATUS_DENIED", "model_content": "Error: denied by policy",
              "payload": {"error": "denied by policy"}}
    item = toolexec.responses_output_item(failed)
    assert item["output"] == [{"stdout": "", "stderr": "Error: denied by policy",
                               "outcome": {"type": "exit", "exit_code": 1}}]
    assert "max_output_length" not in item


def test_declarations_in_the_responses_form_with_native_tools(client):
    functions = client.list_tools("openai_responses")
    assert all(t["type"] == "function" and "function" not in t for t in functions)
    by_name = {t["name"]: t for t in functions}
    assert by_name["apply_patch"]["parameters"]["properties"]["input"]["type"] == "string"
    native = client.list_tools("openai_responses", native_tools=True)
    assert {"type": "apply_patch"} in native
    assert len(native) == len(functions)
    anthropic = client.list_tools("anthropic", native_tools=True)
    assert {"type": "text_editor_20250728", "name": "str_replace_based_edit_tool"} in anthropic
