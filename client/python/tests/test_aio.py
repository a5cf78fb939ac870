"""AsyncClient (grpc.aio) against a real toolexecd. Each test runs its own event loop."""

import asyncio
import os

import grpc
import pytest

import toolexec
from conftest import eventually, process_running
from toolexec import AsyncClient


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 30))


def test_async_declarations_calls_and_errors(daemon):
    async def main():
        async with AsyncClient(daemon.address) as client:
            assert await client.health()
            tools = await client.list_tools()
            assert tools[0]["name"] == "view_file"
            weather = await client.call("get_weather", city="Paris")
            assert weather["temperature"] == 22 and type(weather["temperature"]) is int
            with pytest.raises(toolexec.UnknownToolError) as e:
                await client.call("nosuch")
            assert e.value.tool_name == "nosuch"
            with pytest.raises(toolexec.RpcError) as e:
                await client.get_state("s-nosuch")
            assert e.value.code == grpc.StatusCode.NOT_FOUND

    run(main())


def test_async_execute_streams_and_merges_harness_calls(daemon):
    async def ask_question(args):  # a coroutine callback is awaited
        await asyncio.sleep(0)
        return {"answers": [q["question"].upper() for q in args["questions"]]}

    async def main():
        async with AsyncClient(daemon.address) as client:
            calls = [{"id": "q", "name": "ask_question",
                      "args": {"questions": [{"question": "why?"}]}},
                     {"id": "cmd", "name": "run_command", "args": {"command_line": "echo hi"}},
                     {"id": "u", "name": "ask_question", "args": {"questions": []}}]
            harness = {"ask_question": ask_question}
            events = [e async for e in client.execute(calls, harness=harness)]
            results = [e["result"] for e in events if "result" in e]
            assert [(r["index"], r["id"]) for r in results] == [(0, "q"), (1, "cmd"), (2, "u")]
            assert results[0]["payload"] == {"answers": ["WHY?"]}
            assert results[1]["payload"]["stdout"] == "hi\n"
            [progress] = [e["progress"] for e in events if "progress" in e]
            assert progress["index"] == 1

            # Without a callback the call is handed over in its place.
            kinds = [next(iter(e)) async for e in client.execute(calls[:2])]
            assert kinds[0] == "harness_call" and kinds[-1] == "result"
            with pytest.raises(toolexec.HarnessCallError):
                await client.run_batch(calls)

            results = await client.run_batch(calls, harness=lambda name, args: name)
            assert results[2]["payload"] == {"result": "ask_question"}

    run(main())


def test_async_sessions_watch_and_artifacts(daemon):
    async def main():
        async with AsyncClient(daemon.address) as client:
            async with client.open_session("conv-aio") as s:
                assert await s.call("counter") == {"count": 1}
                assert await s.state() == {"count": 1}
                assert await s.save_artifact("a.txt", "hello") == 1
                assert (await s.load_artifact("a.txt"))["text"] == "hello"
                assert await s.list_artifacts() == ["a.txt"]
                assert await s.list_versions("a.txt") == [1]
                await s.delete_artifact("a.txt")
                assert await s.list_artifacts() == []
                watch = s.watch()
                reader = asyncio.ensure_future(_collect(watch))
                await asyncio.sleep(0.05)
            # Closing the session ends its watch.
            assert await asyncio.wait_for(reader, 10) == []
            assert s.closed

            s2 = await client.open_session()
            watch = s2.watch()
            reader = asyncio.ensure_future(_collect(watch))
            await asyncio.sleep(0.05)
            watch.cancel()
            assert await asyncio.wait_for(reader, 10) == []
            await s2.close()
            with pytest.raises(toolexec.RpcError):
                await client.get_state(s2.session_id)

    run(main())


async def _collect(watch):
    return [e async for e in watch]


def test_async_aclose_cancels_the_batch(daemon):
    marker = f"sleep {4000 + os.getpid() % 1000}.5"

    async def main():
        async with AsyncClient(daemon.address) as client:
            events = client.execute([{"name": "run_command",
                                      "args": {"command_line": f"echo started; {marker}"}}])
            first = await events.__anext__()
            assert first["progress"]["text"] == "started\n"
            # bash prints before it starts the sleep: wait for the process to appear.
            assert eventually(lambda: process_running(marker))
            await events.aclose()
            for _ in range(400):
                if not process_running(marker):
                    break
                await asyncio.sleep(0.05)
            assert not process_running(marker)

    run(main())
