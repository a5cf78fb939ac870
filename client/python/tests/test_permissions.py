"""A policy's ask rule through the Python clients, against a real toolexecd: the
batch waits for an answer to each permission_request; allow_once runs the batch
and the next one asks again, allow_session does not ask again in the session,
deny makes every call of the batch DENIED. The same with Client and AsyncClient,
answered inside the loop or by on_permission."""

import asyncio
import time

import pytest

from conftest import CONFIG, Daemon
from toolexec import AsyncClient, Client, PermissionRequiredError

WEATHER = {"name": "get_weather", "args": {"city": "Paris"}}
SUM = {"name": "calculate_sum", "args": {"numbers": [2, 3]}}


@pytest.fixture(scope="module")
def asking_daemon(workspace, tmp_path_factory):
    config = tmp_path_factory.mktemp("policy") / "toolexecd.textproto"
    with open(CONFIG, encoding="utf-8") as f:
        base = f.read()
    config.write_text(base + """
policy {
  rules { name: "weather needs a yes" tool: "get_weather" decision: DECISION_ASK }
  ask_timeout_ms: 20000
}
""", encoding="utf-8")
    d = Daemon(workspace, config=str(config))
    yield d
    d.stop()


def kinds(events):
    return [next(iter(e)) for e in events]


def results(events):
    return [e["result"] for e in events if "result" in e]


def answer_in_the_loop(client, calls, decision, session_id=None):
    """Iterates execute(), answering each permission_request with ``decision``."""
    events = []
    for event in client.execute(calls, session_id):
        events.append(event)
        if "permission_request" in event:
            client.respond_permission(event["permission_request"]["request_id"], decision)
    return events


def test_an_ask_rule_yields_a_request_and_allow_once_asks_again_next_time(asking_daemon):
    with Client(asking_daemon.address) as client:
        for _ in range(2):  # once means once: the second batch asks again
            events = answer_in_the_loop(client, [WEATHER, SUM], "allow_once")
            assert kinds(events)[0] == "permission_request"  # before any result
            request = events[0]["permission_request"]
            assert request["tool_name"] == "get_weather" and request["index"] == 0
            assert "weather needs a yes" in request["reason"]
            done = results(events)
            assert [r["status"] for r in done] == ["RESULT_STATUS_SUCCESS"] * 2
            assert done[0]["payload"]["city"] == "Paris" and done[1]["payload"] == {"result": "Sum: 5"}


def test_allow_session_does_not_ask_again_in_the_session(asking_daemon):
    with Client(asking_daemon.address) as client:
        with client.open_session("permissions") as session:
            events = answer_in_the_loop(client, [WEATHER], "allow_session", session.session_id)
            assert kinds(events) == ["permission_request", "result"]
            again = list(session.execute([WEATHER]))
            assert kinds(again) == ["result"]
            assert again[0]["result"]["status"] == "RESULT_STATUS_SUCCESS"
        # Another session has no grant.
        with client.open_session("other") as other:
            events = answer_in_the_loop(client, [WEATHER], "deny", other.session_id)
            assert kinds(events) == ["permission_request", "result"]


def test_deny_fails_every_call_of_the_batch(asking_daemon):
    with Client(asking_daemon.address) as client:
        events = answer_in_the_loop(client, [SUM, WEATHER], "deny")
        done = results(events)
        assert len(done) == 2
        for r in done:
            assert r["status"] == "RESULT_STATUS_DENIED"
            assert r["error_message"] == "Permission denied by user"
            assert r["exception"]["code"] == "ERROR_CODE_DENIED"


def test_on_permission_answers_for_run_batch(asking_daemon):
    seen = []

    def decide(request):
        seen.append(request["tool_name"])
        return "allow_once"

    with Client(asking_daemon.address) as client:
        done = client.run_batch([WEATHER, SUM], on_permission=decide)
        assert [r["status"] for r in done] == ["RESULT_STATUS_SUCCESS"] * 2
        assert seen == ["get_weather"]
        denied = client.run_batch([WEATHER], on_permission=lambda r: ("deny", "not today"))
        assert denied[0]["error_message"] == "Permission denied by user: not today"
        # execute() still yields the request it answered.
        events = list(client.execute([WEATHER], on_permission=lambda r: "allow_once"))
        assert kinds(events) == ["permission_request", "result"]
        with pytest.raises(TypeError, match="on_permission returns a decision"):
            client.run_batch([WEATHER], on_permission=lambda r: True)


def test_async_client_answers_in_the_loop_and_by_on_permission(asking_daemon):
    async def main():
        async with AsyncClient(asking_daemon.address) as client:
            async def answer(calls, decision, session_id=None):
                events = []
                async for event in client.execute(calls, session_id):
                    events.append(event)
                    if "permission_request" in event:
                        await client.respond_permission(
                            event["permission_request"]["request_id"], decision)
                return events

            for _ in range(2):  # allow_once: asked every time
                events = await answer([WEATHER, SUM], "allow_once")
                assert kinds(events)[0] == "permission_request"
                assert [r["status"] for r in results(events)] == ["RESULT_STATUS_SUCCESS"] * 2

            async with client.open_session("async-permissions") as session:
                events = await answer([WEATHER], "allow_session", session.session_id)
                assert kinds(events) == ["permission_request", "result"]
                again = [e async for e in session.execute([WEATHER])]
                assert kinds(again) == ["result"]

            for r in results(await answer([SUM, WEATHER], "deny")):
                assert r["status"] == "RESULT_STATUS_DENIED"
                assert r["error_message"] == "Permission denied by user"

            async def decide(request):  # a coroutine function is awaited
                await asyncio.sleep(0)
                return "allow_once"

            done = await client.run_batch([WEATHER], on_permission=decide)
            assert done[0]["status"] == "RESULT_STATUS_SUCCESS"
            done = await client.run_batch([WEATHER, SUM], on_permission=lambda r: "deny")
            assert [r["status"] for r in done] == ["RESULT_STATUS_DENIED"] * 2

    asyncio.run(asyncio.wait_for(main(), 60))


def test_call_without_an_answerer_raises_at_once(asking_daemon):
    # The ask timeout is 20 s: call() must not wait it out.
    with Client(asking_daemon.address) as client:
        started = time.monotonic()
        with pytest.raises(PermissionRequiredError, match="get_weather") as raised:
            client.call("get_weather", city="Paris")
        assert time.monotonic() - started < 10
        assert raised.value.request["request_id"]
        # The question was withdrawn with the batch: the next call asks anew.
        with pytest.raises(PermissionRequiredError):
            client.call("get_weather", city="Paris")
        assert client.call("calculate_sum", numbers=[2, 3])  # no question, no error


def test_the_clients_on_permission_answers_call_and_execute(asking_daemon):
    seen = []

    def decide(request):
        seen.append(request["request_id"])
        return "allow_once"

    with Client(asking_daemon.address, on_permission=decide) as client:
        assert client.call("get_weather", city="Paris")["city"] == "Paris"
        assert results(client.execute([WEATHER]))[0]["status"] == "RESULT_STATUS_SUCCESS"
        # A batch's own on_permission wins over the client's.
        denied = client.run_batch([WEATHER], on_permission=lambda r: "deny")
        assert denied[0]["status"] == "RESULT_STATUS_DENIED"
    assert len(seen) == 2
    with pytest.raises(TypeError, match="on_permission"):
        Client(asking_daemon.address, on_permission="yes")


def test_async_call_without_an_answerer_raises_at_once(asking_daemon):
    async def main():
        async with AsyncClient(asking_daemon.address) as client:
            with pytest.raises(PermissionRequiredError):
                await client.call("get_weather", city="Paris")
        async with AsyncClient(asking_daemon.address,
                               on_permission=lambda r: "allow_once") as client:
            assert (await client.call("get_weather", city="Paris"))["city"] == "Paris"

    asyncio.run(asyncio.wait_for(main(), 15))
