"""What the real daemon cannot show on demand, against a scripted in-process server:
the bearer token on every RPC, provider_tools_json parsing, session messages, and
the client's own checks on what a server sends."""

import json
import subprocess
from concurrent import futures

import grpc
import pytest

import toolexec
from toolexec import AsyncClient, Client
from toolexec._proto.toolexec.v1 import toolexec_pb2 as pb
from toolexec._proto.toolexec.v1 import toolexec_pb2_grpc as pb_grpc

OPENAI_TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Weather.",
    "parameters": {"type": "object", "properties": {"days": {"type": "integer", "maximum": 7}}}}}]


class ScriptedExecutor(pb_grpc.ToolExecutorServicer):
    def __init__(self):
        self.metadata = []
        self.requests = []
        self.batch_events = []

    def _seen(self, request, context):
        self.requests.append(request)
        self.metadata.append(dict(context.invocation_metadata()))

    def ListTools(self, request, context):
        self._seen(request, context)
        response = pb.ListToolsResponse(tools=[pb.ToolDeclaration(name="get_weather")])
        if request.format in (pb.DECLARATION_FORMAT_OPENAI, pb.DECLARATION_FORMAT_GEMINI):
            response.provider_tools_json = json.dumps(OPENAI_TOOLS)
        return response  # Anthropic's: as a daemon that predates declaration formats

    def ExecuteBatch(self, request, context):
        self._seen(request, context)
        yield from self.batch_events

    def WatchSession(self, request, context):
        self._seen(request, context)
        yield pb.SessionEvent(message=pb.ContextMessage(session_id=request.session_id,
                                                        text="50% done", tool_name="build"))
        yield pb.SessionEvent(permission_request=pb.PermissionRequest(
            request_id="r1", tool_name="run_command", level=pb.PERMISSION_LEVEL_EXECUTE,
            target=pb.PermissionTarget(kind=pb.PermissionTarget.KIND_COMMAND, value="rm -rf x")))

    def RespondPermission(self, request, context):
        self._seen(request, context)
        return pb.RespondPermissionResponse()


@pytest.fixture
def fake():
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    servicer = ScriptedExecutor()
    pb_grpc.add_ToolExecutorServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    servicer.address = f"127.0.0.1:{port}"
    yield servicer
    server.stop(None)


def test_token_is_sent_as_a_bearer_header_on_every_rpc(fake, monkeypatch):
    with Client(fake.address, token="s3cret") as c:
        c.list_tools()
        list(c.watch("s-1"))
    assert [m.get("authorization") for m in fake.metadata] == ["Bearer s3cret"] * 2
    monkeypatch.setenv("TOOLEXEC_TOKEN", "from-env")
    with Client(fake.address) as c:
        c.list_tools()
    assert fake.metadata[-1].get("authorization") == "Bearer from-env"
    monkeypatch.delenv("TOOLEXEC_TOKEN")
    with Client(fake.address) as c:
        c.list_tools()
    assert "authorization" not in fake.metadata[-1]


def test_provider_format_is_requested_and_parsed(fake):
    with Client(fake.address) as c:
        assert c.list_tools("openai") == OPENAI_TOOLS
        assert fake.requests[-1].format == pb.DECLARATION_FORMAT_OPENAI
        with pytest.raises(toolexec.ToolexecError, match="predates declaration formats"):
            c.list_tools("anthropic")
        assert fake.requests[-1].format == pb.DECLARATION_FORMAT_ANTHROPIC
        assert c.list_tools("gemini", tool_set="read_only", session_id="s-9") == OPENAI_TOOLS
        assert (fake.requests[-1].format, fake.requests[-1].tool_set,
                fake.requests[-1].session_id) == (pb.DECLARATION_FORMAT_GEMINI, "read_only", "s-9")


def test_async_token_and_format(fake):
    import asyncio

    async def main():
        async with AsyncClient(fake.address, token="t") as c:
            return await c.list_tools("openai")

    assert asyncio.run(main()) == OPENAI_TOOLS
    assert fake.metadata[-1]["authorization"] == "Bearer t"


def test_session_events_and_permission_answers(fake):
    with Client(fake.address) as c:
        events = list(c.watch("s-1"))
        c.respond_permission("r1", "allow_once", "ok")
        with pytest.raises(ValueError, match="allow_session"):
            c.respond_permission("r1", "maybe")
    assert events[0] == {"message": {"session_id": "s-1", "text": "50% done",
                                     "tool_name": "build"}}
    req = events[1]["permission_request"]
    assert req["level"] == "PERMISSION_LEVEL_EXECUTE"
    assert req["target"] == {"kind": "KIND_COMMAND", "value": "rm -rf x", "recursive": False}
    answer = fake.requests[-1]
    assert (answer.request_id, answer.decision, answer.reason) == (
        "r1", pb.PERMISSION_DECISION_ALLOW_ONCE, "ok")


def test_arguments_go_as_json_text_with_exact_integers(fake):
    fake.batch_events = [pb.ExecuteBatchResponse(result=pb.ToolResult(
        index=0, id="1", name="t", status=pb.RESULT_STATUS_SUCCESS))]
    with Client(fake.address) as c:
        c.run_batch([{"id": "1", "name": "t", "args": {"n": 2 ** 63 - 1, "x": 0.5}}],
                    split=False, timeout=1.5, model_content_max_chars=100)
    request = fake.requests[-1]
    assert json.loads(request.calls[0].args_json) == {"n": 2 ** 63 - 1, "x": 0.5}
    assert not request.calls[0].HasField("args")
    assert request.timeout.ToMilliseconds() == 1500
    assert request.model_content_max_chars == 100


def test_permission_requests_on_a_batch_carry_the_callers_index(fake):
    # The server saw one call (the harness call before it was not sent).
    fake.batch_events = [
        pb.ExecuteBatchResponse(permission_request=pb.PermissionRequest(request_id="p",
                                                                        index=0)),
        pb.ExecuteBatchResponse(result=pb.ToolResult(index=0, id="d", name="rm",
                                                     status=pb.RESULT_STATUS_DENIED))]
    with Client(fake.address) as c:
        events = list(c.execute([{"id": "h", "name": "mine", "args": {}},
                                 {"id": "d", "name": "rm", "args": {}}],
                                harness={"mine": lambda args: None}))
    assert events[0] == {"result": events[0]["result"]} and events[0]["result"]["payload"] == {}
    assert events[1]["permission_request"]["index"] == 1
    assert events[2]["result"]["index"] == 1


def test_results_out_of_call_order_are_refused(fake):
    fake.batch_events = [pb.ExecuteBatchResponse(result=pb.ToolResult(index=1, id="b")),
                         pb.ExecuteBatchResponse(result=pb.ToolResult(index=0, id="a"))]
    with Client(fake.address) as c:
        with pytest.raises(toolexec.ToolexecError, match="result of call 1 where call 0's was due"):
            c.run_batch([{"id": "a", "name": "x"}, {"id": "b", "name": "y"}], split=False)
    fake.batch_events = []
    with Client(fake.address) as c:
        with pytest.raises(toolexec.ToolexecError, match="ended before every result"):
            c.run_batch([{"id": "a", "name": "x"}], split=False)


def _self_signed(tmp_path, name):
    key, cert = tmp_path / f"{name}.key", tmp_path / f"{name}.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    return str(key), str(cert)


def test_tls_and_mutual_tls(tmp_path):
    server_key, server_cert = _self_signed(tmp_path, "server")
    client_key, client_cert = _self_signed(tmp_path, "client")
    servicer = ScriptedExecutor()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    pb_grpc.add_ToolExecutorServicer_to_server(servicer, server)
    creds = grpc.ssl_server_credentials(
        [(open(server_key, "rb").read(), open(server_cert, "rb").read())],
        root_certificates=open(client_cert, "rb").read(), require_client_auth=True)
    port = server.add_secure_port("localhost:0", creds)
    server.start()
    try:
        target = f"localhost:{port}"
        with Client(target, tls_ca=server_cert, tls_cert=client_cert, tls_key=client_key) as c:
            assert c.list_tools("openai") == OPENAI_TOOLS
        with Client(target, tls_ca=server_cert, timeout=5) as c:  # no client certificate
            with pytest.raises(toolexec.RpcError) as e:
                c.list_tools()
            assert e.value.code == grpc.StatusCode.UNAVAILABLE
        with pytest.raises(ValueError, match="together"):
            Client(target, tls_ca=server_cert, tls_cert=client_cert)
    finally:
        server.stop(None)
