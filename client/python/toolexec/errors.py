"""The exceptions the toolexec client raises.

ToolexecError
├── RpcError              the RPC itself failed (unknown session, draining, ...)
│   └── AuthenticationError   UNAUTHENTICATED: no token, or one the daemon does not accept
├── HarnessCallError      a harness tool was called with nothing to run it
└── ToolCallError         a tool call came back with a status other than success
    ├── UnknownToolError, InvalidArgumentsError, NoContextError, ToolDeniedError,
    ├── ToolTimeoutError, ToolCancelledError, NotExecutableHereError,
    └── ServerUnavailableError   (one per ToolExecutionError code; others are ToolCallError)
"""

import grpc


class ToolexecError(Exception):
    """Base class of everything the client raises on purpose."""


class RpcError(ToolexecError):
    """The RPC failed as a whole. ``code`` is the grpc.StatusCode, ``details`` its message."""

    def __init__(self, code, details, method=""):
        self.code = code
        self.details = details
        self.method = method
        name = code.name if isinstance(code, grpc.StatusCode) else str(code)
        where = f"{method}: " if method else ""
        super().__init__(f"{where}{name}: {details}")


class AuthenticationError(RpcError):
    """The daemon did not accept the caller (UNAUTHENTICATED): no bearer token was
    sent, or one its token file does not list (wrong, or revoked since)."""

    HINT = ("send a token from the daemon's token file: Client(token=...) or "
            "$TOOLEXEC_TOKEN")

    def __init__(self, code, details, method=""):
        super().__init__(code, f"{details} ({self.HINT})" if details else self.HINT, method)


class HarnessCallError(ToolexecError):
    """A call to a tool the harness runs, with no callback given to run it."""


class PermissionRequiredError(ToolexecError):
    """call() met a policy's question with nobody to answer it: the daemon would have
    waited its whole ask timeout. Give the client ``on_permission``, or use
    execute() and answer with respond_permission(). ``request`` is the
    permission_request dict (request_id, tool_name, description, ...); the batch is cancelled."""

    def __init__(self, request):
        self.request = request
        what = request.get("description") or request.get("tool_name") or "a call"
        super().__init__(
            f"the daemon asks permission for {what} and this client has no on_permission "
            "to answer: pass Client(..., on_permission=...) or answer execute()'s "
            "permission_request with respond_permission()")


class ToolCallError(ToolexecError):
    """A tool call that failed. The attributes come from the result's ``exception``.

    ``code`` is the ErrorCode name (``"ERROR_CODE_UNKNOWN_TOOL"``), ``status`` the
    ResultStatus name, and ``result`` the whole result dict.
    """

    def __init__(self, result):
        exc = result.get("exception") or {}
        self.result = result
        self.message = exc.get("message") or result.get("error_message") or "tool call failed"
        self.tool_name = exc.get("tool_name") or result.get("name", "")
        self.server_name = exc.get("server_name", "")
        self.code = exc.get("code", "ERROR_CODE_UNSPECIFIED")
        self.status = result.get("status", "RESULT_STATUS_UNSPECIFIED")
        self.call_id = exc.get("call_id") or result.get("id", "")
        self.step_id = exc.get("step_id") or result.get("step_id", "")
        super().__init__(f"{self.tool_name}: {self.code}: {self.message}")


class UnknownToolError(ToolCallError):
    pass


class InvalidArgumentsError(ToolCallError):
    pass


class NoContextError(ToolCallError):
    pass


class ToolDeniedError(ToolCallError):
    pass


class ToolTimeoutError(ToolCallError):
    pass


class ToolCancelledError(ToolCallError):
    pass


class NotExecutableHereError(ToolCallError):
    pass


class ServerUnavailableError(ToolCallError):
    pass


_BY_CODE = {
    "ERROR_CODE_UNKNOWN_TOOL": UnknownToolError,
    "ERROR_CODE_INVALID_ARGUMENTS": InvalidArgumentsError,
    "ERROR_CODE_NO_CONTEXT": NoContextError,
    "ERROR_CODE_DENIED": ToolDeniedError,
    "ERROR_CODE_TIMEOUT": ToolTimeoutError,
    "ERROR_CODE_CANCELLED": ToolCancelledError,
    "ERROR_CODE_NOT_EXECUTABLE_HERE": NotExecutableHereError,
    "ERROR_CODE_SERVER_UNAVAILABLE": ServerUnavailableError,
}


def tool_call_error(result):
    """The ToolCallError subclass for a failed result dict."""
    code = (result.get("exception") or {}).get("code", "")
    return _BY_CODE.get(code, ToolCallError)(result)


def rpc_error(err, method=""):
    """Converts a grpc.RpcError (sync or aio) into RpcError."""
    code = err.code() if callable(getattr(err, "code", None)) else grpc.StatusCode.UNKNOWN
    details = err.details() if callable(getattr(err, "details", None)) else str(err)
    kind = AuthenticationError if code == grpc.StatusCode.UNAUTHENTICATED else RpcError
    return kind(code, details or "", method)
