"""Tool calls in, events out: what Client and AsyncClient share for ExecuteBatch.

A batch is planned once (BatchPlan): every call is normalized from whichever
shape the model produced it in, and each is assigned to the daemon or to the
harness. Calls for the daemon go in one ExecuteBatch; the daemon numbers them
0..n-1 in that sub-batch, and remap() puts the caller's positions back, so
every event's ``index`` is the call's position in the list the caller passed.
The clients then walk the calls in order (_core.batch_steps): a daemon call's
result is read from the stream (progress and permission requests are passed on
as they arrive, the latter answered first by ``on_permission`` when given), a
harness call is run by its callback (or handed to the caller as a
``harness_call`` event) when every call before it has its result. The daemon
runs its calls concurrently all the while, since its batch is sent first.
"""

import inspect
import json
import time

from google.protobuf import duration_pb2

from ._convert import message_to_py
from ._proto.toolexec.v1 import toolexec_pb2 as pb

HARNESS = "EXECUTOR_HARNESS"


def _as_mapping(obj):
    if isinstance(obj, dict):
        return obj
    for method in ("model_dump", "to_dict"):  # provider SDK objects (pydantic and others)
        if callable(getattr(obj, method, None)):
            return getattr(obj, method)()
    raise TypeError(f"a tool call must be a dict, not {type(obj).__name__}")


def normalize_call(obj):
    """One tool call as {"id", "name", "step_id", "args" or "args_json"}.

    Accepts toolexec's own form ({"name", "args" | "args_json", "id", "step_id"}),
    an OpenAI Chat Completions tool call ({"id", "function": {"name", "arguments"}}),
    an OpenAI Responses function_call item ({"type": "function_call", "call_id", "name",
    "arguments"}), the Responses API's native apply_patch_call ({"type":
    "apply_patch_call", "call_id", "operation"}: the apply_patch tool with that
    operation) and shell_call ({"type": "shell_call", "call_id", "action": {"commands",
    "timeout_ms", "max_output_length"}}: the shell tool with those arguments), an
    Anthropic tool_use block ({"type": "tool_use", "id", "name", "input"}) and a Gemini
    function call, bare ({"name", "args"}) or as a part ({"functionCall": {...}}).
    Arguments given as JSON text are passed on as text, so the daemon reports bad JSON
    as an INVALID_ARGUMENTS result like any other argument error. A Responses item's
    type is kept as ``item_type`` (and put on its result), so tool_result_messages
    answers it with the matching output item.
    """
    obj = _as_mapping(obj)
    call_id, step_id = obj.get("id"), obj.get("step_id", "")
    item_type = None
    if isinstance(obj.get("function"), dict):  # OpenAI Chat Completions
        name, args = obj["function"].get("name"), obj["function"].get("arguments")
    elif obj.get("type") == "function_call":  # OpenAI Responses
        name, args, call_id = obj.get("name"), obj.get("arguments"), obj.get("call_id", call_id)
        item_type = "function_call"
    elif obj.get("type") == "apply_patch_call":  # OpenAI Responses, native apply_patch
        name, args, call_id = "apply_patch", {"operation": obj.get("operation")}, obj.get(
            "call_id", call_id)
        item_type = "apply_patch_call"
    elif obj.get("type") == "shell_call":  # OpenAI Responses, native shell
        action = _as_mapping(obj.get("action") or {})
        name, call_id = "shell", obj.get("call_id", call_id)
        args = {k: action[k] for k in ("commands", "timeout_ms", "max_output_length")
                if action.get(k) is not None}
        item_type = "shell_call"
    elif obj.get("type") == "tool_use":  # Anthropic
        name, args = obj.get("name"), obj.get("input")
    elif isinstance(obj.get("functionCall") or obj.get("function_call"), dict):  # Gemini part
        inner = obj.get("functionCall") or obj.get("function_call")
        name, args, call_id = inner.get("name"), inner.get("args"), inner.get("id", call_id)
    elif "args_json" in obj:
        name, args = obj.get("name"), obj["args_json"]
    else:  # toolexec's own form, or a bare Gemini FunctionCall
        name, args = obj.get("name"), obj.get("args")
    if not isinstance(name, str) or not name:
        raise ValueError(f"a tool call without a name: {obj!r}")
    call = {"id": "" if call_id is None else str(call_id), "name": name,
            "step_id": step_id or ""}
    if item_type is not None:
        call["item_type"] = item_type
    if isinstance(args, str):
        call["args_json"] = args
    elif args is None or isinstance(args, dict):
        call["args"] = args or {}
    else:
        raise ValueError(f"the arguments of {name!r} must be an object or JSON text, "
                         f"not {type(args).__name__}")
    return call


def call_args(call):
    """The arguments of a normalized call as a dict (JSON text parsed)."""
    if "args_json" in call:
        text = call["args_json"].strip()
        args = json.loads(text) if text else {}
        if not isinstance(args, dict):
            raise ValueError("the arguments are not a JSON object")
        return args
    return call["args"]


def to_proto_call(call):
    if "args_json" in call:
        args_json = call["args_json"]
    else:
        # JSON text, not a Struct: integers stay integers (a Struct has only doubles)
        # and nesting is not limited by protobuf's Struct parse depth.
        args_json = json.dumps(call["args"], allow_nan=False, ensure_ascii=False)
    # A Responses native item says so, so that a recording exports it as one.
    item_type = call.get("item_type", "")
    return pb.ToolCall(id=call["id"], name=call["name"], step_id=call["step_id"],
                       args_json=args_json,
                       item_type=item_type if item_type != "function_call" else "")


def _duration(seconds):
    d = duration_pb2.Duration()
    d.FromNanoseconds(int(round(seconds * 1e9)))
    return d


class BatchPlan:
    """Which calls of a batch go to the daemon, which the harness runs, and how."""

    def __init__(self, calls, *, session_id=None, executors=None, harness=None,
                 timeout=None, model_content_max_chars=0, on_permission=None):
        if on_permission is not None and not callable(on_permission):
            raise TypeError("on_permission is a function of the permission request")
        self.on_permission = on_permission
        self.calls = [normalize_call(c) for c in calls]
        executors = executors or {}
        self.runners = []  # per position: None for the daemon, a callable or False for the harness
        for call in self.calls:
            name = call["name"]
            if isinstance(harness, dict) and name in harness:
                self.runners.append(harness[name])
            elif executors.get(name) == HARNESS:
                if callable(harness) and not isinstance(harness, dict):
                    self.runners.append(lambda args, _n=name: harness(_n, args))
                else:
                    self.runners.append(False)
            else:
                self.runners.append(None)
        self.daemon_positions = [i for i, r in enumerate(self.runners) if r is None]
        self.request = pb.ExecuteBatchRequest(
            session_id=session_id or "",
            calls=[to_proto_call(self.calls[i]) for i in self.daemon_positions],
            model_content_max_chars=model_content_max_chars or 0)
        if timeout is not None:
            self.request.timeout.CopyFrom(_duration(timeout))

    def is_daemon(self, position):
        return self.runners[position] is None

    def missing_runners(self):
        return [self.calls[i]["name"] for i, r in enumerate(self.runners) if r is False]

    def remap(self, response):
        """An ExecuteBatchResponse as an event dict, its index the caller's position."""
        event = message_to_py(response)
        for kind, body in event.items():
            index = body.get("index")
            if isinstance(index, int) and 0 <= index < len(self.daemon_positions):
                body["index"] = self.daemon_positions[index]
                item_type = self.calls[body["index"]].get("item_type")
                if kind == "result" and item_type:
                    body["item_type"] = item_type
        return event

    def harness_call(self, position):
        call = self.calls[position]
        out = {"index": position, "id": call["id"], "name": call["name"],
               "step_id": call["step_id"]}
        if call.get("item_type"):
            out["item_type"] = call["item_type"]
        try:
            out["args"] = call_args(call)
        except ValueError as e:
            out["args_error"] = f"invalid arguments: {e}"
        return out


def _payload(value):
    if value is None:
        return {}
    if isinstance(value, dict):
        return value
    return {"result": value}


def harness_result(call, value=None, *, error=None, duration=None,
                   code="ERROR_CODE_TOOL_FAILED"):
    """A result dict shaped like the daemon's, for a call the harness ran.

    ``call`` is a ``harness_call`` event body. Pass the tool's return value (an
    object is the payload as-is, any other value v becomes {"result": v},
    None becomes {}), or ``error`` (a message or an exception) for a failure.
    """
    base = {"index": call.get("index", 0), "id": call.get("id", ""), "name": call["name"],
            "step_id": call.get("step_id", ""), "model_content": ""}
    if call.get("item_type"):
        base["item_type"] = call["item_type"]
    if duration is not None:
        base["duration"] = duration
    if error is None:
        return {**base, "status": "RESULT_STATUS_SUCCESS", "payload": _payload(value),
                "error_message": "", "compact_summary": f"[{call['name']}: completed]"}
    message = str(error) or type(error).__name__
    return {**base, "status": "RESULT_STATUS_ERROR", "payload": {"error": message},
            "error_message": message, "compact_summary": f"[{call['name']}: error]",
            "exception": {"message": message, "tool_name": call["name"], "server_name": "",
                          "code": code, "call_id": base["id"], "step_id": base["step_id"]}}


def harness_call_steps(call, fn):
    """Runs harness call ``call`` with ``fn``, without waiting itself: a generator
    that yields what ``fn`` returned if it is awaitable (send its value, or throw
    its exception, back) and returns the result dict; an exception from the
    tool becomes an error result, as on the daemon."""
    if "args_error" in call:
        return harness_result(call, error=call["args_error"], code="ERROR_CODE_INVALID_ARGUMENTS")
    start = time.monotonic()
    try:
        value = fn(call["args"])
        if inspect.isawaitable(value):
            value = yield value
    except Exception as e:  # a failing tool is a result, as on the daemon
        return harness_result(call, error=e, duration=time.monotonic() - start)
    return harness_result(call, value, duration=time.monotonic() - start)


def run_harness_call(call, fn):
    """Runs a harness tool synchronously; an awaitable it returns is an error result."""
    steps = harness_call_steps(call, fn)
    try:
        value = next(steps)
        if inspect.iscoroutine(value):
            value.close()  # never awaited: no "was never awaited" warning
        steps.throw(TypeError("the harness callback is asynchronous: use AsyncClient"))
    except StopIteration as done:
        return done.value
    raise AssertionError("harness_call_steps yielded twice")
