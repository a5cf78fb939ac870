#!/usr/bin/env python3
"""An agent loop on toolexec, with a scripted fake model in each provider's format.

    scripts/setup.sh python && /usr/bin/python3 -m venv --system-site-packages .venv
    .venv/bin/pip install ./client/python                          # once (README, "Python client")
    scripts/run.sh --config=examples/python/toolexecd.textproto   # the daemon, in one shell
    .venv/bin/python examples/python/agent_loop.py                 # every provider below
    .venv/bin/python examples/python/agent_loop.py anthropic --target 127.0.0.1:50051

The loop is what a harness does with a real model: list the tools in the
provider's form, send them with the conversation, run the tool calls of each
reply as one batch (the daemon's tools on the daemon, ask_question here in the
harness), append the results as the provider's tool-result messages, and repeat
until the model answers in text. Only the model is fake: FakeModel plays a fixed
script and speaks each provider's wire format (OpenAI Chat Completions, OpenAI
Responses, Anthropic Messages, Gemini generateContent), checking what it is sent
as the real API would need it. With the Responses API and Anthropic the tools
that have a native form are declared in it (native_tools), and the model uses them
as those providers' models do: with the Responses API it creates a file with an
apply_patch_call (answered by an apply_patch_call_output) and reads it back with a
shell_call (answered by a shell_call_output); Claude runs a command with bash,
edits its output file with str_replace_based_edit_tool's insert (insert_text) and,
when the daemon's config sets memory_dir, keeps a note with memory. Each
conversation runs in a session (bash and shell keep their shell in it). Exit status
0 when every provider's round trip worked.
"""

import argparse
import json
import os
import sys

try:
    import toolexec
except ImportError:  # run from a source checkout without installing
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "client", "python"))
    import toolexec

PROVIDERS = ("openai", "openai_responses", "anthropic", "gemini")
NATIVE = ("openai_responses", "anthropic")  # providers whose native tool shapes are used
MAX_TURNS = 8
MEMORY_NOTE = "/memories/agent_loop.md"


# ---- the harness ------------------------------------------------------------------


def ask_user(args):
    """ask_question runs in the harness (EXECUTOR_HARNESS): here, a scripted user."""
    return {"answers": ["hello from the user" for _ in args["questions"]]}


def run_agent(client, model, provider, prompt, log=print):
    """Runs the conversation to the model's final text answer, and returns it."""
    # The declarations in this provider's form; the tools that have a native form in
    # it (the Responses API's apply_patch and shell; Anthropic's text editor, bash and
    # memory) as such.
    tools = client.list_tools(provider, native_tools=provider in NATIVE)
    if provider == "gemini":  # Gemini takes function declarations inside a Tool
        tools = [{"functionDeclarations": [t for t in tools if "name" in t]},
                 *(t for t in tools if "name" not in t)]
    conversation = [model.user_message(prompt)]
    # One session per conversation: bash and shell run in its persistent shell, and
    # memory's /memories is its user's.
    with client.open_session(f"agent-loop-{provider}", user_id="agent-loop") as session:
        for _ in range(MAX_TURNS):
            reply = model.respond(conversation, tools)
            if provider == "openai_responses":  # a response's output items join the input
                conversation.extend(reply["output"])
            else:
                conversation.append(reply)
            calls = toolexec.tool_calls_in(reply, provider)
            if not calls:
                return model.text_of(reply)
            results = []
            for event in session.execute(calls, harness={"ask_question": ask_user}):
                if "progress" in event:
                    log(f"  [{event['progress']['stream']}] "
                        f"{event['progress']['text'].rstrip()}")
                elif "result" in event:
                    r = event["result"]
                    log(f"  {r['name']} -> {r['status'].removeprefix('RESULT_STATUS_').lower()}")
                    results.append(r)
            conversation.extend(toolexec.tool_result_messages(results, provider))
    raise RuntimeError(f"no answer after {MAX_TURNS} turns")


# ---- the fake model -----------------------------------------------------------------


class FakeModel:
    """A scripted model speaking one provider's format.

    Turn 1: asks the user a question (ask_question, run by the harness) and lists
    the workspace (list_directory, run by the daemon), in one batch.
    Turn 2: echoes the user's answer with run_command and reads a missing file
    (view_file fails: the failure goes back to the model as a tool result); with
    the Responses API it also creates hello.txt with a native apply_patch_call.
    Then, in the native shapes: with the Responses API, a shell_call reads
    hello.txt back (turn 3); Claude writes the answer to claude.txt with bash and,
    with memory declared, views /memories (turn 3), then puts a heading at the top
    of claude.txt with the text editor's insert (insert_text) and creates its
    memory note, or views it when an earlier run made it (turn 4).
    Last turn: answers in text, quoting what the command printed.
    """

    def __init__(self, provider):
        self.provider = provider
        self.turn = 0
        self.memory = False  # whether the harness declared Anthropic's memory tool

    # What a user message looks like to this provider.
    def user_message(self, text):
        if self.provider == "gemini":
            return {"role": "user", "parts": [{"text": text}]}
        return {"role": "user", "content": text}

    def respond(self, conversation, tools):
        self._check_tools(tools)
        self.turn += 1
        if self.turn == 1:
            question = {"question": "What should I say?"}
            return self._calls([("ask_question", {"questions": [question]}),
                                ("list_directory", {"directory_path": "."})])
        outputs = self._tool_outputs(conversation)
        if self.turn == 2:
            answer = json.loads(outputs["ask_question"])["answers"][0]
            calls = [("run_command", {"command_line": f"echo '{answer}'"}),
                     ("view_file", {"file_path": "no-such-file.txt"})]
            if self.provider == "openai_responses":
                calls.append(("apply_patch_call", {"type": "create_file", "path": "hello.txt",
                                                   "diff": f"+{answer}\n"}))
            return self._calls(calls)
        if self.turn == 3:
            if self.provider == "openai_responses" and "A hello.txt" not in outputs["apply_patch"]:
                raise AssertionError(f"apply_patch's output is not codex's: "
                                     f"{outputs['apply_patch']}")
            if "hello from the user" not in outputs["run_command"]:
                raise AssertionError(f"run_command's result lacks the echo: "
                                     f"{outputs['run_command']}")
            if "no-such-file.txt" not in outputs["view_file"]:
                raise AssertionError(f"view_file's error is not explained: {outputs['view_file']}")
            if self.provider == "openai_responses":  # the patched file, read in the shell
                return self._calls([("shell_call", {"commands": ["cat hello.txt"],
                                                    "timeout_ms": 10000})])
            if self.provider == "anthropic":
                calls = [("bash", {"command": "echo 'hello from the user' | tee claude.txt"})]
                if self.memory:
                    calls.append(("memory", {"command": "view", "path": "/memories"}))
                return self._calls(calls)
        if self.provider == "anthropic" and self.turn == 4:
            if outputs["bash"] != "hello from the user\n":
                raise AssertionError(f"bash's output is not the command's: {outputs['bash']}")
            calls = [("str_replace_based_edit_tool", {
                "command": "insert", "path": "claude.txt", "insert_line": 0,
                "insert_text": "# What the user said\n"})]
            if self.memory:
                if not outputs["memory"].startswith("Here're the files and directories"):
                    raise AssertionError(f"memory's view is not a listing: {outputs['memory']}")
                if MEMORY_NOTE in outputs["memory"]:  # an earlier run made it
                    calls.append(("memory", {"command": "view", "path": MEMORY_NOTE}))
                else:
                    calls.append(("memory", {"command": "create", "path": MEMORY_NOTE,
                                             "file_text": "The user says hello.\n"}))
            return self._calls(calls)
        if self.provider == "openai_responses" and outputs["shell"] != "hello from the user\n":
            raise AssertionError(f"the shell did not read hello.txt: {outputs['shell']}")
        if self.provider == "anthropic":
            edited = outputs["str_replace_based_edit_tool"]
            if "     1\t# What the user said" not in edited:
                raise AssertionError(f"the editor's insert is not shown: {edited}")
            if self.memory and not outputs["memory"].startswith(
                    (f"File created successfully at: {MEMORY_NOTE}",
                     f"Here's the content of {MEMORY_NOTE}")):
                raise AssertionError(f"memory's note is not there: {outputs['memory']}")
        return self._text("The command printed 'hello from the user'; no-such-file.txt is missing.")

    def text_of(self, reply):
        if self.provider == "openai":
            return reply["content"]
        if self.provider == "openai_responses":
            return "".join(c["text"] for item in reply["output"] if item["type"] == "message"
                           for c in item["content"] if c["type"] == "output_text")
        if self.provider == "anthropic":
            return "".join(b["text"] for b in reply["content"] if b["type"] == "text")
        return "".join(p.get("text", "") for p in reply["parts"])

    # -- speaking the provider's format

    def _calls(self, calls):
        ids = [f"call_{self.turn}_{i}" for i in range(len(calls))]
        if self.provider == "openai":
            return {"role": "assistant", "content": None, "tool_calls": [
                {"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
                for i, (n, a) in zip(ids, calls)]}
        if self.provider == "openai_responses":
            return {"output": [
                {"type": "apply_patch_call", "id": f"apc_{i}", "call_id": i,
                 "status": "completed", "operation": a} if n == "apply_patch_call" else
                {"type": "shell_call", "id": f"sh_{i}", "call_id": i, "status": "completed",
                 "action": {"max_output_length": None, **a}} if n == "shell_call" else
                {"type": "function_call", "id": f"fc_{i}", "call_id": i, "name": n,
                 "arguments": json.dumps(a)}
                for i, (n, a) in zip(ids, calls)]}
        if self.provider == "anthropic":
            return {"role": "assistant", "content": [
                {"type": "tool_use", "id": i, "name": n, "input": a}
                for i, (n, a) in zip(ids, calls)]}
        return {"role": "model", "parts": [{"functionCall": {"name": n, "args": a}}
                                           for n, a in calls]}

    def _text(self, text):
        if self.provider == "openai":
            return {"role": "assistant", "content": text}
        if self.provider == "openai_responses":
            return {"output": [{"type": "message", "role": "assistant",
                                "content": [{"type": "output_text", "text": text}]}]}
        if self.provider == "anthropic":
            return {"role": "assistant", "content": [{"type": "text", "text": text}]}
        return {"role": "model", "parts": [{"text": text}]}

    # -- reading what the harness sent, as the provider's API would

    def _check_tools(self, tools):
        if self.provider == "openai":
            names = {t["function"]["name"] for t in tools if t.get("type") == "function"}
            assert all("parameters" in t["function"] for t in tools if "function" in t)
        elif self.provider == "openai_responses":  # flat function tools, and native ones
            names = {t["name"] for t in tools if t.get("type") == "function"}
            assert all("parameters" in t for t in tools if t.get("type") == "function")
            for native in ({"type": "apply_patch"}, {"type": "shell"}):
                if native not in tools:
                    raise AssertionError(f"the Responses tools lack the native {native}")
        elif self.provider == "anthropic":  # tools with a schema, and Anthropic-defined ones
            names = {t["name"] for t in tools if "input_schema" in t}
            for native in ({"type": "text_editor_20250728", "name": "str_replace_based_edit_tool"},
                           {"type": "bash_20250124", "name": "bash"}):
                if native not in tools:
                    raise AssertionError(f"the Anthropic tools lack the native {native}")
            self.memory = {"type": "memory_20250818", "name": "memory"} in tools
        else:
            names = {d["name"] for t in tools for d in t.get("functionDeclarations", [])}
        missing = {"ask_question", "list_directory", "run_command", "view_file"} - names
        if missing:
            raise AssertionError(f"{self.provider} tools lack {sorted(missing)}")

    def _tool_outputs(self, conversation):
        """Tool name -> the text of its latest result, checking every call got one."""
        if self.provider == "openai_responses":
            calls = {i["call_id"]: i.get("name", "apply_patch") for i in conversation
                     if i.get("type") in ("function_call", "apply_patch_call")}
            outputs = {}
            for item in conversation:
                if item.get("type") == "function_call_output":
                    outputs[calls[item["call_id"]]] = item["output"]
                elif item.get("type") == "apply_patch_call_output":
                    assert item["status"] == "completed", item
                    outputs["apply_patch"] = item["output"]
                elif item.get("type") == "shell_call_output":  # one output per command
                    [command] = item["output"]
                    assert command["outcome"] == {"type": "exit", "exit_code": 0}, item
                    outputs["shell"] = command["stdout"]
            return outputs
        last_call = max(i for i, m in enumerate(conversation)
                        if m["role"] in ("assistant", "model"))
        calls = toolexec.tool_calls_in(conversation[last_call], self.provider)
        after = conversation[last_call + 1:]
        if self.provider == "openai":
            texts = {m["tool_call_id"]: m["content"] for m in after if m["role"] == "tool"}
            return {c["function"]["name"]: texts[c["id"]] for c in calls}
        if self.provider == "anthropic":
            [message] = after
            blocks = {b["tool_use_id"]: b for b in message["content"]}
            for c in calls:
                assert blocks[c["id"]]["is_error"] == (c["name"] == "view_file")
            return {c["name"]: blocks[c["id"]]["content"] for c in calls}
        [content] = after
        responses = [p["functionResponse"] for p in content["parts"]]
        assert [r["name"] for r in responses] == [c["functionCall"]["name"] for c in calls]
        return {r["name"]: json.dumps(r["response"]) for r in responses}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("providers", nargs="*", metavar="PROVIDER",
                        help=f"any of {', '.join(PROVIDERS)} (default: all)")
    parser.add_argument("--target", help="toolexecd's address (default: $TOOLEXEC_TARGET, "
                                         "else 127.0.0.1:50051)")
    args = parser.parse_args(argv)
    for provider in args.providers:
        if provider not in PROVIDERS:
            parser.error(f"unknown provider {provider!r}; one of {', '.join(PROVIDERS)}")
    with toolexec.Client(args.target) as client:
        for provider in args.providers or PROVIDERS:
            print(f"== {provider}")
            answer = run_agent(client, FakeModel(provider), provider, "Say hello in the shell.")
            print(f"  model: {answer}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
