#!/usr/bin/env python3
"""Runs the command blocks of README.md and deploy/README.md against the built binaries.

Usage: readme_commands_test.py TOOLEXECD TOOLEXEC [REPO_ROOT]

Every fenced block of the two READMEs must be classified in BLOCKS below (by its
first non-empty line): run here, checked statically, or skipped with its reason.
A block that is not classified, or a classification whose block is gone, fails
the test, so no block is skipped silently. The output a README shows is the
oracle: actual output is compared with it after NORMALISE (the one list of what
legitimately varies), and `...`/`…` in shown output stand for any text.

Each daemon runs on a unix socket in a temporary directory, with a temporary
workspace, so nothing here uses a fixed port.
"""

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

TOOLEXECD, TOOLEXEC = (os.path.abspath(p) for p in sys.argv[1:3])
REPO = os.path.abspath(sys.argv[3] if len(sys.argv) > 3 else
                       os.path.join(os.path.dirname(__file__), "..", ".."))
FAILURES = []

# What legitimately varies between the README and a run, in one place. Applied
# to the actual output (and to the README's shown output) before comparing.
NORMALISE = [
    (r'"(duration_ms|ms)":\s*[0-9.]+', r'"\1":"<n>"'),                # durations
    (r'"time":"\d{4}-\d\d-\d\dT[0-9:.]+Z"', '"time":"<time>"'),         # timestamps
    (r'"(trace_id|span_id|session_id|batch_id|request_id)":"[^"]*"', r'"\1":"<id>"'),  # ids
    (r'127\.0\.0\.1:\d+', '127.0.0.1:<port>'),                         # ports
    (r'/tmp/[^\s"\']+', '<tmp>'),                                      # temp paths
]
# and the order of a payload's keys (sort_payload_keys, below).


def sort_payload_keys(text):
    """A payload is a protobuf Struct, a map: its keys come in no fixed order."""
    out, pos = [], 0
    for m in re.finditer(r'"payload":\{', text):
        if m.start() < pos:
            continue
        depth, i, in_str = 0, m.end() - 1, False
        while i < len(text):
            c = text[i]
            if in_str:
                in_str = c != '"' or text[i - 1] == "\\"
            elif c == '"':
                in_str = True
            elif c in "{}":
                depth += 1 if c == "{" else -1
                if depth == 0:
                    break
            i += 1
        try:
            obj = json.loads(text[m.end() - 1:i + 1])
        except ValueError:
            continue
        out.append(text[pos:m.end() - 1] + json.dumps(obj, sort_keys=True, separators=(",", ":"),
                                                      ensure_ascii=False))
        pos = i + 1
    return "".join(out) + text[pos:]


def normalise(text):
    for pattern, repl in NORMALISE:
        text = re.sub(pattern, repl, text)
    return sort_payload_keys(text)


def fail(where, message):
    FAILURES.append(f"{where}: {message}")
    print(f"FAIL {where}: {message}", flush=True)


def shown_matches(shown, actual):
    """True when actual (one line) matches shown, where ... and … match any text."""
    parts = re.split(r'\.\.\.|…', normalise(shown))
    return re.fullmatch(".*?".join(re.escape(p) for p in parts), normalise(actual), re.S) is not None


# ---- fenced blocks --------------------------------------------------------------------

def fenced_blocks(path):
    """(first line number, language, lines) of each fenced block of a Markdown file."""
    lines = open(os.path.join(REPO, path), encoding="utf-8").read().split("\n")
    blocks, i = [], 0
    while i < len(lines):
        m = re.match(r'^\s*```(\S*)\s*$', lines[i])
        if not m:
            i += 1
            continue
        j = i + 1
        while not re.match(r'^\s*```\s*$', lines[j]):
            j += 1
        indent = len(lines[i]) - len(lines[i].lstrip())
        blocks.append((i + 1, m.group(1), [l[indent:] for l in lines[i + 1:j]]))
        i = j + 1
    return blocks


def split_command(line):
    """(command, expectation) of a README command line: `cmd   # comment`."""
    m = re.search(r'\s{2,}#\s?(.*)$', line)
    if m:
        return line[:m.start()].rstrip(), m.group(1)
    return line.rstrip(), ""


def command_lines(lines):
    """The block's lines with backslash continuations and quotes across lines joined,
    blanks and comments dropped."""
    out, cur = [], ""
    for l in lines:
        if l.rstrip().endswith("\\"):
            cur += l.rstrip()[:-1] + " "
            continue
        cur += l
        try:
            shlex.split(cur, comments=True)
        except ValueError:  # a quote open across the line break, as in a shell
            cur += "\n"
            continue
        if cur.strip() and not cur.lstrip().startswith("#"):
            out.append(cur.strip())
        cur = ""
    return out


# ---- daemons ----------------------------------------------------------------------------

class Daemon:
    """A toolexecd on a unix socket in a temporary directory; `args` are its extra flags."""

    def __init__(self, args, cwd, tmp):
        self.socket = os.path.join(tmp, "toolexecd.sock")
        self.target = "unix:" + self.socket
        self.log = open(os.path.join(tmp, "toolexecd.log"), "w+")
        self.proc = subprocess.Popen([TOOLEXECD, "--listen=" + self.target] + args, cwd=cwd,
                                     stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"toolexecd {args} exited {self.proc.returncode}: {self.logtext()}")
            if os.path.exists(self.socket) and subprocess.run(
                    [TOOLEXEC, "--target=" + self.target, "health"], capture_output=True).returncode == 0:
                return
            time.sleep(0.1)
        raise RuntimeError(f"toolexecd {args} did not become healthy: {self.logtext()}")

    def logtext(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()[-2000:]

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout=60)
        self.log.close()
        return rc


def run(argv, where, cwd, env=None, expect_rc=0):
    p = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
    if expect_rc is not None and p.returncode != expect_rc:
        fail(where, f"{shlex.join(argv)} exited {p.returncode}, want {expect_rc}\n"
                    f"stdout: {p.stdout[-1500:]}\nstderr: {p.stderr[-1500:]}")
    return p


def translate(cmd, daemon_workspace=None):
    """A README command line as argv for the binaries under test."""
    argv = shlex.split(cmd)
    if argv[0] == "build/toolexecd":
        return [TOOLEXECD] + argv[1:]
    if argv[0] == "build/toolexec":
        return [TOOLEXEC] + argv[1:]
    if argv[0] == "scripts/run.sh":  # what scripts/run.sh execs once it has built
        return [TOOLEXECD, "--workspace=" + daemon_workspace, "--example_tools"] + argv[1:]
    raise ValueError(f"no translation for {cmd!r}")


def payload_of(stdout):
    """The payload of the result `toolexec call` printed (one JSON result)."""
    return json.loads(stdout)["payload"]


# ---- the blocks run here -------------------------------------------------------------

def readme_flags(readme_lines):
    flags = set()
    for l in readme_lines:
        if l.startswith("| `--"):
            flags.update(re.findall(r'`(--[a-z_]+)`', l.split("|")[1]))
    return flags


def block_running_it(lines, where, tmp, readme_lines):
    """The "Running it" block: run.sh's daemon, --help, --version, --check_config."""
    for line in command_lines(lines):
        cmd, note = split_command(line)
        if cmd.startswith("scripts/run.sh"):
            ws = tempfile.mkdtemp(dir=tmp)
            # The README's fixed port becomes port 0 (NORMALISE's ports), reported in a file.
            addr_file = os.path.join(tmp, "address")
            argv = translate(cmd.replace("127.0.0.1:50051", "127.0.0.1:0"), ws) + \
                ["--address_file=" + addr_file]
            proc = subprocess.Popen(argv, cwd=ws, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                    text=True)
            deadline = time.time() + 30
            while not (os.path.exists(addr_file) and open(addr_file).read().strip()):
                if proc.poll() is not None or time.time() > deadline:
                    fail(where, f"{cmd}: did not start: {proc.communicate()[1][-1500:]}")
                    break
                time.sleep(0.1)
            else:
                addr = open(addr_file).read().strip()
                run([TOOLEXEC, "--target=" + addr, "health"], where + " (its health)", ws)
                proc.send_signal(signal.SIGTERM)
                _, err = proc.communicate(timeout=60)
                if proc.returncode != 0:
                    fail(where, f"{cmd}: exit {proc.returncode} on SIGTERM, README says 0")
            continue
        p = run(translate(cmd), where + f" `{cmd}`", REPO)
        if cmd.endswith("--help"):
            missing = sorted(f for f in readme_flags(readme_lines) if f not in p.stdout)
            if missing:
                fail(where, f"--help does not list the README's flags {missing}")
            if "default" not in p.stdout:
                fail(where, "--help shows no defaults")
        elif cmd.endswith("--version"):
            if not re.fullmatch(r'toolexecd \d+\.\d+\.\d+\S* \(commit \S+, \S+ build\)\n', p.stdout):
                fail(where, f"--version printed {p.stdout!r}, not version, commit and build type")
        elif "--check_config" in cmd:
            # The README: exit 0 and warnings for /workspace and the non-loopback listen.
            out = p.stdout + p.stderr
            for want in ("warning: workspace '/workspace'", "warning: refusing to listen on 0.0.0.0"):
                if want not in out:
                    fail(where, f"{cmd}: no {want!r} line: {out[-1500:]}")


def block_credentials(lines, where, tmp, _):
    """The CLI's credentials: a token file in $HOME against a daemon that requires it."""
    home = tempfile.mkdtemp(dir=tmp)
    token = "3b1f0c" + "ab" * 26 + "e9"
    with open(os.path.join(home, ".toolexec-token"), "w") as f:
        f.write(token + "\n")
    tokens = os.path.join(tmp, "tokens")
    with open(tokens, "w") as f:
        f.write(token + " gateway\n")
    os.chmod(tokens, 0o600)
    ws = tempfile.mkdtemp(dir=tmp)
    d = Daemon(["--workspace=" + ws, "--example_tools", "--token_file=" + tokens], ws, tempfile.mkdtemp(dir=tmp))
    try:
        env = dict(os.environ, HOME=home, TOOLEXEC_TARGET=d.target)
        env.pop("TOOLEXEC_TOKEN", None)
        for line in command_lines(lines):
            cmd, _ = split_command(line)
            if "--tls-ca" in cmd:
                continue  # needs a TLS daemon at tools.internal: SKIPPED below
            cmd = cmd.replace("~", home)
            p = run(translate(cmd), where + f" `{cmd}`", ws, env)
            if "get_weather" not in p.stdout:
                fail(where, f"{cmd}: no tools listed: {p.stdout[:300]}")
            # and without the token it is refused, as the README says
            run(translate(cmd.replace("--token-file " + home + "/.toolexec-token", "")),
                where + " (no token)", ws, env, expect_rc=3)
    finally:
        d.stop()


def block_cli(lines, where, tmp, blocks):
    """The toolexec CLI block, with calls.json from the next block and its shown output."""
    ws = tempfile.mkdtemp(dir=tmp)
    d = Daemon(["--workspace=" + ws, "--example_tools"], ws, tempfile.mkdtemp(dir=tmp))
    try:
        env = dict(os.environ, TOOLEXEC_TARGET=d.target)
        calls_json = next(b for b in blocks if b[1] == "json" and '"name": "wait"' in b[2][0])
        shown = next(b for b in blocks if b[2] and b[2][0].startswith('{"result":{"id":"1","name":"wait"'))
        with open(os.path.join(ws, "calls.json"), "w") as f:
            f.write("\n".join(calls_json[2]))
        for line in command_lines(lines):
            cmd, note = split_command(line)
            cmd = cmd.replace("unix:/run/toolexec.sock", d.target)  # the README's socket
            expect_rc = 1 if cmd.startswith("build/toolexec batch") else 0  # a call fails: exit 1
            p = run(translate(cmd), where + f" `{cmd}`", ws, env, expect_rc)
            if cmd.endswith("list") or " list " in cmd + " ":
                decls = [json.loads(l) for l in p.stdout.splitlines()] if "--format" not in cmd else []
                if "--format" in cmd:
                    tools = json.loads(p.stdout)
                    if not (isinstance(tools, list) and all(t.get("type") == "function" for t in tools)):
                        fail(where, f"{cmd}: not a provider tools array: {p.stdout[:300]}")
                elif not decls or any("name" not in t for t in decls):
                    fail(where, f"{cmd}: not one declaration per JSON line: {p.stdout[:300]}")
                elif "--set read_only" in cmd and any(t["name"] in ("run_command", "create_file") for t in decls):
                    fail(where, f"{cmd}: the read_only set lists a writing tool")
            elif cmd.startswith("build/toolexec call get_weather"):
                if payload_of(p.stdout).get("city") != "Paris":
                    fail(where, f"{cmd}: printed {p.stdout!r}")
            elif cmd.startswith("build/toolexec batch"):
                got = p.stdout.splitlines()
                want = [l for l in shown[2] if l.strip()]
                if len(got) != len(want):
                    fail(where, f"{cmd}: {len(got)} lines, the README shows {len(want)}:\n{p.stdout}")
                for i, (w, g) in enumerate(zip(want, got)):
                    if not shown_matches(w, g):
                        fail(where, f"{cmd}: line {i + 1} is\n  {g}\nthe README (README.md:{shown[0] + 1 + i}) shows\n  {w}")
            elif cmd.endswith("--version"):
                if not re.fullmatch(r'toolexec \d+\.\d+\.\d+\S* \(commit \S+, \S+ build\)\n', p.stdout):
                    fail(where, f"--version printed {p.stdout!r}")
    finally:
        rc = d.stop()
        if rc != 0:
            fail(where, f"toolexecd exited {rc} on SIGTERM, README says 0")


def block_command_tools(lines, where, tmp, _):
    """The command tools: run.sh with their config, then the calls and their shown payloads."""
    ws = tempfile.mkdtemp(dir=tmp)
    shutil.copytree(os.path.join(REPO, "examples/command_tools"), os.path.join(ws, "examples/command_tools"))
    cmds = [split_command(l) for l in command_lines(lines)]
    start = [c for c, _ in cmds if c.startswith("scripts/run.sh")]
    d = Daemon(translate(start[0], ws)[1:], ws, tempfile.mkdtemp(dir=tmp))
    try:
        env = dict(os.environ, TOOLEXEC_TARGET=d.target)
        for cmd, note in cmds:
            if cmd.startswith("scripts/run.sh"):
                continue
            p = run(translate(cmd), where + f" `{cmd}`", ws, env)
            m = re.match(r'payload (\{.*\})$', note)
            if not m:
                fail(where, f"{cmd}: no shown payload to compare with ({note!r})")
            elif p.returncode == 0 and payload_of(p.stdout) != json.loads(m.group(1)):
                fail(where, f"{cmd}: payload {p.stdout.strip()}, the README shows {m.group(1)}")
    finally:
        d.stop()


def block_config_excerpt(lines, where, tmp, _):
    """A config excerpt the README shows whole: it loads in --check_config (exit 0)."""
    ws = tempfile.mkdtemp(dir=tmp)
    shutil.copytree(os.path.join(REPO, "examples"), os.path.join(ws, "examples"))
    config = os.path.join(tmp, "excerpt.textproto")
    with open(config, "w") as f:
        # Directories the excerpt keeps under /var/lib and /var/log are made in the
        # temp folder, and the hook programs it names under /etc (checked at
        # start-up) are stand-ins there.
        text = "\n".join(lines).replace("/var/lib/toolexec/", tmp + "/var-lib/")
        os.makedirs(os.path.join(tmp, "var-log"), exist_ok=True)
        text = text.replace("/var/log/toolexec/", tmp + "/var-log/")
        for hook in set(re.findall(r'"/etc/toolexec/hooks/([^"/]+)"', text)):
            stand_in = os.path.join(tmp, "etc-hooks", hook)
            os.makedirs(os.path.dirname(stand_in), exist_ok=True)
            with open(stand_in, "w") as h:
                h.write("#!/bin/sh\necho '{\"decision\":\"allow\"}'\n")
            os.chmod(stand_in, 0o755)
        f.write(text.replace("/etc/toolexec/hooks/", tmp + "/etc-hooks/") + "\n")
    run([TOOLEXECD, "--config=" + config, "--workspace=" + ws, "--check_config"], where, ws)


def block_tool_source(lines, where, tmp, _):
    """A command tool's source as the README shows it runs and does what the README says."""
    ws = tempfile.mkdtemp(dir=tmp)
    if lines[0].startswith("# examples/command_tools/word_count.py"):
        script, interpreter = "word_count.py", "python3"
        stdin, want = '{"text": "one two\\nthree"}', {"words": 3, "lines": 2, "characters": 13}
    else:
        script, interpreter = "line_count.sh", "bash"
        with open(os.path.join(ws, "f.txt"), "w") as f:
            f.write("a\nb\nc\n")
        stdin, want = '{"path":"f.txt"}', None
    with open(os.path.join(ws, script), "w") as f:
        f.write("\n".join(lines) + "\n")
    p = subprocess.run([interpreter, script], cwd=ws, input=stdin, capture_output=True, text=True,
                       timeout=30)
    got = json.loads(p.stdout) if want is not None and p.returncode == 0 else p.stdout.strip()
    if p.returncode != 0 or got != (want if want is not None else "3"):
        fail(where, f"the README's {script} printed {p.stdout!r} (exit {p.returncode}, {p.stderr!r})")


# The comments on the Python round trip's print lines that describe rather than show
# the output; every other such comment is the line the print must write.
PY_DESCRIBED = {"the next user message", "one call: the payload, or an exception"}


def block_python_round_trip(lines, where, tmp, _):
    """The Python round trip, from a source tree as the README says (stubs generated,
    PYTHONPATH), against run.sh's daemon with examples/python/toolexecd.textproto."""
    pkg = os.path.join(tmp, "python")
    shutil.copytree(os.path.join(REPO, "client/python/toolexec"), os.path.join(pkg, "toolexec"))
    run(["/usr/bin/python3", os.path.join(REPO, "client/python/generate_stubs.py"),
         os.path.join(pkg, "toolexec", "_proto")], where + " (generate_stubs.py)", tmp)
    ws = tempfile.mkdtemp(dir=tmp)
    d = Daemon(["--workspace=" + ws, "--example_tools",
                "--config=" + os.path.join(REPO, "examples/python/toolexecd.textproto")],
               ws, tempfile.mkdtemp(dir=tmp))
    try:
        script = os.path.join(tmp, "round_trip.py")
        with open(script, "w") as f:
            f.write("\n".join(lines) + "\n")
        env = dict(os.environ, PYTHONPATH=pkg, TOOLEXEC_TARGET=d.target)
        env.pop("TOOLEXEC_TOKEN", None)
        p = run(["/usr/bin/python3", script], where, ws, env)
        out = p.stdout.splitlines()
        for l in lines:
            m = re.match(r'\s*print\(.*\)\s+#\s(.*)$', l)
            if m and m.group(1) not in PY_DESCRIBED and m.group(1) not in out:
                fail(where, f"`{l.strip()}`: the README shows {m.group(1)!r}, it printed:\n{p.stdout}")
    finally:
        d.stop()


# ---- static checks -------------------------------------------------------------------

def proto_names():
    services, fields = {}, set()
    pdir = os.path.join(REPO, "proto/toolexec/v1")
    for name in os.listdir(pdir):
        text = open(os.path.join(pdir, name)).read()
        for svc, body in re.findall(r'service\s+(\w+)\s*\{(.*?)\n\}', text, re.S):
            services["toolexec.v1." + svc] = set(re.findall(r'rpc\s+(\w+)', body))
        for f in re.findall(r'^\s*(?:repeated\s+|optional\s+)?[\w.<>, ]+\s+(\w+)\s*=\s*\d+', text, re.M):
            fields.add(f)
            fields.add(re.sub(r'_(\w)', lambda m: m.group(1).upper(), f))  # its JSON name
    services["grpc.health.v1.Health"] = {"Check", "Watch"}  # the standard health service
    return services, fields


def block_python_syntax(lines, where, tmp, _):
    """Python that needs the providers' SDKs and API keys to run: it must at least parse."""
    try:
        compile("\n".join(lines), where, "exec")
    except SyntaxError as e:
        fail(where, f"does not parse as Python: {e}")


def block_grpcurl(lines, where, tmp, _):
    """grpcurl is not packaged for Debian: check each -d is JSON and names real methods and fields."""
    services, fields = proto_names()
    for cmd in command_lines(lines):
        argv = shlex.split(cmd)
        assert argv[0] == "grpcurl"
        if "-d" in argv:
            body = json.loads(argv[argv.index("-d") + 1])

            def keys(v, under_args=False):
                if isinstance(v, dict):
                    for k, x in v.items():
                        if not under_args and k not in fields:
                            fail(where, f"{cmd[:60]}: field {k!r} is in no proto/toolexec/v1 message")
                        yield from keys(x, under_args or k == "args")
                elif isinstance(v, list):
                    for x in v:
                        yield from keys(x, under_args)
                return
                yield
            list(keys(body))
        method = argv[-1]
        if method == "list":
            continue
        svc, _, rpc = method.partition("/")
        if rpc not in services.get(svc, set()):
            fail(where, f"{method} is not an RPC of proto/toolexec/v1 (or health)")


def block_audit_line(lines, where, tmp, _):
    """The audit log line the README shows: the same call, denied by the same hook for the
    same caller, writes that line (its time and duration vary: NORMALISE)."""
    shown = json.loads("\n".join(lines))
    token = "77aa42" + "cd" * 26 + "0d"
    tokens, token_file = os.path.join(tmp, "audit-tokens"), os.path.join(tmp, "audit-token")
    with open(tokens, "w") as f:
        f.write(f"{token} {shown['identity']}\n")
    os.chmod(tokens, 0o600)
    with open(token_file, "w") as f:
        f.write(token + "\n")
    hook, audit = os.path.join(tmp, "no_force_push.sh"), os.path.join(tmp, "audit.jsonl")
    with open(hook, "w") as f:  # the hook protocol's pre_call answer the README shows
        f.write("cat >/dev/null\necho '{\"decision\":\"deny\",\"reason\":\"no force pushes\"}'\n")
    config = os.path.join(tmp, "audit.textproto")
    hook_name = shown["decided_by"].removeprefix("hook ")
    with open(config, "w") as f:
        f.write(f'hooks {{ name: "{hook_name}" event: HOOK_EVENT_PRE_CALL argv: "/bin/sh" '
                f'argv: "{hook}" timeout_ms: 2000 tools: "{shown["tool"]}" }}\n'
                f'audit_log: "{audit}"\n')
    ws = tempfile.mkdtemp(dir=tmp)
    d = Daemon(["--workspace=" + ws, "--config=" + config, "--token_file=" + tokens], ws,
               tempfile.mkdtemp(dir=tmp))
    try:
        run([TOOLEXEC, "--target=" + d.target, "--token-file", token_file, "call", shown["tool"],
             json.dumps(shown["args"])], where, ws, expect_rc=1)  # denied: a failed call
    finally:
        d.stop()
    with open(audit) as f:
        got = [json.loads(l) for l in f]
    if len(got) != 1:
        fail(where, f"{len(got)} audit lines, want 1: {got}")
        return
    want = json.loads(normalise(json.dumps(shown, separators=(",", ":"))))
    have = json.loads(normalise(json.dumps(got[0], separators=(",", ":"))))
    if have != want:
        fail(where, f"the audit line is\n  {json.dumps(got[0])}\nthe README shows\n  {json.dumps(shown)}")


def block_json(lines, where, tmp, _):
    """Shown JSON must be JSON."""
    try:
        json.loads("\n".join(lines))
    except ValueError as e:
        fail(where, f"not valid JSON: {e}")


def block_layout(lines, where, tmp, _):
    """Each folder the Layout names exists."""
    for l in lines:
        m = re.match(r'^(\S+/)\s', l)
        if m and not os.path.isdir(os.path.join(REPO, m.group(1))):
            fail(where, f"the Layout names {m.group(1)}, which is not a folder")


# ---- the classification: every fenced block, by its first non-empty line -------------

BLOCKS = {
    "README.md": [
        # scripts/run.sh builds (the binaries under test are given), scripts/test.sh runs this test.
        ("scripts/run.sh     # set up", "SKIP: builds the project; its daemon is run in the next block"),
        ("scripts/run.sh --listen=127.0.0.1:50051", block_running_it),
        ("# token                            name", "NOT A COMMAND: the token file's format"),
        ("build/toolexec --token-file", block_credentials),  # its --tls-* line: SKIP, needs a TLS daemon at tools.internal
        ("grpcurl -plaintext 127.0.0.1:50051 list", block_grpcurl),  # grpcurl: not in Debian; static check
        ("build/toolexec list ", block_cli),
        ('[{"id": "1", "name": "wait"', block_json),  # calls.json, run by block_cli
        ('{"result":{"id":"1","name":"wait"', "CHECKED by block_cli: the batch's shown output"),
        ("# `client` is a toolexec.Client", block_python_syntax),  # the provider loops: need SDKs and keys
        ("scripts/setup.sh python", "SKIP: installs packages and builds; scripts/test_python.sh does the same"),
        ("import toolexec", block_python_round_trip),
        ('client = toolexec.Client("toolexecd:50051"', "SKIP: needs a TLS daemon at toolexecd:50051"),
        ("mcp_servers {", "SKIP: starts npx servers and a remote URL; tests/mcp covers the fields"),
        ("policy {", block_config_excerpt),
        ("pre_call stdin:", "NOT A COMMAND: the hook protocol's messages"),
        ("hooks {", block_config_excerpt),  # its hook under /etc: a stand-in in the temp folder
        ('{"time":"2026-12-03T18:30:00.123Z"', block_audit_line),
        ("class GetWeatherTool final", "NOT A COMMAND: C++"),
        ("auto daemon = toolexec::Daemon::Create", "NOT A COMMAND: C++"),
        ("command_tools {", block_config_excerpt),
        ("checkpoints {", block_config_excerpt),
        ("$ toolexec --session=$S call run_command", "SKIP: a session ($S) of a daemon with checkpoints on; "
         "client/python/tests/test_checkpoints.py runs these commands"),
        ("recording {", block_config_excerpt),
        ("toolexec export SESSION", "SKIP: needs a recorded session; client/python/tests/test_recording.py "
         "runs these two commands (test_the_cli_exports_what_the_client_exports) and replay"),
        ("# examples/command_tools/word_count.py", block_tool_source),  # the file, shortened
        ("# examples/command_tools/line_count.sh", block_tool_source),
        ("scripts/run.sh --config=examples/command_tools", block_command_tools),
        ('{"mcpServers": {"toolexec": {"command"', block_json),
        ('{"mcpServers": {"toolexec": {"type": "http"', block_json),
        ("proto/toolexec/v1/   the wire contract", block_layout),
        ("scripts/fuzz.sh [seconds]", "SKIP: clang sanitizer builds, minutes each; scripts/test.sh runs them"),
    ],
    "deploy/README.md": [
        ("t=$(openssl rand -hex 32)", "SKIP: kubectl, docker and sudo chown; deploy_check covers the files"),
    ],
}


def main():
    tmp = tempfile.mkdtemp(prefix="toolexec-docs-")
    try:
        for path, classes in BLOCKS.items():
            blocks = fenced_blocks(path)
            readme_lines = open(os.path.join(REPO, path), encoding="utf-8").read().split("\n")
            used = set()
            for line_no, lang, lines in blocks:
                first = next((l for l in lines if l.strip()), "")
                matches = [i for i, (key, _) in enumerate(classes) if first.startswith(key)]
                where = f"{path}:{line_no}"
                if len(matches) != 1:
                    fail(where, f"block {first[:50]!r} matches {len(matches)} entries of BLOCKS: "
                                "classify it (run, check or skip with a reason)")
                    continue
                used.add(matches[0])
                action = classes[matches[0]][1]
                if isinstance(action, str):
                    print(f"{action.split(':')[0]:<13} {where} {first[:50]}")
                    continue
                print(f"RUN           {where} {first[:50]}", flush=True)
                try:
                    action(lines, where, tmp, blocks if action is block_cli else readme_lines)
                except Exception as e:  # a daemon that would not start, a bad block
                    fail(where, f"{type(e).__name__}: {e}")
            for i, (key, _) in enumerate(classes):
                if i not in used:
                    fail(path, f"BLOCKS lists {key!r}, which no block of it starts with")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if FAILURES:
        print(f"\n{len(FAILURES)} failure(s)")
        return 1
    print("\nOK: every block ran, was checked, or is skipped for its stated reason")
    return 0


if __name__ == "__main__":
    sys.exit(main())
