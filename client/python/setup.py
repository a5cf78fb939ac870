"""Installs the toolexec Python client: ``pip install ./client/python``.

The gRPC stubs are generated while building, from the repository's proto/
(generate_stubs.py: Debian's protoc and grpc_python_plugin), so they always
match the daemon's contract. There is no pyproject.toml on purpose: with one,
pip would build in an isolated environment and fetch setuptools from an index;
without it, Debian's pip builds with the setuptools already installed, offline.
"""

import os
import sys

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.develop import develop

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import generate_stubs  # noqa: E402


class BuildPyWithStubs(build_py):
    def run(self):
        super().run()
        generate_stubs.generate(os.path.join(self.build_lib, "toolexec", "_proto"))


class DevelopWithStubs(develop):  # pip install -e: the stubs go into the source tree
    def run(self):
        generate_stubs.generate(os.path.join(generate_stubs.HERE, "toolexec", "_proto"))
        super().run()


setup(
    name="toolexec",
    version="0.1.0",
    description="Python client for toolexecd, the tool-execution daemon for LLM agents",
    packages=["toolexec"],
    python_requires=">=3.9",
    # Debian bookworm: python3-grpcio 1.51, python3-protobuf 3.21 (its Python module is 4.21).
    install_requires=["grpcio>=1.51", "protobuf>=4.21"],
    cmdclass={"build_py": BuildPyWithStubs, "develop": DevelopWithStubs},
)
