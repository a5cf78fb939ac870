"""Requests and responses that Client and AsyncClient share: no I/O here."""

import json
import os

import grpc

from ._batch import BatchPlan
from ._convert import message_to_py
from ._proto.toolexec.v1 import toolexec_pb2 as pb
from ._proto.toolexec.v1 import toolexec_pb2_grpc as pb_grpc
from .errors import HarnessCallError, PermissionRequiredError, ToolexecError

try:  # grpcio-health-checking, when installed, owns grpc.health.v1 in the descriptor pool
    from grpc_health.v1 import health_pb2, health_pb2_grpc
except ImportError:
    from ._proto.grpc.health.v1 import health_pb2, health_pb2_grpc

DEFAULT_TARGET = "127.0.0.1:50051"

FORMATS = {
    "native": pb.DECLARATION_FORMAT_NATIVE,
    "openai": pb.DECLARATION_FORMAT_OPENAI,
    "openai_strict": pb.DECLARATION_FORMAT_OPENAI_STRICT,
    "anthropic": pb.DECLARATION_FORMAT_ANTHROPIC,
    "gemini": pb.DECLARATION_FORMAT_GEMINI,
    "openai_responses": pb.DECLARATION_FORMAT_OPENAI_RESPONSES,
}


def resolve_target(target):
    """target, else $TOOLEXEC_TARGET, else 127.0.0.1:50051 (as the toolexec CLI)."""
    return target or os.environ.get("TOOLEXEC_TARGET") or DEFAULT_TARGET


def metadata(token):
    """Per-call metadata: the bearer token (argument, else $TOOLEXEC_TOKEN), if any."""
    token = token if token is not None else os.environ.get("TOOLEXEC_TOKEN")
    return (("authorization", f"Bearer {token}"),) if token else ()


def channel_credentials(tls_ca, tls_cert, tls_key):
    """TLS credentials from PEM files, or None for a plaintext channel."""
    if not (tls_ca or tls_cert or tls_key):
        return None
    if bool(tls_cert) != bool(tls_key):
        raise ValueError("tls_cert and tls_key go together (mutual TLS)")

    def read(path):
        if not path:
            return None
        with open(path, "rb") as f:
            return f.read()

    return grpc.ssl_channel_credentials(read(tls_ca), read(tls_key), read(tls_cert))


class Connection:
    """What Client and AsyncClient hold: a channel (from ``channels``, either the
    grpc or the grpc.aio module), the stubs, the call metadata and the unary deadline."""

    def _connect(self, channels, target, token, tls_ca, tls_cert, tls_key, timeout, options,
                 on_permission=None):
        if on_permission is not None and not callable(on_permission):
            raise TypeError("on_permission is a function of the permission request")
        self._on_permission = on_permission
        self.target = resolve_target(target)
        creds = channel_credentials(tls_ca, tls_cert, tls_key)
        if creds is None:
            self._channel = channels.insecure_channel(self.target, options=options)
        else:
            self._channel = channels.secure_channel(self.target, creds, options=options)
        self._metadata = metadata(token)
        self._timeout = timeout
        self._tools = pb_grpc.ToolExecutorStub(self._channel)
        self._artifacts = pb_grpc.ArtifactStoreStub(self._channel)
        self._health = health_pb2_grpc.HealthStub(self._channel)
        self._executors = None  # tool name -> Executor name, loaded on first need

    def _new_plan(self, calls, session_id, harness, split, timeout, model_content_max_chars,
                  on_permission):
        return BatchPlan(calls, session_id=session_id, executors=self._executors if split else {},
                         harness=harness, timeout=timeout,
                         model_content_max_chars=model_content_max_chars,
                         # The call's own answerer, else the client's.
                         on_permission=on_permission if on_permission is not None
                         else self._on_permission)


def plan_options(options):
    """run_batch's keyword options, in _plan's order; anything else is a TypeError."""
    values = (options.pop("harness", None), options.pop("split", True),
              options.pop("timeout", None), options.pop("model_content_max_chars", 0),
              options.pop("on_permission", None))
    if options:
        raise TypeError(f"unexpected options: {', '.join(options)}")
    return values


def batch_steps(plan):
    """One batch's events in call order, without I/O: the walk Client and AsyncClient
    share (see _batch), each doing the I/O its own way. A generator of steps
    ``(kind, body)``; a step is answered through ``send()``:

    - ``("read", None)``: send the next ExecuteBatchResponse, or None once the stream ended;
    - ``("run", call)``: send the result of harness call ``call`` (plan.runners runs it);
    - ``("answer", request)``: answer the permission request with plan.on_permission;
    - ``("event", event)``: hand the event to the caller.
    """
    for position in range(len(plan.calls)):
        if not plan.is_daemon(position):
            call = plan.harness_call(position)
            if plan.runners[position] is False:
                yield "event", {"harness_call": call}
            else:
                result = yield "run", call
                yield "event", {"result": result}
            continue
        while True:
            response = yield "read", None
            if response is None:
                raise ToolexecError("the ExecuteBatch stream ended before every result")
            event = plan.remap(response)
            if "result" in event:
                check_order(event["result"], position)
            yield from _daemon_event(plan, event)
            if "result" in event:
                break
    if plan.daemon_positions:  # what follows the last result (nothing, normally)
        while True:
            response = yield "read", None
            if response is None:
                return
            yield from _daemon_event(plan, plan.remap(response))


def _daemon_event(plan, event):
    if "permission_request" in event and plan.on_permission is not None:
        yield "answer", event["permission_request"]
    yield "event", event


def permission_answer(answer):
    """What an on_permission callback returned, as (decision, reason); None leaves the
    request unanswered (for someone else, e.g. a WatchSession, to answer)."""
    if answer is None:
        return None
    if isinstance(answer, str):
        return answer, ""
    if isinstance(answer, tuple) and len(answer) == 2:
        return answer[0], answer[1] or ""
    raise TypeError("on_permission returns a decision (\"allow_once\", \"allow_session\" or "
                    f"\"deny\"), a (decision, reason) pair or None, not {answer!r}")


def check_order(result, position):
    if result.get("index") != position:
        raise ToolexecError(f"the daemon sent the result of call {result.get('index')} "
                            f"where call {position}'s was due")


def require_runners(plan):
    missing = plan.missing_runners()
    if missing:
        raise HarnessCallError(f"{', '.join(sorted(set(missing)))} run in the harness: pass "
                               "harness={name: fn} (or iterate execute() for harness_call events)")


class WatchBase:
    """A WatchSession stream (the call's own iteration is Watch's or AsyncWatch's);
    cancel() ends it, from any thread."""

    def __init__(self, call):
        self._call = call
        self._cancelled = False

    def cancel(self):
        self._cancelled = True
        self._call.cancel()


class SessionBase:
    """The attributes of an open session, from the daemon's Session message."""

    def __init__(self, client, info):
        self.client = client
        self.info = info
        self.session_id = info["session_id"]
        self.conversation_id = info.get("conversation_id", "")
        self.tools = info.get("tools", [])
        self.warnings = info.get("warnings", [])
        self.closed = False

    def __repr__(self):
        return f"{type(self).__name__}({self.session_id!r})"


def list_tools_request(fmt, tool_set, session_id, native_tools=False):
    if fmt is None:
        fmt = "native"
    if fmt not in FORMATS:
        raise ValueError(f"unknown declaration format {fmt!r}; one of {', '.join(FORMATS)}")
    return pb.ListToolsRequest(session_id=session_id or "", tool_set=tool_set or "",
                               format=FORMATS[fmt], native_tools=bool(native_tools))


def declaration_to_py(decl):
    out = message_to_py(decl)
    if decl.parameters_json:  # the schema text exactly as declared: its integers are exact
        out["parameters"] = json.loads(decl.parameters_json)
    return out


def list_tools_result(response, fmt):
    """Native: declarations as dicts. A provider format: its parsed provider_tools_json."""
    if fmt in (None, "native"):
        return [declaration_to_py(d) for d in response.tools]
    if not response.provider_tools_json:
        raise ToolexecError(f"the daemon sent no provider_tools_json for format {fmt!r} "
                            "(it predates declaration formats); update toolexecd")
    return json.loads(response.provider_tools_json)


def executors(response):
    """Tool name -> Executor name, from a ListTools response."""
    return {d.name: pb.Executor.Name(d.executor) for d in response.tools}


def _enum_value(enum, prefix, value):
    """An enum from its value name, with or without its prefix, any case; or from a number."""
    if isinstance(value, int):
        return value
    name = str(value).upper()
    if not name.startswith(prefix):
        name = prefix + name
    try:
        return enum.Value(name)
    except ValueError:
        names = ", ".join(n[len(prefix):].lower() for n in enum.keys())
        kind = prefix.rstrip("_").lower()
        raise ValueError(f"unknown {kind} {value!r}; one of {names}") from None


def open_session_request(fields):
    return pb.OpenSessionRequest(**fields)


def close_session_request(session_id, fields):
    fields = dict(fields)
    if "merge_policy" in fields:
        fields["merge_policy"] = _enum_value(pb.StateMergePolicy, "STATE_MERGE_POLICY_",
                                             fields["merge_policy"])
    return pb.CloseSessionRequest(session_id=session_id, **fields)


def export_recording_request(session_id, fmt):
    return pb.ExportRecordingRequest(
        session_id=session_id,
        format=_enum_value(pb.RecordingFormat, "RECORDING_FORMAT_", fmt or "native"))


def export_result(chunks, fmt):
    """A recording's chunks, joined and parsed: the native form as a list of its
    lines' objects (the header first), a transcript as its list of messages."""
    text = b"".join(chunks).decode("utf-8")
    if (fmt or "native").lower() in ("native", "recording_format_native"):
        return [json.loads(line) for line in text.splitlines() if line]
    return json.loads(text)


def diff_checkpoint_request(session_id, frm, to, paths):
    return pb.DiffCheckpointRequest(session_id=session_id, from_checkpoint_id=frm,
                                    to_checkpoint_id=to or "", paths=list(paths or ()))


def restore_checkpoint_request(session_id, checkpoint_id, paths, dry_run):
    return pb.RestoreCheckpointRequest(session_id=session_id, checkpoint_id=checkpoint_id,
                                       paths=list(paths or ()), dry_run=dry_run)


def checkpoints_result(response):
    """ListCheckpointsResponse as a list of checkpoint dicts, oldest first."""
    return [message_to_py(c) for c in response.checkpoints]


def change_result(response):
    """A Diff/RestoreCheckpointResponse as a dict, each change's kind in lower case
    ("added", "modified", "deleted", "mode_changed", "type_changed")."""
    out = message_to_py(response)
    for change in out.get("changes", []):
        change["kind"] = str(change.get("kind", "")).lower()
    return out


def respond_permission_request(request_id, decision, reason):
    return pb.RespondPermissionRequest(
        request_id=request_id, reason=reason or "",
        decision=_enum_value(pb.PermissionDecision, "PERMISSION_DECISION_", decision))


def save_artifact_request(session_id, name, content, mime_type):
    if isinstance(content, str):
        artifact = pb.Artifact(text=content, mime_type=mime_type or "")
    elif isinstance(content, (bytes, bytearray, memoryview)):
        artifact = pb.Artifact(data=bytes(content), mime_type=mime_type or "")
    else:
        raise TypeError(f"artifact content is str (text) or bytes (data), not "
                        f"{type(content).__name__}")
    return pb.SaveArtifactRequest(session_id=session_id or "", name=name, artifact=artifact)


def artifact_to_py(name, response):
    """{"name", "version", "mime_type", and "text" or "data"}."""
    return {"name": name, "version": response.version, **message_to_py(response.artifact)}


def health_request(service):
    return health_pb2.HealthCheckRequest(service=service or "")


def health_status_name(response):
    return health_pb2.HealthCheckResponse.ServingStatus.Name(response.status)


def collect_call_event(event, plan, results):
    """One event of call()'s batch: a result is kept in ``results``; a permission
    request that nothing answers raises PermissionRequiredError at once."""
    if "permission_request" in event and plan.on_permission is None:
        raise PermissionRequiredError(event["permission_request"])
    if "result" in event:
        results.append(event["result"])


def only_result(results):
    """The one result of a one-call batch."""
    if len(results) != 1:
        raise ToolexecError(f"expected one result from the daemon, got {len(results)}")
    return results[0]

