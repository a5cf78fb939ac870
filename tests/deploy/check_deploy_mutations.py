#!/usr/bin/python3
"""scripts/check_deploy.sh catches what would let an unauthenticated caller in.

Copies the Dockerfile, .dockerignore, deploy/ and the check into a scratch
tree, breaks one thing at a time (a NetworkPolicy that admits everyone, the
token Secret not mounted, --insecure_allow_unauthenticated back, ...) and
expects the check's structure part to name that problem; the unbroken copy
must have none. Only the structure part is judged, so no toolexecd is needed.

  tests/deploy/check_deploy_mutations.py
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

# (name, file, old text, new text, what the check must say)
MUTATIONS = [
    ("policy admits any address", "deploy/kubernetes/networkpolicy.yaml",
     "    - from:\n", "    - from:\n        - ipBlock:\n            cidr: 0.0.0.0/0\n",
     "admits port 50051 from more than the gateway's pods"),
    ("policy admits every pod", "deploy/kubernetes/networkpolicy.yaml",
     "              app.kubernetes.io/name: model-gateway\n",
     "              app.kubernetes.io/part-of: agent\n",
     "admits port 50051 from more than the gateway's pods"),
    ("policy rule without peers", "deploy/kubernetes/networkpolicy.yaml",
     "    - from:\n        - podSelector:\n            matchLabels:\n"
     "              app.kubernetes.io/name: model-gateway\n      ports:\n",
     "    - ports:\n",
     "admits port 50051 from more than the gateway's pods"),
    ("policy selects other pods", "deploy/kubernetes/networkpolicy.yaml",
     "  podSelector:\n    matchLabels:\n      app.kubernetes.io/name: agent",
     "  podSelector:\n    matchLabels:\n      app.kubernetes.io/name: toolexecd",
     "does not select toolexecd's pods"),
    ("policy has no Ingress type", "deploy/kubernetes/networkpolicy.yaml",
     "    - Ingress\n", "    - Egress\n", "policyTypes does not include Ingress"),
    ("token file not on the Secret mount", "deploy/kubernetes/deployment.yaml",
     "--token_file=/run/secrets/toolexec/tokens", "--token_file=/etc/toolexec/tokens",
     "no Secret volume is mounted at /etc/toolexec"),
    ("token file names the wrong key", "deploy/kubernetes/deployment.yaml",
     "                path: tokens\n", "                path: other\n",
     "is not the Secret's key 'tokens'"),
    ("no --token_file in Kubernetes", "deploy/kubernetes/deployment.yaml",
     ',\n                 "--token_file=/run/secrets/toolexec/tokens"', "",
     "toolexecd args have no --token_file="),
    ("insecure flag in Kubernetes", "deploy/kubernetes/deployment.yaml",
     '"--token_file=/run/secrets/toolexec/tokens"',
     '"--token_file=/run/secrets/toolexec/tokens", "--insecure_allow_unauthenticated"',
     "passes --insecure_allow_unauthenticated although a token is configured"),
    ("world-readable token volume", "deploy/kubernetes/deployment.yaml",
     "defaultMode: 0440", "defaultMode: 0444", "lets any user read it"),
    ("gateway token from another key", "deploy/kubernetes/deployment.yaml",
     "                  key: token\n", "                  key: tokens\n",
     "the gateway's TOOLEXEC_TOKEN does not come from the Secret"),
    ("gateway token not in the token file", "deploy/kubernetes/secret.yaml",
     '  token: "REPLACE-ME', '  token: "OTHER-', "is not one of the tokens in 'tokens'"),
    ("compose token file not mounted", "deploy/docker-compose.yml",
     "        target: /run/secrets/toolexec/tokens\n", "        target: /run/secrets/elsewhere\n",
     "no secret is mounted there"),
    ("compose secret outside ./secrets", "deploy/docker-compose.yml",
     "file: ./secrets/toolexecd_tokens", "file: ./config/toolexecd_tokens",
     "is not a file under ./secrets/"),
    ("compose gateway without a token", "deploy/docker-compose.yml",
     "    secrets:\n      - toolexec_token\n", "", "model-gateway is given no token secret"),
    ("image insecure again", "Dockerfile",
     '"--workspace=/workspace"]', '"--workspace=/workspace", "--insecure_allow_unauthenticated"]',
     "the image passes --insecure_allow_unauthenticated"),
    ("image without a token file", "Dockerfile",
     ', "--token_file=/run/secrets/toolexec/tokens"]', "]", "CMD passes no --token_file="),
]


def copy_tree(dest):
    for name in ("Dockerfile", ".dockerignore"):
        shutil.copy(os.path.join(ROOT, name), os.path.join(dest, name))
    shutil.copytree(os.path.join(ROOT, "deploy"), os.path.join(dest, "deploy"),
                    ignore=shutil.ignore_patterns("secrets"))
    os.makedirs(os.path.join(dest, "scripts"))
    for name in ("check_deploy.sh", "setup.sh"):  # setup.sh: the Dockerfile COPYs it
        shutil.copy(os.path.join(ROOT, "scripts", name), os.path.join(dest, "scripts", name))


def structure_problems(tree):
    """The structure part's problems, as the lines the check printed."""
    proc = subprocess.run(["bash", os.path.join(tree, "scripts", "check_deploy.sh"),
                           "/nonexistent/toolexecd"], capture_output=True, text=True, timeout=60)
    if not re.search(r"^check_deploy: structure: .* (\d+) problem\(s\)$", proc.stdout, re.M):
        sys.exit(f"check_deploy printed no structure summary:\n{proc.stdout}\n{proc.stderr}")
    return [l for l in proc.stderr.splitlines()
            if l.startswith("check_deploy: FAIL: ") and "toolexecd not found" not in l]


def main():
    failures = 0
    with tempfile.TemporaryDirectory(prefix="check-deploy-mut-") as scratch:
        base = os.path.join(scratch, "base")
        os.makedirs(base)
        copy_tree(base)
        problems = structure_problems(base)
        if problems:
            print("FAIL: the unbroken deploy files have problems:\n  " + "\n  ".join(problems))
            failures += 1
        for name, path, old, new, expected in MUTATIONS:
            tree = os.path.join(scratch, re.sub(r"\W+", "-", name))
            os.makedirs(tree)
            copy_tree(tree)
            target = os.path.join(tree, path)
            with open(target, encoding="utf-8") as f:
                text = f.read()
            if text.count(old) != 1:
                print(f"FAIL: {name}: {path} does not contain the text to break exactly once: {old!r}")
                failures += 1
                continue
            with open(target, "w", encoding="utf-8") as f:
                f.write(text.replace(old, new))
            problems = structure_problems(tree)
            if any(expected in p for p in problems):
                print(f"ok: {name}")
            else:
                print(f"FAIL: {name}: the check did not say {expected!r}; it said:\n  " +
                      ("\n  ".join(problems) or "(nothing)"))
                failures += 1
    print(f"{len(MUTATIONS)} mutations, {failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
