#!/usr/bin/env python3
"""Generates the toolexec Python client's gRPC stubs from the repository's .proto files.

    python3 client/python/generate_stubs.py            # into client/python/toolexec/_proto
    python3 client/python/generate_stubs.py OUT_DIR    # into OUT_DIR (setup.py: the build dir)

Uses the C++ protoc (Debian: protobuf-compiler) and grpc_python_plugin (Debian:
protobuf-compiler-grpc), the versions that match Debian's python3-protobuf and
python3-grpcio. The modules land under ``toolexec/_proto/`` with their imports
rewritten to that package, so neither ``toolexec.v1`` (protoc's import path)
nor ``grpc.health.v1`` (which would shadow the ``grpc`` package) is imported
as a top-level name.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO_FILES = ("toolexec/v1/toolexec.proto", "grpc/health/v1/health.proto")
PACKAGE = "toolexec._proto"
# protoc writes `from toolexec.v1 import toolexec_pb2` and
# `from grpc.health.v1 import health_pb2`; both become `from toolexec._proto.<pkg> import`.
_IMPORT = re.compile(r"^from ((?:toolexec|grpc\.health)\.v1) import (\w+_pb2)\b", re.M)


def proto_dir():
    """The repository's proto/ directory ($TOOLEXEC_PROTO_DIR overrides)."""
    d = os.environ.get("TOOLEXEC_PROTO_DIR") or os.path.join(HERE, "..", "..", "proto")
    d = os.path.abspath(d)
    missing = [p for p in PROTO_FILES if not os.path.isfile(os.path.join(d, p))]
    if missing:
        raise SystemExit(f"generate_stubs: {', '.join(missing)} not found under {d}; "
                         "build from a toolexec checkout or set TOOLEXEC_PROTO_DIR")
    return d


def _tool(name, package):
    path = shutil.which(name)
    if path is None:
        raise SystemExit(f"generate_stubs: {name} not found on PATH; install the Debian "
                         f"package {package} (scripts/setup.sh does)")
    return path


def generate(out_dir):
    """Writes the generated package into out_dir (the toolexec/_proto directory)."""
    protoc = _tool("protoc", "protobuf-compiler")
    plugin = _tool("grpc_python_plugin", "protobuf-compiler-grpc")
    src = proto_dir()
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([protoc, f"--proto_path={src}", f"--python_out={tmp}",
                        f"--grpc_python_out={tmp}", f"--plugin=protoc-gen-grpc_python={plugin}",
                        *(os.path.join(src, p) for p in PROTO_FILES)], check=True)
        if os.path.isdir(out_dir):
            shutil.rmtree(out_dir)
        for root, _, files in os.walk(tmp):
            rel = os.path.relpath(root, tmp)
            dest = os.path.normpath(os.path.join(out_dir, rel))
            os.makedirs(dest, exist_ok=True)
            with open(os.path.join(dest, "__init__.py"), "w", encoding="utf-8") as f:
                f.write("")
            for name in files:
                with open(os.path.join(root, name), encoding="utf-8") as f:
                    text = f.read()
                text = _IMPORT.sub(rf"from {PACKAGE}.\1 import \2", text)
                leftover = re.search(r"^from (toolexec|grpc\.health)\.v1 import", text, re.M)
                if leftover:
                    raise SystemExit(f"generate_stubs: could not rewrite an import in {name}")
                with open(os.path.join(dest, name), "w", encoding="utf-8") as f:
                    f.write(text)


def main(argv):
    if len(argv) > 2:
        raise SystemExit(__doc__)
    out = argv[1] if len(argv) == 2 else os.path.join(HERE, "toolexec", "_proto")
    generate(out)
    print(f"generate_stubs: wrote {out}")


if __name__ == "__main__":
    main(sys.argv)
