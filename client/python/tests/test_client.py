"""The synchronous Client against a real toolexecd."""

import json
import os
import threading

import grpc
import pytest

import toolexec
from conftest import eventually, process_running
from toolexec import Client


def results_of(events):
    return [e["result"] for e in events if "result" in e]


# ---- declarations ----------------------------------------------------------------


def test_list_tools_gives_declarations_as_plain_dicts(client):
    tools = client.list_tools()
    names = [t["name"] for t in tools]
    assert names[:3] == ["view_file", "create_file", "edit_file"]  # registration order
    by_name = {t["name"]: t for t in tools}
    assert by_name["view_file"]["executor"] == "EXECUTOR_DAEMON"
    assert by_name["view_file"]["read_only"] is True
    assert by_name["ask_question"]["executor"] == "EXECUTOR_HARNESS"
    assert by_name["google_search"]["executor"] == "EXECUTOR_PROVIDER"
    # The schema as a plain dict: the declared text parsed where the daemon sends it.
    for t in tools:
        if t["parameters_json"]:
            assert t["parameters"] == json.loads(t["parameters_json"])
    depth = by_name["list_directory"]["parameters"]["properties"]["depth"]
    assert depth["type"] == "integer"
    assert (depth["default"], depth["minimum"], depth["maximum"]) == (1, 1, 32)
    assert all(type(depth[k]) is int for k in ("default", "minimum", "maximum"))
    props = by_name["ask_question"]["parameters"]["properties"]
    assert props["questions"]["items"]["properties"]["is_multi_select"]["default"] is False


def test_list_tools_rejects_an_unknown_format(client):
    with pytest.raises(ValueError, match="openai_strict"):
        client.list_tools("claude")


# ---- one call ----------------------------------------------------------------------


def test_call_returns_the_payload_with_integers_as_ints(client):
    weather = client.call("get_weather", city="Paris")
    assert weather == {"city": "Paris", "condition": "sunny", "temperature": 22}
    assert type(weather["temperature"]) is int
    waited = client.call("wait", {"ms": 1, "value": {"n": 3, "half": 0.5, "big": 2 ** 40,
                                                     "list": [1, 2.5, None, True]}})
    value = waited["value"]
    assert value == {"n": 3, "half": 0.5, "big": 2 ** 40, "list": [1, 2.5, None, True]}
    assert type(value["n"]) is int and type(value["big"]) is int
    assert type(value["half"]) is float and type(value["list"][1]) is float


def test_call_arguments_as_dict_and_keywords(client):
    # A dict for names that are not Python identifiers; keywords win on a clash.
    assert client.call("get_weather", {"city": "Oslo"}, city="Rome")["city"] == "Rome"


def test_call_failures_raise_typed_errors(client, daemon):
    with pytest.raises(toolexec.UnknownToolError) as e:
        client.call("nosuch")
    assert e.value.tool_name == "nosuch"
    assert e.value.code == "ERROR_CODE_UNKNOWN_TOOL"
    assert e.value.server_name == ""
    assert e.value.status == "RESULT_STATUS_ERROR"
    assert "nosuch" in str(e.value)
    assert e.value.result["payload"] == {"error": e.value.message}

    with pytest.raises(toolexec.InvalidArgumentsError) as e:
        client.call("calculate_sum", numbers=["x"])
    assert e.value.code == "ERROR_CODE_INVALID_ARGUMENTS"
    assert "numbers" in e.value.message

    with pytest.raises(toolexec.NoContextError):
        client.call("counter")  # needs a session
    with pytest.raises(toolexec.NotExecutableHereError):
        client.call("google_search")
    with pytest.raises(toolexec.ToolCallError):  # the base class catches them all
        client.call("view_file", file_path="../outside.txt")


def test_rpc_failures_raise_rpc_error(client):
    with pytest.raises(toolexec.RpcError) as e:
        list(client.execute([{"name": "get_weather"}], session_id="s-nosuch"))
    assert e.value.code == grpc.StatusCode.NOT_FOUND
    assert isinstance(e.value, toolexec.ToolexecError)


def test_unreachable_daemon_is_an_rpc_error():
    with Client("127.0.0.1:1", timeout=5) as c:
        with pytest.raises(toolexec.RpcError) as e:
            c.health()
    assert e.value.code == grpc.StatusCode.UNAVAILABLE


def test_health(client):
    assert client.health() is True
    assert client.health_status() == "SERVING"


def test_target_defaults_to_the_environment(daemon, monkeypatch):
    monkeypatch.setenv("TOOLEXEC_TARGET", daemon.address)
    with Client() as c:
        assert c.target == daemon.address
        assert c.health()


# ---- batches -------------------------------------------------------------------------


def test_execute_streams_progress_then_results_in_call_order(client):
    calls = [{"id": "slow", "name": "wait", "args": {"ms": 200, "value": "slow"}},
             {"id": "cmd", "name": "run_command",
              "args": {"command_line": "echo out; echo err >&2"}},
             {"id": "bad", "name": "nosuch"}]
    events = list(client.execute(calls))
    results = results_of(events)
    assert [r["id"] for r in results] == ["slow", "cmd", "bad"]
    assert [r["index"] for r in results] == [0, 1, 2]
    assert [r["status"] for r in results] == ["RESULT_STATUS_SUCCESS", "RESULT_STATUS_SUCCESS",
                                              "RESULT_STATUS_ERROR"]
    progress = [e["progress"] for e in events if "progress" in e]
    assert {(p["stream"], p["text"]) for p in progress} == {("stdout", "out\n"),
                                                             ("stderr", "err\n")}
    assert all(p["index"] == 1 and p["id"] == "cmd" for p in progress)
    assert all(type(p["seq"]) is int for p in progress)  # uint64, not a string
    # A result's progress comes before the result itself.
    cmd_at = next(i for i, e in enumerate(events) if e.get("result", {}).get("id") == "cmd")
    assert all(i < cmd_at for i, e in enumerate(events) if "progress" in e)
    ok = results[0]
    assert "exception" not in ok and ok["error_message"] == ""
    assert type(ok["duration"]) is float and ok["duration"] >= 0.2
    assert type(ok["display"]["full_length"]) is int
    assert results[2]["exception"]["call_id"] == "bad"


def test_execute_timeout_is_per_call(client):
    [result] = client.run_batch([{"name": "wait", "args": {"ms": 5000}}], timeout=0.1)
    assert result["status"] == "RESULT_STATUS_TIMEOUT"
    assert result["exception"]["code"] == "ERROR_CODE_TIMEOUT"


def test_harness_calls_run_by_callback_and_merge_in_call_order(client):
    asked = []

    def ask_question(args):
        asked.append(args)
        return {"answers": ["blue"]}

    calls = [{"id": "q", "name": "ask_question",
              "args": {"questions": [{"question": "Favourite colour?"}]}},
             {"id": "cmd", "name": "run_command", "args": {"command_line": "echo hi"}},
             {"id": "w", "name": "get_weather", "args": {"city": "Paris"}}]
    events = list(client.execute(calls, harness={"ask_question": ask_question}))
    results = results_of(events)
    assert [(r["index"], r["id"]) for r in results] == [(0, "q"), (1, "cmd"), (2, "w")]
    assert asked == [{"questions": [{"question": "Favourite colour?"}]}]
    q = results[0]
    assert q["status"] == "RESULT_STATUS_SUCCESS" and q["payload"] == {"answers": ["blue"]}
    assert q["name"] == "ask_question" and q["compact_summary"] == "[ask_question: completed]"
    # The daemon numbered run_command 0 in its sub-batch; the caller sees position 1.
    [progress] = [e["progress"] for e in events if "progress" in e]
    assert progress["index"] == 1 and progress["id"] == "cmd"
    assert results[2]["payload"]["city"] == "Paris"


def test_harness_callback_failure_is_an_error_result(client):
    def broken(name, args):
        raise RuntimeError(f"no user to ask ({name})")

    results = client.run_batch([{"id": "1", "name": "get_weather", "args": {"city": "X"}},
                                {"id": "2", "name": "ask_question", "args": {"questions": []}}],
                               harness=broken)
    err = results[1]
    assert err["status"] == "RESULT_STATUS_ERROR"
    assert err["error_message"] == "no user to ask (ask_question)"
    assert err["payload"] == {"error": "no user to ask (ask_question)"}
    assert err["exception"]["code"] == "ERROR_CODE_TOOL_FAILED"
    assert err["exception"]["tool_name"] == "ask_question" and err["exception"]["call_id"] == "2"
    with pytest.raises(toolexec.ToolCallError):
        raise toolexec.errors.tool_call_error(err)


def test_an_async_harness_callback_in_the_sync_client_is_an_error_result(client):
    async def ask(args):
        return "never"

    [result] = client.run_batch([{"name": "ask_question", "args": {"questions": []}}],
                                harness={"ask_question": ask})
    assert result["status"] == "RESULT_STATUS_ERROR"
    assert "use AsyncClient" in result["error_message"]


def test_harness_call_without_callback_is_handed_to_the_caller(client):
    calls = [{"id": "w", "name": "get_weather", "args": {"city": "Paris"}},
             {"id": "q", "name": "ask_question", "args": {"questions": [{"question": "?"}]}},
             {"id": "s", "name": "calculate_sum", "args": {"numbers": [1, 2]}}]
    merged = []
    for event in client.execute(calls):
        if "harness_call" in event:
            call = event["harness_call"]
            assert call == {"index": 1, "id": "q", "name": "ask_question", "step_id": "",
                            "args": {"questions": [{"question": "?"}]}}
            merged.append(toolexec.harness_result(call, "an answer"))
        elif "result" in event:
            merged.append(event["result"])
    assert [r["id"] for r in merged] == ["w", "q", "s"]
    assert merged[1]["payload"] == {"result": "an answer"}
    assert merged[1]["status"] == "RESULT_STATUS_SUCCESS"


def test_run_batch_refuses_a_harness_call_without_callback_before_running_anything(
        client, workspace):
    calls = [{"name": "create_file", "args": {"file_path": "never.txt", "contents": "x"}},
             {"name": "ask_question", "args": {"questions": []}}]
    with pytest.raises(toolexec.HarnessCallError, match="ask_question"):
        client.run_batch(calls)
    assert not os.path.exists(os.path.join(workspace, "never.txt"))


def test_harness_tools_of_the_harness_own_run_locally(client):
    # A tool the daemon does not declare, run by the harness: never sent (it would be
    # UNKNOWN_TOOL there).
    results = client.run_batch([{"name": "local_clock", "args": {}},
                                {"name": "get_weather", "args": {"city": "Paris"}}],
                               harness={"local_clock": lambda args: 42})
    assert results[0]["payload"] == {"result": 42}
    assert results[1]["status"] == "RESULT_STATUS_SUCCESS"


def test_split_false_sends_harness_tools_to_the_daemon(client):
    [result] = client.run_batch([{"name": "ask_question", "args": {"questions": []}}],
                                split=False)
    assert result["exception"]["code"] == "ERROR_CODE_NOT_EXECUTABLE_HERE"


def test_calls_in_every_provider_shape(client):
    calls = [
        {"id": "call_1", "type": "function",  # OpenAI Chat Completions
         "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}},
        {"type": "function_call", "call_id": "call_2", "name": "get_weather",  # OpenAI Responses
         "arguments": "{\"city\": \"Rome\"}"},
        {"type": "tool_use", "id": "toolu_3", "name": "get_weather",  # Anthropic
         "input": {"city": "Oslo"}},
        {"functionCall": {"name": "get_weather", "args": {"city": "Lima"}}},  # Gemini part
        {"name": "get_weather", "args": {"city": "Pune"}, "id": "5"},  # toolexec / Gemini
        {"id": "6", "name": "get_weather", "args_json": "{\"city\": \"Nice\"}"},
    ]
    results = client.run_batch(calls)
    assert [r["payload"]["city"] for r in results] == ["Paris", "Rome", "Oslo", "Lima",
                                                       "Pune", "Nice"]
    assert [r["id"] for r in results] == ["call_1", "call_2", "toolu_3", "", "5", "6"]


def test_provider_sdk_objects_are_read_through_model_dump(client):
    class ToolCallObject:  # what pydantic-based SDKs hand out
        def model_dump(self):
            return {"id": "c1", "type": "function",
                    "function": {"name": "get_weather", "arguments": "{\"city\": \"Bern\"}"}}

    [result] = client.run_batch([ToolCallObject()])
    assert result["payload"]["city"] == "Bern" and result["id"] == "c1"


def test_bad_json_arguments_are_an_invalid_arguments_result(client):
    calls = [{"id": "1", "function": {"name": "get_weather", "arguments": "{\"city\": "}},
             {"id": "2", "function": {"name": "ask_question", "arguments": "[1]"}}]
    results = client.run_batch(calls, harness={"ask_question": lambda a: "unreachable"})
    assert results[0]["exception"]["code"] == "ERROR_CODE_INVALID_ARGUMENTS"
    assert results[1]["exception"]["code"] == "ERROR_CODE_INVALID_ARGUMENTS"


def test_malformed_calls_are_refused_before_sending(client):
    with pytest.raises(ValueError, match="without a name"):
        client.execute([{"args": {}}])
    with pytest.raises(ValueError, match="object or JSON text"):
        client.execute([{"name": "wait", "args": [1, 2]}])
    with pytest.raises(ValueError):  # NaN is not JSON
        client.execute([{"name": "wait", "args": {"value": float("nan")}}])


# ---- sessions ---------------------------------------------------------------------------


def test_session_is_a_context_manager_with_state(client):
    with client.open_session("conv-py", enabled_tools=["read_only", "counter"]) as s:
        assert s.session_id and s.conversation_id == "conv-py"
        assert "counter" in s.tools and "run_command" not in s.tools
        assert {t["name"] for t in s.list_tools()} == set(s.tools)
        assert s.call("counter") == {"count": 1}
        [result] = s.run_batch([{"name": "counter"}])
        assert result["actions"]["state_delta"] == {"count": 2}
        state = s.state()
        assert state == {"count": 2} and type(state["count"]) is int
        assert s.state("missing") == {}
        assert s.set_idle(True)["idle"] is True
    assert s.closed
    with pytest.raises(toolexec.RpcError) as e:
        client.get_state(s.session_id)
    assert e.value.code == grpc.StatusCode.NOT_FOUND


def test_leaving_a_session_block_by_an_exception_still_closes_it(client):
    with pytest.raises(KeyError):
        with client.open_session() as s:
            raise KeyError("boom")
    assert s.closed
    with pytest.raises(toolexec.RpcError):
        client.get_state(s.session_id)


def test_child_session_merges_only_what_close_allows(client):
    with client.open_session("parent") as parent:
        parent.call("counter")
        child = parent.open_child(state_keys=["count"])
        with child:
            assert child.call("counter") == {"count": 2}
            with pytest.raises(toolexec.RpcError) as e:
                child.close()  # "count" is not an output key: nothing merges
            assert e.value.code == grpc.StatusCode.FAILED_PRECONDITION
            assert "count" in e.value.details
            merged = child.close(output_state_keys=["count"],
                                 merge_policy="reject_conflicts")
        assert merged["state_delta"] == {"count": 2}
        assert parent.state() == {"count": 2}


def test_watch_ends_when_the_session_closes_and_on_cancel(client):
    s = client.open_session()
    seen = []
    watch = s.watch()
    reader = threading.Thread(target=lambda: seen.extend(watch))
    reader.start()
    s.close()
    reader.join(10)
    assert not reader.is_alive() and seen == []

    with client.open_session() as s2:
        watch = s2.watch()
        reader = threading.Thread(target=lambda: seen.extend(watch))
        reader.start()
        watch.cancel()
        reader.join(10)
        assert not reader.is_alive()

    with pytest.raises(toolexec.RpcError) as e:
        list(client.watch("s-nosuch"))
    assert e.value.code == grpc.StatusCode.NOT_FOUND


def test_artifacts_round_trip(client):
    with client.open_session("conv-artifacts") as s:
        assert s.save_artifact("notes.txt", "v1") == 1
        assert s.save_artifact("notes.txt", "v2", "text/plain") == 2
        assert s.save_artifact("blob.bin", b"\x00\xff", "application/octet-stream") == 1
        assert s.list_artifacts() == ["blob.bin", "notes.txt"]
        assert s.list_versions("notes.txt") == [2, 1]
        assert s.load_artifact("notes.txt") == {"name": "notes.txt", "version": 2,
                                                "text": "v2", "mime_type": "text/plain"}
        assert s.load_artifact("notes.txt", 1)["text"] == "v1"
        blob = s.load_artifact("blob.bin")
        assert blob["data"] == b"\x00\xff" and "text" not in blob
        loaded = s.call("load_artifacts", artifact_names=["blob.bin"])
        assert loaded["artifacts"][0]["content"]["size_bytes"] == 2
        s.delete_artifact("notes.txt", 2)
        assert s.list_versions("notes.txt") == [1]
        s.delete_artifact("notes.txt")
        with pytest.raises(toolexec.RpcError) as e:
            s.load_artifact("notes.txt")
        assert e.value.code == grpc.StatusCode.NOT_FOUND
        with pytest.raises(TypeError):
            s.save_artifact("x", 42)


def test_leaving_execute_early_cancels_the_batch(client):
    # The command prints, then sleeps; closing the iterator after the first event
    # cancels the RPC, and the daemon ends the command.
    marker = f"sleep {3000 + os.getpid() % 1000}.5"
    events = client.execute([{"name": "run_command",
                              "args": {"command_line": f"echo started; {marker}"}}])
    first = next(events)
    assert first["progress"]["text"] == "started\n"
    # bash prints before it starts the sleep: wait for the process to appear.
    assert eventually(lambda: process_running(marker))
    events.close()
    assert eventually(lambda: not process_running(marker))
