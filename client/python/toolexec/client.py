"""The synchronous client: Client, Session and Watch.

Thread safety: a Client may be shared by threads (gRPC channels and stubs are
thread-safe); the generator that execute() returns, and a Watch, belong to the
thread that iterates them, except Watch.cancel(), which any thread may call.
"""

import grpc

from . import _core
from ._batch import run_harness_call
from ._convert import message_to_py
from ._proto.toolexec.v1 import toolexec_pb2 as pb
from .errors import ToolexecError, rpc_error, tool_call_error


class Client(_core.Connection):
    """A connection to toolexecd.

    ``target`` is "host:port" or "unix:/path/to.sock"; without one, $TOOLEXEC_TARGET,
    else 127.0.0.1:50051. ``token`` is sent as ``authorization: Bearer <token>``
    (default: $TOOLEXEC_TOKEN). ``tls_ca``, ``tls_cert`` and ``tls_key`` are PEM
    file paths for a TLS (with cert and key: mutual TLS) channel. ``timeout`` is
    the deadline in seconds of each unary RPC; streams have none (every call is
    bounded by its own timeout on the daemon).
    """

    def __init__(self, target=None, token=None, *, tls_ca=None, tls_cert=None, tls_key=None,
                 timeout=30.0, options=None, on_permission=None):
        self._connect(grpc, target, token, tls_ca, tls_cert, tls_key, timeout, options,
                      on_permission)

    def close(self):
        self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _unary(self, method, request, name):
        try:
            return method(request, timeout=self._timeout, metadata=self._metadata)
        except grpc.RpcError as e:
            raise rpc_error(e, name) from None

    # ---- tools -----------------------------------------------------------------

    def list_tools(self, format=None, *, tool_set="", session_id=None, native_tools=False):
        """Declarations as dicts (format None), or the tools in a provider's form:
        "openai", "openai_strict", "openai_responses", "anthropic" or "gemini" (a list
        ready to hand to that provider's API). ``native_tools`` declares the tools that
        have a provider-native form in it (Anthropic's text_editor_20250728,
        bash_20250124 and memory_20250818; the Responses API's apply_patch and shell)."""
        request = _core.list_tools_request(format, tool_set, session_id, native_tools)
        response = self._unary(self._tools.ListTools, request, "ListTools")
        if not session_id and not tool_set:
            self._executors = _core.executors(response)
        return _core.list_tools_result(response, format)

    def _plan(self, calls, session_id, harness, split, timeout, model_content_max_chars,
              on_permission):
        if split and self._executors is None:
            response = self._unary(self._tools.ListTools, pb.ListToolsRequest(), "ListTools")
            self._executors = _core.executors(response)
        return self._new_plan(calls, session_id, harness, split, timeout,
                              model_content_max_chars, on_permission)

    def execute(self, calls, session_id=None, *, harness=None, split=True, timeout=None,
                model_content_max_chars=0, on_permission=None):
        """Runs a batch; yields its events as they stream, as dicts:
        ``{"result": {...}}`` in call order, ``{"progress": {...}}`` and
        ``{"permission_request": {...}}`` as they come. Each ``index`` is the
        call's position in ``calls``.

        ``calls`` are dicts in toolexec's form ({"name", "args", "id"}) or as a
        provider produced them (OpenAI tool_calls, Anthropic tool_use blocks,
        Gemini functionCall parts). Calls to tools the daemon declares with
        ``EXECUTOR_HARNESS`` (and to any tool named in a ``harness`` dict) are
        not sent to the daemon: ``harness`` runs them (a dict name -> fn(args),
        or one fn(name, args)), or, with no callback for one, it is yielded in
        its place as ``{"harness_call": {"index", "id", "name", "args"}}`` for the
        caller to run (``toolexec.harness_result`` shapes its result). ``split=False``
        sends every call to the daemon. ``timeout`` is each call's, in seconds.

        A policy's ``ask`` rule makes the batch wait (no call starts) for an
        answer to each ``{"permission_request": {"request_id", ...}}``: call
        ``respond_permission(request_id, "allow_once" | "allow_session" | "deny")``
        while iterating, or pass ``on_permission``, a function of the request
        that returns the decision (or a ``(decision, reason)`` pair, or None to
        leave it to someone else); the client then answers each request before
        yielding it.
        """
        plan = self._plan(calls, session_id, harness, split, timeout, model_content_max_chars,
                          on_permission)
        return self._stream(plan)

    def _stream(self, plan):
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
                    answer = self._read(stream)
                elif kind == "run":
                    answer = run_harness_call(body, plan.runners[body["index"]])
                else:
                    self._answer(plan.on_permission, body)
        finally:
            if stream is not None:
                stream.cancel()  # a no-op once the stream has ended

    @staticmethod
    def _read(stream):
        """The next response, or None at the stream's end."""
        try:
            return next(stream)
        except StopIteration:
            return None
        except grpc.RpcError as e:
            raise rpc_error(e, "ExecuteBatch") from None

    def _answer(self, on_permission, request):
        answer = _core.permission_answer(on_permission(request))
        if answer is not None:
            self.respond_permission(request["request_id"], *answer)

    def run_batch(self, calls, session_id=None, **options):
        """execute(), collected: the results in call order (progress dropped). Every
        harness call needs a callback; one without fails before anything runs.
        Options: those of execute() (``on_permission`` answers a policy's questions)."""
        plan = self._plan(calls, session_id, *_core.plan_options(options))
        _core.require_runners(plan)
        return [e["result"] for e in self._stream(plan) if "result" in e]

    def call(self, name, arguments=None, /, **kwargs):
        """Runs one tool on the daemon and returns its payload (the tool's object
        as-is, any other value v as {"result": v}); a failure raises ToolCallError
        (a subclass per code). Arguments come as a dict, as keywords, or both.
        A policy's question is answered by the client's ``on_permission``; without
        one it raises PermissionRequiredError at once (and cancels the call)."""
        return self._call(name, arguments, kwargs, None)

    def _call(self, name, arguments, kwargs, session_id):
        calls = [{"id": "1", "name": name, "args": {**(arguments or {}), **kwargs}}]
        plan = self._plan(calls, session_id, None, False, None, 0, None)
        results = []
        events = self._stream(plan)
        try:
            for event in events:
                _core.collect_call_event(event, plan, results)
        finally:
            events.close()  # cancels the batch when a question went unanswered
        result = _core.only_result(results)
        if result["status"] != "RESULT_STATUS_SUCCESS":
            raise tool_call_error(result)
        return result["payload"]

    # ---- sessions ---------------------------------------------------------------

    def open_session(self, conversation_id="", **fields):
        """Opens a session (fields: those of OpenSessionRequest, e.g. workspaces,
        enabled_tools, subagent, parent_session_id, state_keys, user_id). Use it
        as a context manager: leaving the block closes it."""
        request = _core.open_session_request({"conversation_id": conversation_id, **fields})
        return Session(self, message_to_py(self._unary(self._tools.OpenSession, request,
                                                       "OpenSession")))

    def close_session(self, session_id, **fields):
        """Closes a session (fields: output_state_keys, merge_policy ("overwrite" or
        "reject_conflicts"), merge_exempt_keys, artifact_prefixes, discard). Returns
        what merged into the parent, as an EventActions dict."""
        request = _core.close_session_request(session_id, fields)
        return message_to_py(self._unary(self._tools.CloseSession, request,
                                         "CloseSession").merged)

    def update_session(self, session_id, idle):
        request = pb.UpdateSessionRequest(session_id=session_id, idle=idle)
        return message_to_py(self._unary(self._tools.UpdateSession, request, "UpdateSession"))

    def get_state(self, session_id, keys=()):
        request = pb.GetStateRequest(session_id=session_id, keys=list(keys))
        return message_to_py(self._unary(self._tools.GetState, request, "GetState").state)

    def watch(self, session_id):
        """The session's events ({"message": {...}} or {"permission_request": {...}})
        as an iterator that ends when the session closes or on cancel()."""
        return Watch(self._tools.WatchSession(pb.WatchSessionRequest(session_id=session_id),
                                              metadata=self._metadata))

    def respond_permission(self, request_id, decision, reason=""):
        """Answers a permission_request: decision "allow_once", "allow_session" or "deny"."""
        request = _core.respond_permission_request(request_id, decision, reason)
        self._unary(self._tools.RespondPermission, request, "RespondPermission")

    def export_recording(self, session_id, format=None):
        """The session's recording (OpenSession's ``record``, or a daemon recording
        every session): with format None (or "native") a list of its events as
        dicts, the header line first; with "openai", "openai_responses",
        "anthropic" or "gemini" the conversation as that provider's messages (per
        batch the model's tool calls, then what tool_result_messages builds)."""
        request = _core.export_recording_request(session_id, format)
        try:
            chunks = [r.chunk for r in self._tools.ExportRecording(
                request, timeout=self._timeout, metadata=self._metadata)]
        except grpc.RpcError as e:
            raise rpc_error(e, "ExportRecording") from None
        return _core.export_result(chunks, format)

    # ---- checkpoints -------------------------------------------------------------

    def list_checkpoints(self, session_id):
        """The session's checkpoints (its workspace before each batch that could
        write), oldest first: dicts with id, session_id, batch_id, created_at,
        tools, files_changed, bytes_stored."""
        request = pb.ListCheckpointsRequest(session_id=session_id)
        return _core.checkpoints_result(self._unary(self._tools.ListCheckpoints, request,
                                                    "ListCheckpoints"))

    def diff_checkpoint(self, session_id, frm, to=None, paths=None):
        """From checkpoint ``frm`` to checkpoint ``to`` (None: the workspace now):
        {"changes": [{"path", "kind"}], "unified_diff": str, "diff_truncated": bool}."""
        request = _core.diff_checkpoint_request(session_id, frm, to, paths)
        return _core.change_result(self._unary(self._tools.DiffCheckpoint, request,
                                               "DiffCheckpoint"))

    def restore_checkpoint(self, session_id, checkpoint_id, paths=None, dry_run=False):
        """Puts the workspace (or ``paths``) back as the checkpoint had it:
        {"changes", "undo_checkpoint_id", "not_restored"}; a dry run changes nothing."""
        request = _core.restore_checkpoint_request(session_id, checkpoint_id, paths, dry_run)
        return _core.change_result(self._unary(self._tools.RestoreCheckpoint, request,
                                               "RestoreCheckpoint"))

    # ---- artifacts ----------------------------------------------------------------

    def save_artifact(self, session_id, name, content, mime_type=""):
        """Saves text (str) or data (bytes); returns the new version (from 1)."""
        request = _core.save_artifact_request(session_id, name, content, mime_type)
        return self._unary(self._artifacts.SaveArtifact, request, "SaveArtifact").version

    def load_artifact(self, session_id, name, version=0):
        """{"name", "version", "mime_type", "text" or "data"}; version 0 = the latest."""
        request = pb.LoadArtifactRequest(session_id=session_id or "", name=name, version=version)
        return _core.artifact_to_py(name, self._unary(self._artifacts.LoadArtifact, request,
                                                      "LoadArtifact"))

    def list_artifacts(self, session_id):
        request = pb.ListArtifactsRequest(session_id=session_id or "")
        return list(self._unary(self._artifacts.ListArtifacts, request, "ListArtifacts").names)

    def list_versions(self, session_id, name):
        """Versions of an artifact, newest first."""
        request = pb.ListVersionsRequest(session_id=session_id or "", name=name)
        return list(self._unary(self._artifacts.ListVersions, request, "ListVersions").versions)

    def delete_artifact(self, session_id, name, version=0):
        """Deletes one version, or (0) every version."""
        request = pb.DeleteArtifactRequest(session_id=session_id or "", name=name,
                                           version=version)
        self._unary(self._artifacts.DeleteArtifact, request, "DeleteArtifact")

    # ---- health ---------------------------------------------------------------------

    def health_status(self, service=""):
        """The serving status name, e.g. "SERVING" or "NOT_SERVING" (draining)."""
        response = self._unary(self._health.Check, _core.health_request(service), "Health/Check")
        return _core.health_status_name(response)

    def health(self, service=""):
        """True when the daemon (or ``service``) is SERVING."""
        return self.health_status(service) == "SERVING"


class Session(_core.SessionBase):
    """An open session; a context manager that closes it on leaving the block.

    ``session_id``, ``conversation_id``, ``tools`` and ``warnings`` come from the
    daemon's Session; ``info`` is all of it as a dict.
    """

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if self.closed:
            return
        try:
            self.close()
        except ToolexecError:
            if exc_type is None:
                raise  # otherwise the block's own exception is the one to see

    def close(self, **fields):
        """CloseSession (see Client.close_session); returns what merged into the parent."""
        merged = self.client.close_session(self.session_id, **fields)
        self.closed = True
        return merged

    def open_child(self, **fields):
        """A child session of this one (fields as Client.open_session; state_keys:
        the keys it starts with)."""
        return self.client.open_session(parent_session_id=self.session_id, **fields)

    def list_tools(self, format=None, *, tool_set="", native_tools=False):
        return self.client.list_tools(format, tool_set=tool_set, session_id=self.session_id,
                                      native_tools=native_tools)

    def execute(self, calls, **options):
        return self.client.execute(calls, self.session_id, **options)

    def run_batch(self, calls, **options):
        return self.client.run_batch(calls, self.session_id, **options)

    def call(self, name, arguments=None, /, **kwargs):
        return self.client._call(name, arguments, kwargs, self.session_id)

    def state(self, *keys):
        """The session's tool state (only ``keys``, if given) as a dict."""
        return self.client.get_state(self.session_id, keys)

    def set_idle(self, idle=True):
        return self.client.update_session(self.session_id, idle)

    def watch(self):
        return self.client.watch(self.session_id)

    def export(self, format=None):
        """This session's recording: see Client.export_recording."""
        return self.client.export_recording(self.session_id, format)

    def checkpoints(self):
        """This session's checkpoints, oldest first (Client.list_checkpoints)."""
        return self.client.list_checkpoints(self.session_id)

    def diff(self, frm, to=None, paths=None):
        """Changes from checkpoint ``frm`` to ``to`` (None: now) (Client.diff_checkpoint)."""
        return self.client.diff_checkpoint(self.session_id, frm, to, paths)

    def restore(self, id, paths=None, dry_run=False):
        """Puts the workspace back as checkpoint ``id`` had it (Client.restore_checkpoint)."""
        return self.client.restore_checkpoint(self.session_id, id, paths, dry_run)

    def save_artifact(self, name, content, mime_type=""):
        return self.client.save_artifact(self.session_id, name, content, mime_type)

    def load_artifact(self, name, version=0):
        return self.client.load_artifact(self.session_id, name, version)

    def list_artifacts(self):
        return self.client.list_artifacts(self.session_id)

    def list_versions(self, name):
        return self.client.list_versions(self.session_id, name)

    def delete_artifact(self, name, version=0):
        return self.client.delete_artifact(self.session_id, name, version)


class Watch(_core.WatchBase):
    """A WatchSession stream: iterate it for event dicts; cancel() ends it from any thread."""

    def __iter__(self):
        try:
            for event in self._call:
                yield message_to_py(event)
        except grpc.RpcError as e:
            if self._cancelled and e.code() == grpc.StatusCode.CANCELLED:
                return
            raise rpc_error(e, "WatchSession") from None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.cancel()
