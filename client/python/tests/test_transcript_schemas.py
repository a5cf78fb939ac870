"""Exported transcripts against the providers' request bodies.

Session.export(format) gives a recorded session as the conversation part of a
provider's request body: OpenAI Chat's ``messages``, the Responses API's
``input``, Anthropic's ``messages``, Gemini's ``contents``. Each is validated
against a JSON Schema of that part, written from the provider's API reference
(tests/schemas/, the documentation cited in each schema's $comment). Two
sessions are exported: conftest's ``recorded`` (file tools, a search, a
command, a failing call, the harness's ask_question) and one of the native
tools (Anthropic's bash, text editor and memory tool_use blocks; the Responses
API's apply_patch_call and shell_call items, one of them failing). Broken
copies of the exports must fail, so that the schemas are known to check.
"""

import copy
import json
import os

import jsonschema
import pytest

from conftest import memory_daemon, tool_use
from toolexec import Client

SCHEMA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "schemas")
SCHEMAS = {
    "openai": "openai_chat_messages.schema.json",
    "openai_responses": "openai_responses_input.schema.json",
    "anthropic": "anthropic_messages.schema.json",
    "gemini": "gemini_contents.schema.json",
}
FORMATS = list(SCHEMAS)


def validator(fmt):
    with open(os.path.join(SCHEMA_DIR, SCHEMAS[fmt]), encoding="utf-8") as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def errors(fmt, transcript):
    """Each violation as "path: message", deepest first."""
    found = []
    for error in validator(fmt).iter_errors(transcript):
        for e in [error, *(error.context or [])]:
            found.append(f"{e.json_path}: {e.message}")
    return found


E = "str_replace_based_edit_tool"
# One batch each: a call that reads what an earlier one wrote comes in a later batch.
NATIVE_BATCHES = [
    [tool_use("toolu_b1", "bash", command="printf 'one\\ntwo\\n' > notes.md && wc -l notes.md"),
     tool_use("toolu_m1", "memory", command="create", path="/memories/todo.txt",
              file_text="- check the schemas\n")],
    [tool_use("toolu_e1", E, command="view", path="notes.md"),
     tool_use("toolu_e2", E, command="str_replace", path="notes.md", old_str="two",
              new_str="three"),
     tool_use("toolu_m2", "memory", command="view", path="/memories"),
     tool_use("toolu_e3", E, command="view", path="missing.md"),  # fails: no such file
     tool_use("toolu_b2", "bash", command="exit 4")],
    [{"type": "apply_patch_call", "id": "apc_1", "call_id": "call_p1", "status": "completed",
      "operation": {"type": "create_file", "path": "patched.txt", "diff": "+patched\n"}}],
    [{"type": "shell_call", "id": "sh_1", "call_id": "call_s1", "status": "completed",
      "action": {"commands": ["cat patched.txt", "ls nowhere"], "timeout_ms": 10000,
                 "max_output_length": 4096}},
     {"type": "apply_patch_call", "id": "apc_2", "call_id": "call_p2", "status": "completed",
      "operation": {"type": "update_file", "path": "absent.txt",  # fails: no such file
                    "diff": "@@\n-a\n+b\n"}},
     {"type": "apply_patch_call", "id": "apc_3", "call_id": "call_p3", "status": "completed",
      "operation": {"type": "delete_file", "path": "notes.md"}},
     {"type": "function_call", "call_id": "call_f1", "name": "grep_search",
      "arguments": json.dumps({"pattern": "patched"})}],
]


@pytest.fixture(scope="module")
def native_daemon():
    """A daemon with every native tool registered, recording its sessions."""
    yield from memory_daemon("toolexec-schema",
                             lambda d: f'recording {{ dir: "{d}/recordings" }}\n')


@pytest.fixture(scope="module")
def native_exports(native_daemon):
    with Client(native_daemon.address) as client:
        session = client.open_session("native", record=True)
        results = [session.run_batch(calls) for calls in NATIVE_BATCHES]
        exports = {fmt: session.export(fmt) for fmt in FORMATS}
        session.close()
    statuses = [r["status"] for batch in results for r in batch]
    assert "RESULT_STATUS_SUCCESS" in statuses
    assert any(s != "RESULT_STATUS_SUCCESS" for s in statuses)  # a failure is exported too
    return exports


def test_calls_without_ids_are_exported_with_ids(native_daemon):
    """A call made without an id (a Gemini functionCall may have none) is given
    toolexec_<batch>_<index> in the formats whose results name their call, on
    the call and on its result; Gemini's transcript leaves it out."""
    with Client(native_daemon.address) as client:
        session = client.open_session("no-ids", record=True)
        session.run_batch([{"functionCall": {"name": "list_directory", "args": {}}},
                           {"functionCall": {"name": "grep_search", "args": {"pattern": "x"}}}])
        session.run_batch([{"functionCall": {"name": "list_directory", "args": {}}}])
        exports = {fmt: session.export(fmt) for fmt in FORMATS}
        session.close()
    assert {fmt: errors(fmt, exports[fmt]) for fmt in FORMATS} == {fmt: [] for fmt in FORMATS}
    made = ["toolexec_1_0", "toolexec_1_1", "toolexec_2_0"]
    chat = exports["openai"]
    assert [c["id"] for m in chat if m["role"] == "assistant" for c in m["tool_calls"]] == made
    assert [m["tool_call_id"] for m in chat if m["role"] == "tool"] == made
    responses = exports["openai_responses"]
    assert [i["call_id"] for i in responses if i["type"] == "function_call"] == made
    assert [i["call_id"] for i in responses if i["type"] == "function_call_output"] == made
    blocks = [b for m in exports["anthropic"] for b in m["content"]]
    assert [b["id"] for b in blocks if b["type"] == "tool_use"] == made
    assert [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"] == made
    parts = [p for c in exports["gemini"] for p in c["parts"]]
    assert all("id" not in (p.get("functionCall") or p.get("functionResponse")) for p in parts)


@pytest.mark.parametrize("fmt", FORMATS)
def test_recorded_session_export_matches_the_documented_shape(recorded, fmt):
    transcript = recorded["exports"][fmt]
    assert transcript
    assert errors(fmt, transcript) == [], json.dumps(transcript, indent=1)


@pytest.mark.parametrize("fmt", FORMATS)
def test_native_tools_export_matches_the_documented_shape(native_exports, fmt):
    transcript = native_exports[fmt]
    assert transcript
    assert errors(fmt, transcript) == [], json.dumps(transcript, indent=1)


def test_native_items_are_exported_as_themselves(native_exports):
    """What the schemas were given: the Responses export holds the native items
    with their outputs (a failed patch among them), the Anthropic export the
    native tools' tool_use blocks and an is_error result."""
    types = {i["type"] for i in native_exports["openai_responses"]}
    assert {"apply_patch_call", "apply_patch_call_output", "shell_call", "shell_call_output",
            "function_call", "function_call_output"} <= types
    assert "failed" in [i["status"] for i in native_exports["openai_responses"]
                        if i["type"] == "apply_patch_call_output"]
    blocks = [b for m in native_exports["anthropic"] for b in m["content"]]
    assert {b["name"] for b in blocks if b["type"] == "tool_use"} >= {"bash", E, "memory"}
    assert any(b["type"] == "tool_result" and b["is_error"] for b in blocks)


def first(transcript, predicate):
    return next(x for x in transcript if predicate(x))


def parts_of(transcript, key):
    return [p for c in transcript for p in c["parts"] if key in p]


# Each: a format, what is broken, and how (on a copy of the recorded session's export).
BROKEN = [
    ("openai", "a tool message without its tool_call_id",
     lambda t: first(t, lambda m: m["role"] == "tool").pop("tool_call_id")),
    ("openai", "a tool call whose arguments are an object, not a JSON string",
     lambda t: t[0]["tool_calls"][0]["function"].update(arguments={"file_path": "a.txt"})),
    ("openai", "an unknown role",
     lambda t: first(t, lambda m: m["role"] == "tool").update(role="function_result")),
    ("anthropic", "a tool_result without its tool_use_id",
     lambda t: t[1]["content"][0].pop("tool_use_id")),
    ("anthropic", "a tool_use block without its input",
     lambda t: t[0]["content"][0].pop("input")),
    ("anthropic", "tool_result blocks in an assistant message",
     lambda t: t[1].update(role="assistant")),
    ("openai_responses", "a function_call_output without its call_id",
     lambda t: first(t, lambda i: i["type"] == "function_call_output").pop("call_id")),
    ("openai_responses", "a function_call without its name",
     lambda t: first(t, lambda i: i["type"] == "function_call").pop("name")),
    ("openai_responses", "an unknown item type",
     lambda t: first(t, lambda i: i["type"] == "function_call").update(type="tool_call")),
    ("gemini", "a functionResponse without its name",
     lambda t: parts_of(t, "functionResponse")[0]["functionResponse"].pop("name")),
    ("gemini", "a functionResponse whose response is text, not an object",
     lambda t: parts_of(t, "functionResponse")[0]["functionResponse"].update(response="4")),
    ("gemini", "the role 'assistant'",
     lambda t: t[0].update(role="assistant")),
]

# The same for the native items, on a copy of the native session's Responses export.
BROKEN_NATIVE = [
    ("a shell_call_output outcome without its exit_code",
     lambda t: first(t, lambda i: i["type"] == "shell_call_output")["output"][0]["outcome"]
     .pop("exit_code")),
    ("an apply_patch_call_output with a status outside completed/failed",
     lambda t: first(t, lambda i: i["type"] == "apply_patch_call_output").update(status="ok")),
    ("an apply_patch_call whose create_file operation has no diff",
     lambda t: first(t, lambda i: i["type"] == "apply_patch_call")["operation"].pop("diff")),
    ("a shell_call without its action",
     lambda t: first(t, lambda i: i["type"] == "shell_call").pop("action")),
]


@pytest.mark.parametrize("fmt,what,breaks", BROKEN, ids=[f"{f}: {w}" for f, w, _ in BROKEN])
def test_a_broken_transcript_fails_its_schema(recorded, fmt, what, breaks):
    transcript = copy.deepcopy(recorded["exports"][fmt])
    breaks(transcript)
    assert transcript != recorded["exports"][fmt]
    assert errors(fmt, transcript), f"{what}: accepted"


@pytest.mark.parametrize("what,breaks", BROKEN_NATIVE, ids=[w for w, _ in BROKEN_NATIVE])
def test_a_broken_native_item_fails_the_responses_schema(native_exports, what, breaks):
    transcript = copy.deepcopy(native_exports["openai_responses"])
    breaks(transcript)
    assert errors("openai_responses", transcript), f"{what}: accepted"
