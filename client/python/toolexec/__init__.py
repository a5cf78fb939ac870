"""Python client for toolexecd, the tool-execution daemon for LLM agents.

    from toolexec import Client
    with Client("127.0.0.1:50051") as client:
        tools = client.list_tools("openai")          # hand these to the model
        for event in client.execute(model_tool_calls):
            ...

Values in and out are plain Python (see toolexec._convert for the rules);
failures raise the exceptions in toolexec.errors.
"""

try:
    from ._proto.toolexec.v1 import toolexec_pb2 as _pb  # noqa: F401
except ImportError as e:  # a source checkout whose stubs were never generated
    raise ImportError(
        "toolexec's gRPC stubs are missing: run `python3 client/python/generate_stubs.py` "
        "in a source checkout, or install the package with `pip install ./client/python`"
    ) from e

from ._batch import harness_result, normalize_call
from .aio import AsyncClient, AsyncSession, AsyncWatch
from .client import Client, Session, Watch
from .errors import (AuthenticationError, HarnessCallError, InvalidArgumentsError,
                     NoContextError, NotExecutableHereError, PermissionRequiredError, RpcError,
                     ServerUnavailableError,
                     ToolCallError, ToolCancelledError, ToolDeniedError, ToolexecError,
                     ToolTimeoutError, UnknownToolError)
from .replay import replay
from .providers import (anthropic_tool_result, gemini_function_response, is_error,
                        openai_tool_message, responses_output_item, result_text, tool_calls_in,
                        tool_result_messages)

__version__ = "0.1.0"

__all__ = [
    "AsyncClient", "AsyncSession", "AsyncWatch", "Client", "Session", "Watch",
    "harness_result", "normalize_call",
    "ToolexecError", "RpcError", "AuthenticationError", "HarnessCallError", "PermissionRequiredError",
    "ToolCallError", "UnknownToolError",
    "InvalidArgumentsError", "NoContextError", "ToolDeniedError", "ToolTimeoutError",
    "ToolCancelledError", "NotExecutableHereError", "ServerUnavailableError",
    "anthropic_tool_result", "gemini_function_response", "openai_tool_message", "responses_output_item",
    "tool_calls_in", "tool_result_messages", "result_text", "is_error", "replay",
]
