#!/usr/bin/env bash
# Checks the Dockerfile and deploy/ as far as that is possible without Docker or
# a cluster, and exits non-zero, naming every problem, if anything is wrong:
#   - every YAML file under deploy/ parses (duplicate keys included);
#   - the Kubernetes manifests have the expected kinds and fields, and the
#     ConfigMap's config equals deploy/config/toolexecd.textproto byte for byte;
#   - docker-compose.yml has both services, the shared workspace volume, the
#     health check, and does not publish toolexecd's port;
#   - the Dockerfile has its stages and instructions and calls scripts/setup.sh
#     and scripts/build.sh, so CI exercises what the image build does;
#   - the systemd unit has its key lines (and passes systemd-analyze verify when
#     that works offline here);
#   - the JSON and text proto example configs say the same thing, every stop
#     timeout is longer than the configured drain grace, and deploy/README.md
#     mentions every file;
#   - the token Secret, its mount and the --token_file flag that names it agree
#     (Kubernetes, compose, the image's CMD), nothing passes
#     --insecure_allow_unauthenticated, and the NetworkPolicy selects toolexecd's
#     pods and admits only the gateway's pods to port 50051;
#   - each example config loads in `toolexecd --check_config` with the Secret's
#     token file on 0.0.0.0:50051, and a broken one is refused.
# ctest runs it as deploy_check (tests/deploy/CMakeLists.txt).
#
#   scripts/check_deploy.sh PATH/TO/toolexecd
#
# Needs Debian's /usr/bin/python3 with python3-yaml (scripts/setup.sh installs
# it); a python3 earlier on PATH (pyenv, venv) is deliberately not used.
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 PATH/TO/toolexecd" >&2
  exit 2
fi
root="$(cd "$(dirname "$0")/.." && pwd)"
toolexecd=$1
PY=/usr/bin/python3

failures=0
fail() { echo "check_deploy: FAIL: $*" >&2; failures=$((failures + 1)); }
# Indents a command's captured output under the failure it explains.
show() { if [ -n "$1" ]; then printf '%s\n' "$1" | sed 's/^/    /' >&2; else echo "    (no output)" >&2; fi; }

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# ---- structure: YAML, Kubernetes, compose, Dockerfile, systemd, configs -------
if [ ! -x "$PY" ]; then
  fail "$PY not found: install Debian's python3 (scripts/setup.sh does)"
elif ! "$PY" -c 'import yaml' 2>/dev/null; then
  fail "$PY cannot import yaml: install Debian's python3-yaml (apt-get install python3-yaml; scripts/setup.sh does)"
elif ! "$PY" - "$root" "$tmp" <<'PY'
import json
import os
import re
import sys

import yaml

root = sys.argv[1]
deploy = os.path.join(root, "deploy")
problems = []


def fail(where, what):
    problems.append(f"{os.path.relpath(where, root)}: {what}")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


# ---- YAML ---------------------------------------------------------------------
class StrictLoader(yaml.SafeLoader):
    """A SafeLoader that refuses duplicate mapping keys (PyYAML keeps the last)."""


def _construct_mapping(loader, node, deep=False):
    seen = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark)
        seen.add(key)
    return yaml.SafeLoader.construct_mapping(loader, node, deep)


StrictLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)

yaml_docs = {}  # path -> [documents]
for dirpath, dirnames, filenames in os.walk(deploy):
    dirnames.sort()
    for name in sorted(filenames):
        if not name.endswith((".yaml", ".yml")):
            continue
        path = os.path.join(dirpath, name)
        try:
            yaml_docs[path] = [d for d in yaml.load_all(read(path), Loader=StrictLoader)
                               if d is not None]
        except (yaml.YAMLError, UnicodeDecodeError) as e:
            fail(path, f"does not parse as YAML: {e}")
if not yaml_docs:
    fail(deploy, "no YAML files found")


# ---- the example configs ------------------------------------------------------
config_dir = os.path.join(deploy, "config")
textproto_path = os.path.join(config_dir, "toolexecd.textproto")
json_path = os.path.join(config_dir, "toolexecd.json")
config_files = set(os.listdir(config_dir)) if os.path.isdir(config_dir) else set()


def parse_textproto(text):
    """A small reader for the subset of text format the example uses: scalar
    fields, nested messages, # comments. Enough to compare with the JSON form;
    toolexecd --check_config is the real parser."""
    token_re = re.compile(r'\s+|#[^\n]*|("(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\')'
                          r'|([{}:;,])|([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)'
                          r'|([A-Za-z_][\w.]*)')
    tokens, pos = [], 0
    while pos < len(text):
        m = token_re.match(text, pos)
        if not m:
            raise ValueError(f"unexpected text at offset {pos}: {text[pos:pos + 20]!r}")
        pos = m.end()
        if m.group(1):
            tokens.append(("str", json.loads('"' + m.group(1)[1:-1] + '"')))
        elif m.group(2):
            tokens.append(("punct", m.group(2)))
        elif m.group(3):
            n = m.group(3)
            tokens.append(("num", float(n) if re.search(r"[.eE]", n) else int(n)))
        elif m.group(4):
            tokens.append(("ident", m.group(4)))
    i = 0

    def message(end):
        nonlocal i
        out = {}
        while True:
            if i >= len(tokens):
                if end is None:
                    return out
                raise ValueError("missing '}'")
            kind, val = tokens[i]
            if end and kind == "punct" and val == "}":
                i += 1
                return out
            if kind != "ident":
                raise ValueError(f"expected a field name, got {val!r}")
            name, i = val, i + 1
            if i < len(tokens) and tokens[i] == ("punct", ":"):
                i += 1
            if i >= len(tokens):
                raise ValueError(f"field {name} has no value")
            kind, val = tokens[i]
            i += 1
            if (kind, val) == ("punct", "{"):
                value = message("}")
            elif kind in ("str", "num"):
                value = val
                while kind == "str" and i < len(tokens) and tokens[i][0] == "str":
                    value += tokens[i][1]  # adjacent strings concatenate
                    i += 1
            elif kind == "ident":
                value = {"true": True, "True": True, "t": True,
                         "false": False, "False": False, "f": False}.get(val, val)
            else:
                raise ValueError(f"field {name}: unexpected {val!r}")
            if i < len(tokens) and tokens[i] in (("punct", ","), ("punct", ";")):
                i += 1
            if name in out:
                out[name] = (out[name] if isinstance(out[name], list) else [out[name]]) + [value]
            else:
                out[name] = value

    return message(None)


def snake(name):
    return re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), name)


def same_config(a, b, path="config"):
    """Compares a text-proto value with a proto3-JSON value: field names in
    either case, 64-bit integers as JSON strings, absent == default."""
    # A repeated field given once is one value in the text proto, a list in JSON.
    if isinstance(a, list) or isinstance(b, list):
        a = a if isinstance(a, list) else ([] if a is None else [a])
        b = b if isinstance(b, list) else ([] if b is None else [b])
        if len(a) != len(b):
            return [f"{path}: text proto has {len(a)} values, JSON has {len(b)}"]
        diffs = []
        for n, (x, y) in enumerate(zip(a, b)):
            diffs += same_config(x, y, f"{path}[{n}]")
        return diffs
    if isinstance(a, dict) or isinstance(b, dict):
        a = {snake(k): v for k, v in (a or {}).items()}
        b = {snake(k): v for k, v in (b or {}).items()}
        diffs = []
        for k in sorted(set(a) | set(b)):
            diffs += same_config(a.get(k), b.get(k), f"{path}.{k}")
        return diffs
    if isinstance(b, str) and isinstance(a, int) and not isinstance(a, bool) \
            and re.fullmatch(r"-?\d+", b):
        b = int(b)
    if a is None and b in (False, 0, "", [], None):
        return []
    if b is None and a in (False, 0, "", []):
        return []
    if a != b or type(a) is not type(b) and not (isinstance(a, (int, float)) and isinstance(b, (int, float))):
        return [f"{path}: text proto has {a!r}, JSON has {b!r}"]
    return []


textproto = None
drain_grace_s = 30.0  # the built-in default of limits.drain_grace_ms
if not os.path.isfile(textproto_path):
    fail(textproto_path, "missing")
else:
    try:
        textproto = parse_textproto(read(textproto_path))
    except ValueError as e:
        fail(textproto_path, f"check_deploy's small text proto reader cannot read it ({e}); "
                             "keep the example to plain fields or extend the reader")
if textproto is not None:
    if textproto.get("example_tools") is not False:
        fail(textproto_path, "set example_tools: false explicitly (the demo tools stay out of deployments)")
    for field in ("listen", "workspace"):
        if field not in textproto:
            fail(textproto_path, f"set {field} (the example documents it)")
    grace = (textproto.get("limits") or {}).get("drain_grace_ms") or 30000
    drain_grace_s = grace / 1000.0
if not os.path.isfile(json_path):
    fail(json_path, "missing")
else:
    try:
        config_json = json.loads(read(json_path))
    except ValueError as e:
        fail(json_path, f"is not valid JSON: {e}")
        config_json = None
    if config_json is not None and textproto is not None:
        for diff in same_config(textproto, config_json):
            fail(json_path, f"differs from toolexecd.textproto: {diff}")


def config_arg(args, where):
    """The file name in deploy/config/ that a --config=/etc/toolexec/NAME argument names."""
    for a in args or []:
        m = re.fullmatch(r"--config=/etc/toolexec/([^/]+)", str(a))
        if m:
            if m.group(1) not in config_files:
                fail(where, f"--config names {m.group(1)}, which is not in deploy/config/")
            return m.group(1)
    fail(where, "no --config=/etc/toolexec/<file> argument")
    return None


def duration_s(value):
    """Seconds in a compose ("1m30s") or systemd ("45", "45s", "1min 30s") duration."""
    if isinstance(value, (int, float)):
        return float(value)
    units = {"us": 1e-6, "ms": 1e-3, "s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600}
    total, text = 0.0, str(value).replace(" ", "")
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return float(text)
    parts = re.findall(r"(\d+(?:\.\d+)?)(us|ms|sec|min|s|m|h)", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"cannot read duration {value!r}")
    for n, u in parts:
        total += float(n) * units[u]
    return total


def stop_timeout_ok(value, where, what):
    try:
        seconds = duration_s(value)
    except ValueError as e:
        fail(where, str(e))
        return
    if seconds <= drain_grace_s:
        fail(where, f"{what} is {value}, not longer than the daemon's drain grace "
                    f"({drain_grace_s:g} s, limits.drain_grace_ms): SIGTERM could not drain")


# ---- Kubernetes -----------------------------------------------------------------
k8s_dir = os.path.join(deploy, "kubernetes")
objects = []  # (path, doc)
for path, docs in yaml_docs.items():
    if os.path.dirname(path) == k8s_dir:
        for d in docs:
            if not isinstance(d, dict):
                fail(path, "a document is not a mapping")
                continue
            for key in ("apiVersion", "kind"):
                if not d.get(key):
                    fail(path, f"a document has no {key}")
            if not (d.get("metadata") or {}).get("name"):
                fail(path, f"a {d.get('kind')} has no metadata.name")
            objects.append((path, d))


def one(kind, path_hint):
    found = [(p, d) for p, d in objects if d.get("kind") == kind]
    if not found:
        fail(os.path.join(k8s_dir, path_hint), f"no {kind} found under deploy/kubernetes/")
        return None, None
    if len(found) > 1:
        fail(found[1][0], f"more than one {kind}; the checks expect one")
    return found[0]


cm_path, cm = one("ConfigMap", "configmap.yaml")
cm_name, cm_keys = None, set()
if cm is not None:
    cm_name = cm["metadata"].get("name")
    data = cm.get("data") or {}
    cm_keys = set(data)
    if "toolexecd.textproto" not in data:
        fail(cm_path, "data has no toolexecd.textproto")
    for key, value in data.items():
        src = os.path.join(config_dir, key)
        if not os.path.isfile(src):
            fail(cm_path, f"data.{key} has no counterpart deploy/config/{key}")
            continue
        with open(src, "rb") as f:
            want = f.read()
        if str(value).encode("utf-8") != want:
            got = str(value).encode("utf-8")
            n = next((i for i in range(min(len(got), len(want))) if got[i] != want[i]),
                     min(len(got), len(want)))
            line = want[:n].count(b"\n") + 1
            fail(cm_path, f"data.{key} differs from deploy/config/{key} "
                          f"(first difference at byte {n}, line {line}; "
                          f"{len(got)} vs {len(want)} bytes): copy the file in again")

dep_path, dep = one("Deployment", "deployment.yaml")
if dep is not None:
    pod = ((dep.get("spec") or {}).get("template") or {}).get("spec") or {}
    containers = pod.get("containers") or []
    inits = pod.get("initContainers") or []
    pod_sc = pod.get("securityContext") or {}
    sidecar = next((c for c in containers + inits if c.get("name") == "toolexecd"), None)
    others = [c for c in containers if c.get("name") != "toolexecd"]
    volumes = {v.get("name"): v for v in pod.get("volumes") or []}
    grace = pod.get("terminationGracePeriodSeconds")
    if grace is None:
        fail(dep_path, "set terminationGracePeriodSeconds (the default 30 s is not longer than the drain grace)")
    else:
        stop_timeout_ok(grace, dep_path, "terminationGracePeriodSeconds")
    if not others:
        fail(dep_path, "the pod has no agent/model-gateway container beside toolexecd")
    if sidecar is None:
        fail(dep_path, "no container named toolexecd in containers or initContainers")
    else:
        if sidecar in inits and sidecar.get("restartPolicy") != "Always":
            fail(dep_path, "toolexecd is an init container without restartPolicy: Always (a native sidecar needs it)")
        cfg = config_arg(sidecar.get("args"), dep_path)
        if cfg and cm is not None and cfg not in cm_keys:
            fail(dep_path, f"--config names {cfg}, which is not a key of the ConfigMap")
        if not any(p.get("containerPort") == 50051 for p in sidecar.get("ports") or []):
            fail(dep_path, "toolexecd declares no containerPort 50051")
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            grpc = (sidecar.get(probe) or {}).get("grpc") or {}
            if grpc.get("port") != 50051:
                fail(dep_path, f"toolexecd {probe} is not a native gRPC probe on port 50051")
        res = sidecar.get("resources") or {}
        for part in ("requests", "limits"):
            if not res.get(part):
                fail(dep_path, f"toolexecd has no resources.{part}")
        sc = sidecar.get("securityContext") or {}
        if not (sc.get("runAsNonRoot", pod_sc.get("runAsNonRoot")) is True):
            fail(dep_path, "toolexecd must run with runAsNonRoot: true")
        uid = sc.get("runAsUser", pod_sc.get("runAsUser"))
        if uid is not None and uid != 10001:
            fail(dep_path, f"toolexecd runAsUser is {uid}, the image's toolexec user is 10001")
        if sc.get("readOnlyRootFilesystem") is not True:
            fail(dep_path, "toolexecd needs readOnlyRootFilesystem: true")
        if sc.get("allowPrivilegeEscalation") is not False:
            fail(dep_path, "toolexecd needs allowPrivilegeEscalation: false")
        if "ALL" not in ((sc.get("capabilities") or {}).get("drop") or []):
            fail(dep_path, "toolexecd must drop ALL capabilities")
        mounts = {m.get("mountPath"): m.get("name") for m in sidecar.get("volumeMounts") or []}
        ws = mounts.get("/workspace")
        if ws is None:
            fail(dep_path, "toolexecd does not mount a volume at /workspace")
        else:
            if "emptyDir" not in (volumes.get(ws) or {}):
                fail(dep_path, f"the workspace volume {ws!r} is not an emptyDir")
            if not any(ws in {m.get("name") for m in c.get("volumeMounts") or []} for c in others):
                fail(dep_path, f"no other container mounts the workspace volume {ws!r}: it is not shared")
        cfgvol = mounts.get("/etc/toolexec")
        if cfgvol is None:
            fail(dep_path, "toolexecd does not mount the config at /etc/toolexec")
        elif ((volumes.get(cfgvol) or {}).get("configMap") or {}).get("name") != cm_name:
            fail(dep_path, f"the /etc/toolexec volume {cfgvol!r} is not the ConfigMap {cm_name!r}")
    if not any(e.get("name") == "TOOLEXEC_TARGET" for c in others for e in c.get("env") or []):
        fail(dep_path, "the gateway container has no TOOLEXEC_TARGET")


# ---- authentication: the token Secret and the NetworkPolicy ------------------------
GATEWAY_LABELS = {"app.kubernetes.io/name": "model-gateway"}
TOKEN_FILE_FLAG = "--token_file="
INSECURE_FLAG = "--insecure_allow_unauthenticated"


def flag_value(args, prefix):
    """The value of the last `prefix`VALUE argument, or None."""
    values = [str(a)[len(prefix):] for a in args or [] if str(a).startswith(prefix)]
    return values[-1] if values else None


def token_file_tokens(text):
    """The tokens (first words) of a token file's lines "TOKEN [NAME [PROFILE]]";
    blank lines and # comments carry none."""
    return [line.split()[0] for line in str(text).splitlines()
            if line.strip() and not line.strip().startswith("#")]


def secret_data(secret):
    """A Secret's values as text: stringData as is, data base64-decoded."""
    import base64
    out = {}
    for key, value in (secret.get("data") or {}).items():
        try:
            out[key] = base64.b64decode(str(value), validate=True).decode("utf-8")
        except ValueError:
            out[key] = None
    out.update({k: str(v) for k, v in (secret.get("stringData") or {}).items()})
    return out


secret_path, secret = one("Secret", "secret.yaml")
secret_name, secret_values = None, {}
if secret is not None:
    secret_name = secret["metadata"].get("name")
    secret_values = secret_data(secret)
    if None in secret_values.values():
        fail(secret_path, "a data value is not valid base64 of UTF-8 text")
    tokens_text = secret_values.get("tokens")
    if not tokens_text or not token_file_tokens(tokens_text):
        fail(secret_path, "no key 'tokens' holding a token file (lines \"TOKEN [NAME [PROFILE]]\")")
    elif secret_values.get("token", "").strip() not in token_file_tokens(tokens_text):
        fail(secret_path, "the key 'token' (the gateway's) is not one of the tokens in 'tokens'")
    if tokens_text:
        # The shell part below loads every example config with this token file.
        fd = os.open(os.path.join(sys.argv[2], "secret_tokens"), os.O_WRONLY | os.O_CREAT, 0o600)
        with open(fd, "w", encoding="utf-8") as f:
            f.write(tokens_text)

if dep is not None and sidecar is not None:
    args = [str(a) for a in sidecar.get("args") or []]
    if INSECURE_FLAG in args:
        fail(dep_path, f"toolexecd passes {INSECURE_FLAG} although a token is configured")
    token_path = flag_value(args, TOKEN_FILE_FLAG)
    if token_path is None:
        fail(dep_path, f"toolexecd args have no {TOKEN_FILE_FLAG}<file in the token Secret>")
    else:
        # The volume mounted at the flag's directory must be the Secret, with the
        # key 'tokens' at the flag's file name.
        mount_dir, file_name = os.path.split(token_path)
        vol_name = next((m.get("name") for m in sidecar.get("volumeMounts") or []
                         if m.get("mountPath", "").rstrip("/") == mount_dir and not m.get("subPath")),
                        None)
        vol = (volumes.get(vol_name) or {}).get("secret") if vol_name else None
        if vol is None:
            fail(dep_path, f"{TOKEN_FILE_FLAG}{token_path}: no Secret volume is mounted at {mount_dir}")
        else:
            if vol.get("secretName") != secret_name:
                fail(dep_path, f"the volume at {mount_dir} is Secret {vol.get('secretName')!r}, "
                               f"not the token Secret {secret_name!r}")
            items = vol.get("items")
            key = (next((i.get("key") for i in items if i.get("path") == file_name), None)
                   if items else file_name)
            if key != "tokens":
                fail(dep_path, f"{TOKEN_FILE_FLAG}{token_path} is not the Secret's key 'tokens'")
            mode = vol.get("defaultMode")
            if mode is not None and mode & 0o007:
                fail(dep_path, f"the token Secret volume's defaultMode {mode:#o} lets any user read it")
    gateway_token = [e for c in others for e in c.get("env") or [] if e.get("name") == "TOOLEXEC_TOKEN"]
    ref = ((gateway_token[0].get("valueFrom") or {}).get("secretKeyRef") or {}) if gateway_token else {}
    if (ref.get("name"), ref.get("key")) != (secret_name, "token"):
        fail(dep_path, f"the gateway's TOOLEXEC_TOKEN does not come from the Secret {secret_name!r}, "
                       "key 'token'")

np_path, np = one("NetworkPolicy", "networkpolicy.yaml")
if np is not None:
    spec = np.get("spec") or {}
    selector = spec.get("podSelector") or {}
    pod_labels = ((dep or {}).get("spec") or {}).get("template", {}).get("metadata", {}).get("labels") or {}
    wanted = selector.get("matchLabels") or {}
    if selector.get("matchExpressions") or not wanted or \
            any(pod_labels.get(k) != v for k, v in wanted.items()):
        fail(np_path, f"spec.podSelector does not select toolexecd's pods by their labels {pod_labels}")
    if "Ingress" not in (spec.get("policyTypes") or []):
        fail(np_path, "policyTypes does not include Ingress")

    def admits_grpc(rule):
        ports = rule.get("ports")
        if not ports:
            return True  # no ports: every port
        for p in ports:
            if p.get("protocol", "TCP") != "TCP":
                continue
            port, end = p.get("port"), p.get("endPort")
            if port is None or port in (50051, "grpc") or \
                    (isinstance(port, int) and end is not None and port <= 50051 <= end):
                return True
        return False

    def gateway_only(peer):
        sel = peer.get("podSelector")
        return (set(peer) == {"podSelector"} and not (sel or {}).get("matchExpressions")
                and (sel or {}).get("matchLabels") == GATEWAY_LABELS)

    grpc_rules = [r for r in spec.get("ingress") or [] if admits_grpc(r)]
    if not grpc_rules:
        fail(np_path, "no ingress rule admits the gateway to port 50051")
    for r in grpc_rules:
        peers = r.get("from") or []
        if not peers or not all(gateway_only(p) for p in peers):
            fail(np_path, f"an ingress rule admits port 50051 from more than the gateway's pods "
                          f"({GATEWAY_LABELS}): {r}")


# ---- docker-compose ---------------------------------------------------------------
compose_path = os.path.join(deploy, "docker-compose.yml")
compose_docs = yaml_docs.get(compose_path)
if not os.path.isfile(compose_path):
    fail(compose_path, "missing")
elif compose_docs:
    compose = compose_docs[0] if isinstance(compose_docs[0], dict) else {}
    services = compose.get("services") or {}
    if "workspace" not in (compose.get("volumes") or {}):
        fail(compose_path, "no top-level named volume 'workspace'")

    def mounts_workspace(svc):
        for v in svc.get("volumes") or []:
            if isinstance(v, str) and v.split(":")[:2] == ["workspace", "/workspace"]:
                return True
            if isinstance(v, dict) and v.get("source") == "workspace" and v.get("target") == "/workspace":
                return True
        return False

    def env(svc):
        e = svc.get("environment") or {}
        if isinstance(e, list):
            e = dict(x.split("=", 1) if "=" in x else (x, None) for x in e)
        return e

    for name in ("toolexecd", "model-gateway"):
        if name not in services:
            fail(compose_path, f"no service {name!r}")
        elif not mounts_workspace(services[name]):
            fail(compose_path, f"service {name!r} does not mount the workspace volume at /workspace")
    t = services.get("toolexecd") or {}
    g = services.get("model-gateway") or {}
    if t:
        build = t.get("build") or {}
        ctx = os.path.normpath(os.path.join(deploy, build.get("context", "") if isinstance(build, dict) else str(build)))
        if ctx != os.path.normpath(root):
            fail(compose_path, "toolexecd build.context is not the repository root (..)")
        dockerfile = build.get("dockerfile", "Dockerfile") if isinstance(build, dict) else "Dockerfile"
        if not os.path.isfile(os.path.join(ctx, dockerfile)):
            fail(compose_path, f"toolexecd build: {dockerfile} not found in the context")
        if t.get("ports"):
            fail(compose_path, "toolexecd publishes ports: use expose only (only the gateway calls it)")
        if "50051" not in [str(p) for p in t.get("expose") or []]:
            fail(compose_path, "toolexecd does not expose 50051 on the compose network")
        test = (t.get("healthcheck") or {}).get("test") or []
        test = " ".join(test) if isinstance(test, list) else str(test)
        if not re.search(r"\btoolexec\s+health\b", test):
            fail(compose_path, "toolexecd healthcheck does not run `toolexec health`")
        command = t.get("command") or []
        if isinstance(command, str):
            command = command.split()
        config_arg(command, compose_path)
        compose_secret_files = {name: (spec or {}).get("file")
                                for name, spec in (compose.get("secrets") or {}).items()}

        def secret_targets(svc):
            """Where each of a service's secrets is mounted: target -> source."""
            out = {}
            for ref in svc.get("secrets") or []:
                source = ref if isinstance(ref, str) else (ref or {}).get("source")
                target = (ref or {}).get("target") if isinstance(ref, dict) else None
                target = target or source
                out[target if target.startswith("/") else "/run/secrets/" + target] = source
            return out

        if INSECURE_FLAG in [str(a) for a in command]:
            fail(compose_path, f"toolexecd passes {INSECURE_FLAG} although a token is configured")
        token_path = flag_value(command, TOKEN_FILE_FLAG)
        source = secret_targets(t).get(token_path)
        if token_path is None:
            fail(compose_path, f"toolexecd command has no {TOKEN_FILE_FLAG}<mounted secret>")
        elif source is None:
            fail(compose_path, f"{TOKEN_FILE_FLAG}{token_path}: no secret is mounted there")
        elif not compose_secret_files.get(source):
            fail(compose_path, f"secret {source!r} is not defined at the top level with a file")
        elif not re.fullmatch(r"\./secrets/[^/]+", compose_secret_files[source]):
            fail(compose_path, f"secret {source!r} is not a file under ./secrets/ (git- and docker-ignored)")
        if g and not any(compose_secret_files.get(src) for src in secret_targets(g).values()):
            fail(compose_path, "model-gateway is given no token secret")
        if not any(isinstance(v, str) and re.fullmatch(r"\./config:/etc/toolexec(:ro)?", v)
                   for v in t.get("volumes") or []):
            fail(compose_path, "toolexecd does not mount ./config at /etc/toolexec")
        if "stop_grace_period" not in t:
            fail(compose_path, "toolexecd has no stop_grace_period (Docker's 10 s default cuts the drain short)")
        else:
            stop_timeout_ok(t["stop_grace_period"], compose_path, "toolexecd stop_grace_period")
    if g:
        dep_on = g.get("depends_on") or {}
        if not (isinstance(dep_on, dict) and (dep_on.get("toolexecd") or {}).get("condition") == "service_healthy"):
            fail(compose_path, "model-gateway must depend_on toolexecd with condition: service_healthy")
        if env(g).get("TOOLEXEC_TARGET") != "toolexecd:50051":
            fail(compose_path, "model-gateway needs TOOLEXEC_TARGET=toolexecd:50051")
        if "${MODEL_GATEWAY_IMAGE" not in str(g.get("image", "")):
            fail(compose_path, "model-gateway image should come from ${MODEL_GATEWAY_IMAGE...}")


# ---- Dockerfile ---------------------------------------------------------------------
dockerfile_path = os.path.join(root, "Dockerfile")
if not os.path.isfile(dockerfile_path):
    fail(dockerfile_path, "missing")
else:
    logical, cur = [], ""
    for raw in read(dockerfile_path).splitlines():
        if re.match(r"\s*#", raw) or (not raw.strip() and not cur):
            continue  # comments, including those inside a continued instruction
        if raw.rstrip().endswith("\\"):
            cur += raw.rstrip()[:-1] + " "
            continue
        cur += raw
        if cur.strip():
            logical.append(cur.strip())
        cur = ""
    stages = []  # [(image, [(INSTR, args)])]
    for line in logical:
        instr, _, args = line.partition(" ")
        instr, args = instr.upper(), args.strip()
        if instr == "FROM":
            stages.append((args.split()[0] if args.split() else "", []))
        elif stages:
            stages[-1][1].append((instr, args))
        elif instr not in ("ARG",):
            fail(dockerfile_path, f"{instr} before the first FROM")

    def has(stage, instr, pattern):
        return any(i == instr and re.search(pattern, a) for i, a in stage[1])

    build = next((s for s in stages if s[0] == "debian:bookworm"), None)
    if build is None:
        fail(dockerfile_path, "no build stage FROM debian:bookworm")
    else:
        if not has(build, "RUN", r"(^|[\s/])scripts/setup\.sh(\s|&|;|$)"):
            fail(dockerfile_path, "the build stage does not RUN scripts/setup.sh")
        if not has(build, "RUN", r"scripts/build\.sh\s.*\btoolexecd\b") or \
                not has(build, "RUN", r"scripts/build\.sh\s.*\btoolexec\b(?!d)"):
            fail(dockerfile_path, "the build stage does not RUN scripts/build.sh toolexecd toolexec")
    if not stages or stages[-1][0] != "debian:bookworm-slim":
        fail(dockerfile_path, "the final stage is not FROM debian:bookworm-slim")
    else:
        final = stages[-1]
        if not has(final, "RUN", r"setup\.sh runtime"):
            fail(dockerfile_path, "the runtime stage does not RUN setup.sh runtime")
        if not has(final, "COPY", r"--from=\S+.*\btoolexecd\b") or \
                not has(final, "COPY", r"--from=\S+.*\btoolexec\b(?!d)"):
            fail(dockerfile_path, "the runtime stage does not COPY toolexecd and toolexec from the build stage")
        users = [a for i, a in final[1] if i == "USER"]
        if not users:
            fail(dockerfile_path, "the runtime stage sets no USER (it would run as root)")
        elif users[-1].split(":")[0] in ("root", "0"):
            fail(dockerfile_path, f"the runtime stage runs as USER {users[-1]}")
        if not any(i == "EXPOSE" and "50051" in re.split(r"[\s/]+", a) for i, a in final[1]):
            fail(dockerfile_path, "the runtime stage does not EXPOSE 50051")
        if not has(final, "HEALTHCHECK", r"CMD.*\btoolexec\"?,?\s*\"?health\b"):
            fail(dockerfile_path, "no HEALTHCHECK running `toolexec health`")
        if not has(final, "ENTRYPOINT", r"toolexecd"):
            fail(dockerfile_path, "the ENTRYPOINT does not run toolexecd")
        for flag in ("--listen=0.0.0.0:50051", "--workspace=/workspace"):
            if not has(final, "ENTRYPOINT", re.escape(flag)):
                fail(dockerfile_path, f"the ENTRYPOINT does not pass {flag}")
        cmds = [a for i, a in final[1] if i == "CMD"]
        cmd = []
        if cmds:
            try:
                cmd = json.loads(cmds[-1])
                config_arg(cmd, dockerfile_path)
            except ValueError:
                fail(dockerfile_path, "write CMD in JSON (exec) form so it appends to the ENTRYPOINT")
        if has(final, "ENTRYPOINT", re.escape(INSECURE_FLAG)) or INSECURE_FLAG in cmd:
            fail(dockerfile_path, f"the image passes {INSECURE_FLAG}: serve with a token by default")
        if not flag_value(cmd, TOKEN_FILE_FLAG):
            fail(dockerfile_path, f"CMD passes no {TOKEN_FILE_FLAG}: the image would serve 0.0.0.0 "
                                  "without auth (toolexecd refuses to)")
    for stage in stages:
        for instr, args in stage[1]:
            if instr not in ("COPY", "ADD") or "--from=" in args:
                continue
            words = [w for w in args.split() if not w.startswith("--")]
            for src in words[:-1]:
                if not os.path.exists(os.path.join(root, src)):
                    fail(dockerfile_path, f"{instr} source {src} does not exist in the repository")

dockerignore_path = os.path.join(root, ".dockerignore")
if not os.path.isfile(dockerignore_path):
    fail(dockerignore_path, "missing: the build context would carry build/ and node_modules")
else:
    patterns = [l.strip() for l in read(dockerignore_path).splitlines()
                if l.strip() and not l.strip().startswith("#")]
    for want in (".git", "node_modules", "build"):
        if not any(want in p and not p.startswith("!") for p in patterns):
            fail(dockerignore_path, f"does not exclude {want}")
    for keep in ("Dockerfile", "deploy", "scripts"):
        if any(p.strip("/*") == keep for p in patterns):
            fail(dockerignore_path, f"excludes {keep}, which the image build (and its tests) need")


# ---- systemd ----------------------------------------------------------------------------
unit_path = os.path.join(deploy, "systemd", "toolexecd.service")
if not os.path.isfile(unit_path):
    fail(unit_path, "missing")
else:
    sections, section = {}, None
    for raw in read(unit_path).splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            section = sections.setdefault(line[1:-1], {})
            continue
        key, sep, value = line.partition("=")
        if not sep or section is None:
            fail(unit_path, f"cannot read line {raw!r}")
            continue
        section.setdefault(key.strip(), []).append(value.strip())
    svc = sections.get("Service", {})

    def last(key):
        return (svc.get(key) or [None])[-1]

    exec_start = last("ExecStart") or ""
    if not re.match(r"[-@:+!]*/usr/local/bin/toolexecd(\s|$)", exec_start):
        fail(unit_path, "ExecStart does not run /usr/local/bin/toolexecd")
    config_arg(exec_start.split(), unit_path)
    if last("DynamicUser") not in ("yes", "true", "1") and last("User") in (None, "", "root", "0"):
        fail(unit_path, "set User=toolexec or DynamicUser=yes: never run as root")
    for key, want in (("ProtectSystem", "strict"), ("NoNewPrivileges", "yes"),
                      ("Restart", "on-failure"), ("KillSignal", "SIGTERM")):
        if last(key) != want:
            fail(unit_path, f"[Service] needs {key}={want} (has {last(key)})")
    if not svc.get("ReadWritePaths"):
        fail(unit_path, "[Service] has no ReadWritePaths for the workspace")
    m = re.search(r"--workspace=(\S+)", exec_start)
    if m:
        writable = [p.lstrip("-") for v in svc.get("ReadWritePaths", []) for p in v.split()]
        writable += ["/var/lib/" + p for v in svc.get("StateDirectory", []) for p in v.split()]
        if not any(m.group(1) == w or m.group(1).startswith(w.rstrip("/") + "/") for w in writable):
            fail(unit_path, f"the workspace {m.group(1)} is not writable under ProtectSystem=strict "
                            "(add it to ReadWritePaths)")
    if last("TimeoutStopSec") is None:
        fail(unit_path, "[Service] has no TimeoutStopSec")
    else:
        stop_timeout_ok(last("TimeoutStopSec"), unit_path, "TimeoutStopSec")
    if not sections.get("Install", {}).get("WantedBy"):
        fail(unit_path, "[Install] has no WantedBy")


# ---- README ----------------------------------------------------------------------------
readme_path = os.path.join(deploy, "README.md")
if not os.path.isfile(readme_path):
    fail(readme_path, "missing")
else:
    readme = read(readme_path)
    for dirpath, _, filenames in os.walk(deploy):
        for name in filenames:
            rel = os.path.relpath(os.path.join(dirpath, name), deploy)
            if rel.startswith("secrets" + os.sep):
                continue  # real tokens made for docker-compose.yml, git-ignored
            if rel != "README.md" and rel not in readme:
                fail(readme_path, f"does not mention {rel}")

for p in problems:
    print(f"check_deploy: FAIL: {p}", file=sys.stderr)
print(f"check_deploy: structure: {len(yaml_docs)} YAML files, "
      f"{len(objects)} Kubernetes objects, {len(problems)} problem(s)")
sys.exit(1 if problems else 0)
PY
then
  failures=$((failures + 1))
fi

# ---- the example configs load in toolexecd ----------------------------------------
# --workspace points at a scratch directory: the configs name /workspace, the
# container's path, which need not exist on the machine running this check.
if [ ! -x "$toolexecd" ]; then
  fail "toolexecd not found or not executable at '$toolexecd' (build it: scripts/build.sh toolexecd)"
else
  mkdir -p "$tmp/workspace"
  configs=()
  for f in "$root"/deploy/config/*; do
    case "$f" in
      *.textproto | *.txtpb | *.pbtxt | *.json) configs+=("$f") ;;
    esac
  done
  [ ${#configs[@]} -gt 0 ] || fail "no example configs in deploy/config/"
  # The configs listen on all interfaces, as the image's ENTRYPOINT does; a
  # token file makes that allowed. This check uses the Kubernetes Secret's
  # placeholder token file (written by the structure check), so the Secret's
  # format is checked by toolexecd's own reader too.
  tokens="$tmp/secret_tokens"
  [ -f "$tokens" ] || fail "no token file from deploy/kubernetes/secret.yaml to load the configs with"
  for f in "${configs[@]}"; do
    rc=0
    out="$("$toolexecd" --check_config --config="$f" --workspace="$tmp/workspace" \
      --listen=0.0.0.0:50051 --token_file="$tokens" 2>&1)" || rc=$?
    if [ "$rc" -ne 0 ]; then
      fail "toolexecd --check_config rejects ${f#"$root"/} (exit $rc):"
      show "$out"
    elif grep -q '^warning:' <<<"$out"; then
      fail "toolexecd --check_config warns about ${f#"$root"/} as deployed:"
      show "$out"
    else
      echo "check_deploy: ${f#"$root"/} loads"
    fi
    # The "supervised" profile promises that every command and write waits for
    # a yes: each tool the config registers is either one that changes nothing
    # (listed here) or named by an ask rule of the profile.
    case "$f" in
      *.textproto)
        asks="$(sed -n '/name: "supervised"/,/^  }/p' "$f" |
          sed -n 's/.*tool: "\([^"]*\)" decision: DECISION_ASK.*/\1/p')"
        tools="$(sed -n 's/^config OK: [0-9]* tools (\([^)]*\)).*/\1/p' <<<"$out" | tr -d ' ' | tr ',' ' ')"
        [ -n "$tools" ] || fail "no tool list in --check_config's answer for ${f#"$root"/}"
        for t in $tools; do
          case " view_file list_directory find_file search_directory grep_search finish exit_loop load_artifacts command_status kill_command " in
            *" $t "*) continue ;;
          esac
          grep -qxF "$t" <<<"$asks" ||
            fail "${f#"$root"/}: the supervised profile does not ask before $t"
        done
        ;;
    esac
  done
  # A broken config must be refused, or the checks above prove nothing.
  printf 'no_such_field: 1\n' >"$tmp/bad.textproto"
  printf '{"noSuchField": 1}\n' >"$tmp/bad.json"
  for f in "$tmp/bad.textproto" "$tmp/bad.json"; do
    rc=0
    out="$("$toolexecd" --check_config --config="$f" --workspace="$tmp/workspace" \
      --insecure_allow_unauthenticated 2>&1)" || rc=$?
    if [ "$rc" -ne 2 ]; then
      fail "toolexecd --check_config accepted or crashed on ${f##*/}, a config with an unknown field (exit $rc, expected 2):"
      show "$out"
    fi
  done
fi

# ---- systemd-analyze verify, where it works offline ----------------------------------
# It wants ExecStart's binary to exist, so a copy of the unit points at the
# toolexecd under test. A probe unit first tells whether verify works here at all
# (it may not in a container without systemd's directories).
if command -v systemd-analyze >/dev/null 2>&1 && [ -x "$toolexecd" ]; then
  mkdir -p "$tmp/probe" "$tmp/unit"
  printf '[Unit]\nDescription=probe\n[Service]\nType=exec\nExecStart=/bin/true\n' >"$tmp/probe/probe.service"
  if probe="$(systemd-analyze verify --man=no "$tmp/probe/probe.service" 2>&1)" && [ -z "$probe" ]; then
    abs="$(cd "$(dirname "$toolexecd")" && pwd)/$(basename "$toolexecd")"
    sed "s#/usr/local/bin/toolexecd#$abs#g" "$root/deploy/systemd/toolexecd.service" \
      >"$tmp/unit/toolexecd.service"
    rc=0
    out="$(systemd-analyze verify --man=no "$tmp/unit/toolexecd.service" 2>&1)" || rc=$?
    # Only what concerns our unit: warnings about the host's own units are not ours.
    ours="$(printf '%s\n' "$out" | grep -F 'toolexecd.service' || true)"
    if [ "$rc" -ne 0 ] || [ -n "$ours" ]; then
      fail "systemd-analyze verify deploy/systemd/toolexecd.service (exit $rc):"
      show "$out"
    else
      echo "check_deploy: systemd-analyze verify passed"
    fi
  else
    echo "check_deploy: systemd-analyze verify does not work offline here; checked the unit's key lines only"
  fi
elif [ -x "$toolexecd" ]; then
  echo "check_deploy: systemd-analyze not available; checked the unit's key lines only"
else
  echo "check_deploy: no toolexecd to point the unit at; skipped systemd-analyze verify"
fi

if [ "$failures" -gt 0 ]; then
  echo "check_deploy: FAILED ($failures failing check group(s); see above)" >&2
  exit 1
fi
echo "check_deploy: OK"
