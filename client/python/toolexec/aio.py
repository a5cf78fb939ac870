"""The asyncio client (grpc.aio): AsyncClient, AsyncSession and AsyncWatch.

The same methods as Client, as coroutines; execute() and watch() are async
iterators, open_session() is awaitable and an async context manager. Harness
callbacks may be plain functions or coroutine functions. Use a client from the
event loop it was created on.
"""

import asyncio
import inspect

import grpc
from grpc import aio

from . import _batch, _core
from ._convert import message_to_py
from ._proto.toolexec.v1 import toolexec_pb2 as pb
from .errors import ToolexecError, rpc_error, tool_call_error


async def _run_harness_call(call, fn):
    steps = _batch.harness_call_steps(call, fn)
    try:
        awaitable = next(steps)
        try:
            value = await awaitable
        except Exception as e:  # the tool's failure, for the steps to shape
            steps.throw(e)
        else:
            steps.send(value)
    except StopIteration as done:
        return done.value
    raise AssertionError("harness_call_steps yielded twice")


class AsyncClient(_core.Connection):
    """Client for asyncio; the arguments are Client's."""

    def __init__(self, target=None, token=None, *, tls_ca=None, tls_cert=None, tls_key=None,
                 timeout=30.0, options=None, on_permission=None):
        self._connect(aio, target, token, tls_ca, tls_cert, tls_key, timeout, options,
                      on_permission)

    async def close(self):
        await self._channel.close()

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.close()

    async def _unary(self, method, request, name):
        try:
            return await method(request, timeout=self._timeout, metadata=self._metadata)
        except grpc.RpcError as e:
            raise rpc_error(e, name) from None

    # ---- tools -----------------------------------------------------------------

    async def list_tools(self, format=None, *, tool_set="", session_id=None, native_tools=False):
        request = _core.list_tools_request(format, tool_set, session_id, native_tools)
        response = await self._unary(self._tools.ListTools, request, "ListTools")
        if not session_id and not tool_set:
            self._executors = _core.executors(response)
        return _core.list_tools_result(response, format)

    async def _plan(self, calls, session_id, harness, split, timeout, model_content_max_chars,
                    on_permission):
        if split and self._executors is None:
            response = await self._unary(self._tools.ListTools, pb.ListToolsRequest(),
                                         "ListTools")
            self._executors = _core.executors(response)
        return self._new_plan(calls, session_id, harness, split, timeout,
                              model_content_max_chars, on_permission)

    async def execute(self, calls, session_id=None, *, harness=None, split=True, timeout=None,
                      model_content_max_chars=0, on_permission=None):
        """Client.execute as an async iterator: ``async for event in client.execute(...)``.
        To leave it early and cancel the batch at once, ``await events.aclose()``
        (a loop's ``break`` leaves that to the garbage collector). Answer a
        permission_request with ``await client.respond_permission(...)`` inside
        the loop, or pass ``on_permission`` (a function or coroutine function
        of the request, as Client's)."""
        plan = await self._plan(calls, session_id, harness, split, timeout,
                                model_content_max_chars, on_permission)
        events = self._stream(plan)
        try:
            async for event in events:
                yield event
        finally:  # on aclose() too: cancels the batch now, not when collected
            await events.aclose()

    async def _stream(self, plan):
        stream = None
        if plan.daemon_positions:
            stream = self._tools.ExecuteBatch(plan.request, metadata=self._metadata)
        steps = _core.batch_steps(plan)
        try:
            answer = None
            for kind, body in iter(lambda: steps.send(answer), None):
                answer = None
                if kind == "event":
                    yield body
                elif kind == "read":
                    answer = await self._read(stream)
                elif kind == "run":
                    answer = await _run_harness_call(body, plan.runners[body["index"]])
                else:
                    await self._answer(plan.on_permission, body)
        finally:
            if stream is not None:
                stream.cancel()

    @staticmethod
    async def _read(stream):
        """The next response, or None at the stream's end."""
        try:
            response = await stream.read()
        except grpc.RpcError as e:
            raise rpc_error(e, "ExecuteBatch") from None
        return None if response is aio.EOF else response

    async def _answer(self, on_permission, request):
        answer = on_permission(request)
        if inspect.isawaitable(answer):
            answer = await answer
        answer = _core.permission_answer(answer)
        if answer is not None:
            await self.respond_permission(request["request_id"], *answer)

    async def run_batch(self, calls, session_id=None, **options):
        plan = await self._plan(calls, session_id, *_core.plan_options(options))
        _core.require_runners(plan)
        return [e["result"] async for e in self._stream(plan) if "result" in e]

    async def call(self, name, arguments=None, /, **kwargs):
        return await self._call(name, arguments, kwargs, None)

    async def _call(self, name, arguments, kwargs, session_id):
        calls = [{"id": "1", "name": name, "args": {**(arguments or {}), **kwargs}}]
        plan = await self._plan(calls, session_id, None, False, None, 0, None)
        results = []
        events = self._stream(plan)
        try:
            async for event in events:
                _core.collect_call_event(event, plan, results)
        finally:
            await events.aclose()  # cancels the batch when a question went unanswered
        result = _core.only_result(results)
        if result["status"] != "RESULT_STATUS_SUCCESS":
            raise tool_call_error(result)
        return result["payload"]

    # ---- sessions ---------------------------------------------------------------

    def open_session(self, conversation_id="", **fields):
        """``session = await client.open_session(...)`` or
        ``async with client.open_session(...) as session:`` (closes it on leaving)."""
        return _OpeningSession(self, {"conversation_id": conversation_id, **fields})

    async def _open_session(self, fields):
        request = _core.open_session_request(fields)
        return AsyncSession(self, message_to_py(
            await self._unary(self._tools.OpenSession, request, "OpenSession")))

    async def close_session(self, session_id, **fields):
        request = _core.close_session_request(session_id, fields)
        return message_to_py((await self._unary(self._tools.CloseSession, request,
                                                "CloseSession")).merged)

    async def update_session(self, session_id, idle):
        request = pb.UpdateSessionRequest(session_id=session_id, idle=idle)
        return message_to_py(await self._unary(self._tools.UpdateSession, request,
                                               "UpdateSession"))

    async def get_state(self, session_id, keys=()):
        request = pb.GetStateRequest(session_id=session_id, keys=list(keys))
        return message_to_py((await self._unary(self._tools.GetState, request,
                                                "GetState")).state)

    def watch(self, session_id):
        return AsyncWatch(self._tools.WatchSession(pb.WatchSessionRequest(session_id=session_id),
                                                   metadata=self._metadata))

    async def respond_permission(self, request_id, decision, reason=""):
        request = _core.respond_permission_request(request_id, decision, reason)
        await self._unary(self._tools.RespondPermission, request, "RespondPermission")

    async def export_recording(self, session_id, format=None):
        """See Client.export_recording."""
        request = _core.export_recording_request(session_id, format)
        try:
            chunks = [r.chunk async for r in self._tools.ExportRecording(
                request, timeout=self._timeout, metadata=self._metadata)]
        except grpc.RpcError as e:
            raise rpc_error(e, "ExportRecording") from None
        return _core.export_result(chunks, format)

    # ---- artifacts ----------------------------------------------------------------

    async def list_checkpoints(self, session_id):
        request = pb.ListCheckpointsRequest(session_id=session_id)
        return _core.checkpoints_result(await self._unary(self._tools.ListCheckpoints, request,
                                                          "ListCheckpoints"))

    async def diff_checkpoint(self, session_id, frm, to=None, paths=None):
        request = _core.diff_checkpoint_request(session_id, frm, to, paths)
        return _core.change_result(await self._unary(self._tools.DiffCheckpoint, request,
                                                     "DiffCheckpoint"))

    async def restore_checkpoint(self, session_id, checkpoint_id, paths=None, dry_run=False):
        request = _core.restore_checkpoint_request(session_id, checkpoint_id, paths, dry_run)
        return _core.change_result(await self._unary(self._tools.RestoreCheckpoint, request,
                                                     "RestoreCheckpoint"))

    async def save_artifact(self, session_id, name, content, mime_type=""):
        request = _core.save_artifact_request(session_id, name, content, mime_type)
        return (await self._unary(self._artifacts.SaveArtifact, request, "SaveArtifact")).version

    async def load_artifact(self, session_id, name, version=0):
        request = pb.LoadArtifactRequest(session_id=session_id or "", name=name, version=version)
        return _core.artifact_to_py(name, await self._unary(self._artifacts.LoadArtifact, request,
                                                            "LoadArtifact"))

    async def list_artifacts(self, session_id):
        request = pb.ListArtifactsRequest(session_id=session_id or "")
        return list((await self._unary(self._artifacts.ListArtifacts, request,
                                       "ListArtifacts")).names)

    async def list_versions(self, session_id, name):
        request = pb.ListVersionsRequest(session_id=session_id or "", name=name)
        return list((await self._unary(self._artifacts.ListVersions, request,
                                       "ListVersions")).versions)

    async def delete_artifact(self, session_id, name, version=0):
        request = pb.DeleteArtifactRequest(session_id=session_id or "", name=name,
                                           version=version)
        await self._unary(self._artifacts.DeleteArtifact, request, "DeleteArtifact")

    # ---- health ---------------------------------------------------------------------

    async def health_status(self, service=""):
        response = await self._unary(self._health.Check, _core.health_request(service),
                                     "Health/Check")
        return _core.health_status_name(response)

    async def health(self, service=""):
        return await self.health_status(service) == "SERVING"


class _OpeningSession:
    """What AsyncClient.open_session returns: awaitable, and an async context manager."""

    def __init__(self, client, fields):
        self._client = client
        self._fields = fields
        self._session = None

    def __await__(self):
        return self._client._open_session(self._fields).__await__()

    async def __aenter__(self):
        self._session = await self._client._open_session(self._fields)
        return self._session

    async def __aexit__(self, exc_type, exc, tb):
        await self._session.__aexit__(exc_type, exc, tb)


class AsyncSession(_core.SessionBase):
    """Session for asyncio: the same attributes, its methods coroutines."""

    async def __aenter__(self):
        return self

    async def __aexit__(self, exc_type, exc, tb):
        if self.closed:
            return
        try:
            await self.close()
        except ToolexecError:
            if exc_type is None:
                raise

    async def close(self, **fields):
        merged = await self.client.close_session(self.session_id, **fields)
        self.closed = True
        return merged

    def open_child(self, **fields):
        return self.client.open_session(parent_session_id=self.session_id, **fields)

    async def list_tools(self, format=None, *, tool_set="", native_tools=False):
        return await self.client.list_tools(format, tool_set=tool_set,
                                            session_id=self.session_id,
                                            native_tools=native_tools)

    def execute(self, calls, **options):
        return self.client.execute(calls, self.session_id, **options)

    async def run_batch(self, calls, **options):
        return await self.client.run_batch(calls, self.session_id, **options)

    async def call(self, name, arguments=None, /, **kwargs):
        return await self.client._call(name, arguments, kwargs, self.session_id)

    async def state(self, *keys):
        return await self.client.get_state(self.session_id, keys)

    async def set_idle(self, idle=True):
        return await self.client.update_session(self.session_id, idle)

    def watch(self):
        return self.client.watch(self.session_id)

    async def export(self, format=None):
        return await self.client.export_recording(self.session_id, format)

    async def checkpoints(self):
        return await self.client.list_checkpoints(self.session_id)

    async def diff(self, frm, to=None, paths=None):
        return await self.client.diff_checkpoint(self.session_id, frm, to, paths)

    async def restore(self, id, paths=None, dry_run=False):
        return await self.client.restore_checkpoint(self.session_id, id, paths, dry_run)

    async def save_artifact(self, name, content, mime_type=""):
        return await self.client.save_artifact(self.session_id, name, content, mime_type)

    async def load_artifact(self, name, version=0):
        return await self.client.load_artifact(self.session_id, name, version)

    async def list_artifacts(self):
        return await self.client.list_artifacts(self.session_id)

    async def list_versions(self, name):
        return await self.client.list_versions(self.session_id, name)

    async def delete_artifact(self, name, version=0):
        return await self.client.delete_artifact(self.session_id, name, version)


class AsyncWatch(_core.WatchBase):
    """A WatchSession stream: ``async for event in watch``; cancel() ends it."""

    async def __aiter__(self):
        while True:
            try:
                event = await self._call.read()
            except asyncio.CancelledError:
                if self._cancelled:  # grpc.aio reports a call we cancelled this way
                    return
                raise
            except grpc.RpcError as e:
                if self._cancelled and e.code() == grpc.StatusCode.CANCELLED:
                    return
                raise rpc_error(e, "WatchSession") from None
            if event is aio.EOF:
                return
            yield message_to_py(event)

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        self.cancel()
