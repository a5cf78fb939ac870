"""A scripted agent: a fixed list of model turns, each in its provider's native
shape (Anthropic tool_use blocks for bash, the text editor and memory; OpenAI
Responses items for shell and apply_patch), driven through the Python client
against a real toolexecd. It checks what a model would rely on: the shell
keeps its working directory between calls, the editor's insert_text, a
Responses apply_patch_call, and a memory that outlives the session."""

import os

import pytest

from conftest import memory_daemon
from toolexec import Client, providers


@pytest.fixture
def agent_daemon():
    yield from memory_daemon("toolexec-agent")


def tool_use(n, name, **input_):
    return {"type": "tool_use", "id": f"toolu_{n}", "name": name, "input": input_}


def ok(results):
    for r in results:
        assert r["status"] == "RESULT_STATUS_SUCCESS", (r["id"], r.get("error_message"))
    return results


def test_a_scripted_agent_in_the_providers_native_shapes(agent_daemon):
    ws = agent_daemon.workspace
    with Client(agent_daemon.address) as client:
        session = client.open_session("scripted", user_id="ada")
        sid = session.session_id
        run = lambda calls: ok(client.run_batch(calls, sid))  # noqa: E731

        # 1. bash: make a folder and cd into it; the next call runs there.
        run([tool_use(1, "bash", command="mkdir -p app && cd app")])
        out = run([tool_use(2, "bash", command="pwd")])
        assert out[0]["model_content"].strip().endswith("/app"), out[0]["model_content"]

        # 2. The editor creates a file, then inserts a line with insert_text
        #    (what Claude 4 models send).
        run([tool_use(3, "str_replace_based_edit_tool", command="create", path="app/hello.py",
                      file_text="print('hello')\n")])
        run([tool_use(4, "str_replace_based_edit_tool", command="insert", path="app/hello.py",
                      insert_line=1, insert_text="print('world')\n")])
        with open(os.path.join(ws, "app", "hello.py"), encoding="utf-8") as f:
            assert f.read() == "print('hello')\nprint('world')\n"

        # 3. shell (a Responses shell_call) runs it in the same shell: still in app/.
        shell = run([{"type": "shell_call", "call_id": "call_sh1",
                      "action": {"commands": ["python3 hello.py"], "timeout_ms": 20000}}])
        item = providers.tool_result_messages(shell, "openai_responses")[0]
        assert item["type"] == "shell_call_output" and item["call_id"] == "call_sh1"
        assert item["output"][0]["stdout"] == "hello\nworld\n"
        assert item["output"][0]["outcome"] == {"type": "exit", "exit_code": 0}

        # 4. A Responses apply_patch_call changes the file.
        patched = run([{"type": "apply_patch_call", "call_id": "call_ap1",
                        "operation": {"type": "update_file", "path": "app/hello.py",
                                      "diff": "@@\n-print('world')\n+print('patched')\n"}}])
        item = providers.tool_result_messages(patched, "openai_responses")[0]
        assert item["type"] == "apply_patch_call_output" and item["status"] == "completed"
        shell = run([{"type": "shell_call", "call_id": "call_sh2",
                      "action": {"commands": ["python3 hello.py"]}}])
        assert shell[0]["payload"]["output"][0]["stdout"] == "hello\npatched\n"

        # 5. memory: remember a fact.
        run([tool_use(5, "memory", command="create", path="/memories/facts.md",
                      file_text="The project's entry point is app/hello.py.\n")])

        # 6. Restart the shell: a fresh one starts at the workspace root.
        restarted = run([tool_use(6, "bash", restart=True)])
        assert "restarted" in restarted[0]["model_content"]
        out = run([tool_use(7, "bash", command="pwd")])
        assert out[0]["model_content"].strip() == os.path.realpath(ws)
        client.close_session(sid)

        # 7. A new session of the same user reads the fact back.
        sid2 = client.open_session("scripted-2", user_id="ada").session_id
        view = ok(client.run_batch([tool_use(8, "memory", command="view",
                                             path="/memories/facts.md")], sid2))
        assert "app/hello.py" in view[0]["model_content"]
        client.close_session(sid2)
