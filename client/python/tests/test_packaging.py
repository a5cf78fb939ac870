"""The package as installed, and the stubs it is built with."""

import os
import subprocess
import sys

import toolexec
from conftest import REPO, subprocess_env

HERE = os.path.join(REPO, "client", "python")


def test_tests_run_against_the_installed_package_when_asked():
    # scripts/test_python.sh installs with pip into a virtualenv and sets this.
    location = os.path.dirname(os.path.abspath(toolexec.__file__))
    if os.environ.get("TOOLEXEC_EXPECT_INSTALLED") == "1":
        assert not location.startswith(HERE + os.sep), location
        assert "site-packages" in location
    else:
        assert os.path.isdir(location)


def test_generated_stubs_live_under_the_package(tmp_path):
    out = tmp_path / "_proto"
    subprocess.run([sys.executable, os.path.join(HERE, "generate_stubs.py"), str(out)],
                   check=True, capture_output=True)
    modules = sorted(str(p.relative_to(out)) for p in out.rglob("*_pb2*.py"))
    assert modules == ["grpc/health/v1/health_pb2.py", "grpc/health/v1/health_pb2_grpc.py",
                       "toolexec/v1/toolexec_pb2.py", "toolexec/v1/toolexec_pb2_grpc.py"]
    for path in out.rglob("*.py"):
        text = path.read_text()
        assert "from toolexec.v1 import" not in text and "from grpc.health.v1 import" not in text


def test_importing_the_client_adds_no_top_level_proto_packages():
    code = ("import sys, toolexec; "
            "print(sorted(m for m in sys.modules if m.startswith(('toolexec.v1', 'grpc.health'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd="/", env=subprocess_env()).stdout
    assert out.strip() == "[]"
