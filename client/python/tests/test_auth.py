"""Authentication against a real toolexecd: a bearer token from its token file
(sync and async clients, $TOOLEXEC_TOKEN, revocation on SIGHUP), and TLS and
mutual TLS with certificates made by openssl for the test. Health answers
without credentials."""

import asyncio
import signal
import subprocess

import grpc
import pytest

import toolexec
from conftest import Daemon, eventually
from toolexec import AsyncClient, Client

GATEWAY_TOKEN = "gw-3f9c2a7d41e8b06c"
REVOKED_TOKEN = "old-77a1d0c95e2b4f18"


def write(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return str(path)


@pytest.fixture(scope="module")
def token_daemon(workspace, tmp_path_factory):
    tokens = tmp_path_factory.mktemp("auth") / "tokens"
    write(tokens, f"# token [name [profile]]\n{GATEWAY_TOKEN} gateway\n{REVOKED_TOKEN} old\n")
    d = Daemon(workspace, [f"--token_file={tokens}"])
    d.token_file = str(tokens)
    yield d
    d.stop()


def test_the_right_token_calls_tools(token_daemon):
    with Client(token_daemon.address, token=GATEWAY_TOKEN) as c:
        assert c.list_tools()[0]["name"] == "view_file"
        assert c.call("get_weather", city="Paris")["city"] == "Paris"
        with c.open_session("auth-conversation") as s:  # a session RPC and a batch in it
            s.call("counter")
            assert s.state() == {"count": 1}


def test_the_token_comes_from_the_environment(token_daemon, monkeypatch):
    monkeypatch.setenv("TOOLEXEC_TOKEN", GATEWAY_TOKEN)
    with Client(token_daemon.address) as c:
        assert c.call("get_weather", city="Oslo")["city"] == "Oslo"
    monkeypatch.setenv("TOOLEXEC_TOKEN", "not-a-token")
    with Client(token_daemon.address, token=GATEWAY_TOKEN) as c:  # the argument wins
        assert c.list_tools()


@pytest.mark.parametrize("token", [None, "wrong-token", GATEWAY_TOKEN + "x", "Bearer"])
def test_no_or_a_wrong_token_is_unauthenticated(token_daemon, monkeypatch, token):
    monkeypatch.delenv("TOOLEXEC_TOKEN", raising=False)
    with Client(token_daemon.address, token=token) as c:
        for attempt in (c.list_tools, lambda: c.call("get_weather", city="Paris"),
                        lambda: c.open_session("x")):
            with pytest.raises(toolexec.AuthenticationError) as e:
                attempt()
            assert e.value.code == grpc.StatusCode.UNAUTHENTICATED
            assert isinstance(e.value, toolexec.RpcError)
            assert "TOOLEXEC_TOKEN" in str(e.value)  # says what to do
            assert GATEWAY_TOKEN not in str(e.value)  # and which tokens exist, never
        assert c.health()  # probes need no token


def test_async_client_sends_the_token(token_daemon):
    async def main():
        async with AsyncClient(token_daemon.address, token=GATEWAY_TOKEN) as c:
            assert (await c.call("get_weather", city="Rome"))["city"] == "Rome"
        async with AsyncClient(token_daemon.address, token="wrong-token") as c:
            assert await c.health()
            with pytest.raises(toolexec.AuthenticationError):
                await c.list_tools()
            with pytest.raises(toolexec.AuthenticationError):
                async for _ in c.execute([{"name": "get_weather", "args": {"city": "x"}}],
                                         split=False):
                    pass

    asyncio.run(asyncio.wait_for(main(), 30))


def test_a_token_removed_from_the_file_is_refused_after_sighup(workspace, tmp_path):
    tokens = write(tmp_path / "tokens", f"{GATEWAY_TOKEN} gateway\n{REVOKED_TOKEN} old\n")
    d = Daemon(workspace, [f"--token_file={tokens}"])
    try:
        with Client(d.address, token=REVOKED_TOKEN, timeout=5) as old, \
                Client(d.address, token=GATEWAY_TOKEN, timeout=5) as gateway:
            assert old.list_tools()
            write(tokens, f"{GATEWAY_TOKEN} gateway\n")
            d.proc.send_signal(signal.SIGHUP)

            def refused():
                try:
                    old.list_tools()
                    return False
                except toolexec.AuthenticationError:
                    return True

            assert eventually(refused, timeout=10), d.log()
            assert gateway.list_tools()  # the token still listed still works
            assert d.proc.poll() is None  # SIGHUP reloads; it does not stop the daemon
    finally:
        d.stop()


# ---- TLS --------------------------------------------------------------------------

def openssl(*args):
    subprocess.run(["openssl", *args], check=True, capture_output=True)


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    """A CA, a server certificate for 127.0.0.1/localhost and a client certificate
    it signed, and a client certificate from another CA."""
    d = tmp_path_factory.mktemp("certs")
    paths = {}
    for ca in ("ca", "other_ca"):
        paths[ca], paths[ca + "_key"] = str(d / f"{ca}.pem"), str(d / f"{ca}.key")
        openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                "-subj", f"/CN=toolexec test {ca}", "-keyout", paths[ca + "_key"],
                "-out", paths[ca])
    for name, ca, san in (("server", "ca", "IP:127.0.0.1,DNS:localhost"),
                          ("client", "ca", "DNS:gateway.test"),
                          ("stranger", "other_ca", "DNS:stranger.test")):
        key, csr, cert = (str(d / f"{name}.{ext}") for ext in ("key", "csr", "pem"))
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}",
                "-keyout", key, "-out", csr)
        ext = write(d / f"{name}.ext", f"subjectAltName={san}\n")
        openssl("x509", "-req", "-in", csr, "-CA", paths[ca], "-CAkey", paths[ca + "_key"],
                "-CAcreateserial", "-days", "1", "-extfile", ext, "-out", cert)
        paths[name], paths[name + "_key"] = cert, key
    return paths


def test_tls_with_a_token(workspace, tmp_path, certs):
    tokens = write(tmp_path / "tokens", f"{GATEWAY_TOKEN} gateway\n")
    d = Daemon(workspace, [f"--token_file={tokens}", f"--tls_cert_file={certs['server']}",
                           f"--tls_key_file={certs['server_key']}"])
    try:
        with Client(d.address, token=GATEWAY_TOKEN, tls_ca=certs["ca"]) as c:
            assert c.call("get_weather", city="Lima")["city"] == "Lima"
        with Client(d.address, tls_ca=certs["ca"]) as c:
            assert c.health()
            with pytest.raises(toolexec.AuthenticationError):
                c.list_tools()
        with Client(d.address, token=GATEWAY_TOKEN, timeout=5) as c:  # plaintext to a TLS port
            with pytest.raises(toolexec.RpcError) as e:
                c.list_tools()
            assert e.value.code == grpc.StatusCode.UNAVAILABLE
    finally:
        d.stop()


def test_mutual_tls_requires_a_client_certificate_from_the_ca(workspace, certs):
    d = Daemon(workspace, [f"--tls_cert_file={certs['server']}",
                           f"--tls_key_file={certs['server_key']}",
                           f"--tls_client_ca_file={certs['ca']}"])
    try:
        with Client(d.address, tls_ca=certs["ca"], tls_cert=certs["client"],
                    tls_key=certs["client_key"]) as c:
            assert c.call("get_weather", city="Kyiv")["city"] == "Kyiv"
            assert c.health()
        for cert in (None, "stranger"):  # none, or one another CA signed
            kwargs = {"tls_cert": certs[cert], "tls_key": certs[cert + "_key"]} if cert else {}
            with Client(d.address, tls_ca=certs["ca"], timeout=5, **kwargs) as c:
                with pytest.raises(toolexec.RpcError) as e:
                    c.list_tools()
                assert e.value.code == grpc.StatusCode.UNAVAILABLE, cert
    finally:
        d.stop()


def test_tls_files_that_do_not_exist_fail_before_connecting(tmp_path):
    with pytest.raises(FileNotFoundError):
        Client("127.0.0.1:1", tls_ca=str(tmp_path / "missing.pem"))
