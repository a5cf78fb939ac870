"""Fixtures: a real toolexecd on 127.0.0.1 with a temporary workspace.

The daemon is $TOOLEXECD, else build/toolexecd in this checkout; a missing
binary is a failure that says how to build it, never a skip. It runs with the
example tools and examples/python/toolexecd.textproto (which declares
ask_question for the harness and google_search for the provider).
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
try:  # installed (scripts/test_python.sh), else this source tree's (stubs generated)
    import toolexec  # noqa: F401
except ImportError:
    sys.path.insert(0, os.path.join(REPO, "client", "python"))
TOOLEXECD = os.environ.get("TOOLEXECD") or os.path.join(REPO, "build", "toolexecd")
TOOLEXEC_CLI = os.environ.get("TOOLEXEC_CLI") or os.path.join(REPO, "build", "toolexec")
CONFIG = os.path.join(REPO, "examples", "python", "toolexecd.textproto")


class Daemon:
    def __init__(self, workspace, extra_args=(), config=CONFIG):
        if not os.access(TOOLEXECD, os.X_OK):
            pytest.fail(f"toolexecd not found at {TOOLEXECD}: build it "
                        "(scripts/build.sh toolexecd) or set TOOLEXECD", pytrace=False)
        self.workspace = workspace
        self._dir = tempfile.mkdtemp(prefix="toolexec-py-")
        address_file = os.path.join(self._dir, "address")
        self.log_path = os.path.join(self._dir, "toolexecd.log")
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [TOOLEXECD, "--listen=127.0.0.1:0", f"--workspace={workspace}",
             f"--address_file={address_file}", "--example_tools", f"--config={config}",
             *extra_args],
            stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        self.address = ""
        while not self.address:
            if self.proc.poll() is not None:
                raise RuntimeError(f"toolexecd exited ({self.proc.returncode}):\n{self.log()}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"toolexecd wrote no address within 10 s:\n{self.log()}")
            try:
                with open(address_file, encoding="utf-8") as f:
                    self.address = f.read().strip()
            except FileNotFoundError:
                pass
            if not self.address:
                time.sleep(0.01)

    def log(self):
        with open(self.log_path, encoding="utf-8", errors="replace") as f:
            return f.read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        shutil.rmtree(self._dir, ignore_errors=True)


@pytest.fixture(scope="session")
def workspace():
    d = tempfile.mkdtemp(prefix="toolexec-py-ws-")
    with open(os.path.join(d, "notes.txt"), "w", encoding="utf-8") as f:
        f.write("first line\nsecond line\n")
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="session")
def daemon(workspace):
    d = Daemon(workspace)
    yield d
    d.stop()


def memory_daemon(prefix, extra_config=lambda memories: ""):
    """A daemon of the example config plus memory_dir, so that every native tool
    (memory included) is registered, in a fresh workspace; for a fixture to
    `yield from`. ``extra_config(dir)`` is more config text, given a directory
    that lives as long as the daemon (e.g. a recording dir under it). Stopped
    and cleaned up after."""
    workspace = tempfile.mkdtemp(prefix=f"{prefix}-ws-")
    memories = tempfile.mkdtemp(prefix=f"{prefix}-mem-")
    config = os.path.join(memories, "toolexecd.textproto")
    with open(CONFIG, encoding="utf-8") as f, open(config, "w", encoding="utf-8") as out:
        out.write(f.read())
        out.write(f'memory_dir: "{memories}/store"\n')
        out.write(extra_config(memories))
    d = Daemon(workspace, config=config)
    try:
        yield d
    finally:
        d.stop()
        shutil.rmtree(workspace, ignore_errors=True)
        shutil.rmtree(memories, ignore_errors=True)


# ---- A recorded session (test_recording.py, test_transcript_schemas.py) ----------

FILES = {
    "a.txt": "alpha\nneedle here\n",
    "src/b.py": "print('needle')\n",
}

BATCHES = [
    [{"id": "v1", "name": "view_file", "args": {"file_path": "a.txt"}},
     {"id": "l1", "name": "list_directory", "args": {"directory_path": "."}},
     {"id": "g1", "name": "grep_search", "args": {"pattern": "needle", "output_mode": "content"}}],
    [{"id": "c1", "name": "create_file", "args": {"file_path": "new.txt", "contents": "hello\n"}}],
    # Calls of one batch run concurrently: what reads new.txt comes in the next.
    [{"id": "v2", "name": "view_file", "args": {"file_path": "new.txt"}},
     {"id": "r1", "name": "run_command", "args": {"command_line": "wc -l < a.txt"}},
     {"id": "s1", "name": "calculate_sum", "args": {"numbers": [1, 2, 3.5]}},
     {"id": "u1", "name": "no_such_tool", "args": {}}],
    [{"id": "q1", "name": "ask_question", "args": {"question": "ok?"}},
     {"id": "w1", "name": "get_weather", "args": {"city": "Paris"}}],
]


def write_files(directory, files):
    """Writes each {relative path: text} of `files` under `directory`."""
    for rel, text in files.items():
        path = os.path.join(directory, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)


def fill(directory):
    write_files(directory, FILES)


@pytest.fixture(scope="session")
def recorded():
    """A recorded session of BATCHES in ws1, and two fresh copies of its start:
    the results the client got and the session's export in every format."""
    from toolexec import Client
    root = tempfile.mkdtemp(prefix="toolexec-rec-")
    for ws in ("ws1", "ws2"):
        fill(os.path.join(root, ws))
    recordings = os.path.join(root, "recordings")
    config = os.path.join(root, "toolexecd.textproto")
    with open(CONFIG, encoding="utf-8") as f:
        text = f.read()
    with open(config, "w", encoding="utf-8") as f:
        f.write(text + f'\nrecording {{ dir: "{recordings}" }}\n')
    daemon = Daemon(root, config=config)
    try:
        with Client(daemon.address) as client:
            session = client.open_session("conv", workspaces=["ws1"], record=True)
            results = [session.run_batch(calls, split=False) for calls in BATCHES]
            exports = {fmt: session.export(fmt)
                       for fmt in (None, "openai", "anthropic", "gemini", "openai_responses")}
            path = session.info["recording"]
            session.close()
            yield {"root": root, "daemon": daemon, "results": results, "exports": exports,
                   "path": path, "session_id": session.session_id}
    finally:
        daemon.stop()
        shutil.rmtree(root, ignore_errors=True)


def cli_replay(address, path, workspace):
    """`toolexec replay PATH --workspace WORKSPACE --json` against the daemon at
    ``address``: (exit code, the report)."""
    if not os.access(TOOLEXEC_CLI, os.X_OK):
        pytest.fail(f"toolexec not found at {TOOLEXEC_CLI}: build it (scripts/build.sh toolexec)",
                    pytrace=False)
    run = subprocess.run(
        [TOOLEXEC_CLI, f"--target={address}", "replay", path, "--workspace", workspace, "--json"],
        capture_output=True, text=True, timeout=120)
    assert run.returncode in (0, 1), run.stderr
    return run.returncode, json.loads(run.stdout)


@pytest.fixture
def client(daemon):
    from toolexec import Client
    with Client(daemon.address) as c:
        yield c


def tool_use(id_, name, **input_):
    """An Anthropic tool_use content block, as a model sends it."""
    return {"type": "tool_use", "id": id_, "name": name, "input": input_}


def subprocess_env(**extra):
    """The environment for a child python that imports the same toolexec as the tests."""
    import toolexec
    root = os.path.dirname(os.path.dirname(os.path.abspath(toolexec.__file__)))
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path, **extra}


def eventually(predicate, timeout=20.0):
    """Whether ``predicate()`` becomes true within ``timeout`` seconds (polled)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


def process_running(text):
    """Whether a running process's command line contains ``text`` (read from /proc)."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmdline and int(pid) != os.getpid():
            return True
    return False
