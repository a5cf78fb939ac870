"""Checkpoints from Python against a real toolexecd with checkpoints on: a batch
that writes starts with a checkpoint event; session.checkpoints(), diff() and
restore() (a dry run first) put back what a command changed."""

import os

import pytest

import toolexec
from conftest import Daemon


@pytest.fixture()
def daemon(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("one\n", encoding="utf-8")
    config = tmp_path / "checkpoints.textproto"
    config.write_text(f'checkpoints {{ enabled: true store_dir: "{tmp_path / "store"}" }}\n',
                      encoding="utf-8")
    d = Daemon(str(ws), config=str(config))
    yield d
    d.stop()


def test_a_session_restores_what_a_command_changed(daemon):
    a = os.path.join(daemon.workspace, "a.txt")
    with toolexec.Client(daemon.address) as client, client.open_session() as session:
        events = list(session.execute([{"name": "run_command",
                                        "args": {"command_line": "echo two > a.txt && mkdir d"}}]))
        assert list(events[0]) == ["checkpoint"]
        checkpoint = events[0]["checkpoint"]
        assert checkpoint["tools"] == ["run_command"]
        assert checkpoint["created_at"].endswith("Z")
        assert "result" in events[1]
        assert [c["id"] for c in session.checkpoints()] == [checkpoint["id"]]

        diff = session.diff(checkpoint["id"])
        assert diff["changes"] == [{"path": "a.txt", "kind": "modified"},
                                   {"path": "d/", "kind": "added"}]
        assert "-one\n+two\n" in diff["unified_diff"]

        dry = session.restore(checkpoint["id"], dry_run=True)
        assert dry["undo_checkpoint_id"] == ""
        assert [c["path"] for c in dry["changes"]] == ["a.txt", "d/"]
        with open(a, encoding="utf-8") as f:
            assert f.read() == "two\n"

        restored = session.restore(checkpoint["id"])
        assert restored["undo_checkpoint_id"]
        with open(a, encoding="utf-8") as f:
            assert f.read() == "one\n"
        assert not os.path.exists(os.path.join(daemon.workspace, "d"))
        # The undo checkpoint brings the command's changes back.
        session.restore(restored["undo_checkpoint_id"], paths=["a.txt"])
        with open(a, encoding="utf-8") as f:
            assert f.read() == "two\n"

        with pytest.raises(toolexec.ToolexecError) as e:
            session.diff("no-such-checkpoint")
        assert "no checkpoint" in str(e.value)


def test_the_cli_lists_diffs_and_restores(daemon):
    """`toolexec checkpoints|diff|restore` against the same daemon."""
    import subprocess

    from conftest import REPO
    cli = os.environ.get("TOOLEXEC_CLI") or os.path.join(os.path.dirname(
        os.environ.get("TOOLEXECD") or os.path.join(REPO, "build", "toolexecd")), "toolexec")
    if not os.access(cli, os.X_OK):
        pytest.fail(f"toolexec not found at {cli}: build it (scripts/build.sh toolexec) or set "
                    "TOOLEXEC_CLI", pytrace=False)

    def run(*args):
        return subprocess.run([cli, f"--target={daemon.address}", *args], capture_output=True,
                              text=True, timeout=60)

    a = os.path.join(daemon.workspace, "a.txt")
    with toolexec.Client(daemon.address) as client, client.open_session() as session:
        sid = session.session_id
        call = run(f"--session={sid}", "call", "run_command", '{"command_line":"echo cli > a.txt"}')
        assert call.returncode == 0, call.stderr
        assert "checkpoint cp" in call.stderr

        listed = run("checkpoints", sid)
        assert listed.returncode == 0, listed.stderr
        lines = listed.stdout.splitlines()
        assert len(lines) == 1 and '"tools":["run_command"]' in lines[0]
        cp = session.checkpoints()[0]["id"]

        diff = run("diff", sid, cp)
        assert diff.returncode == 0, diff.stderr
        assert "-one\n+cli\n" in diff.stdout
        assert diff.stderr == "modified a.txt\n"

        dry = run("restore", sid, cp, "--dry-run")
        assert dry.stdout == "would restore: modified a.txt\n", dry.stdout
        with open(a, encoding="utf-8") as f:
            assert f.read() == "cli\n"
        restored = run("restore", sid, cp, "a.txt")
        assert restored.returncode == 0, restored.stderr
        assert restored.stdout.startswith("restored: modified a.txt\nundo checkpoint: cp")
        with open(a, encoding="utf-8") as f:
            assert f.read() == "one\n"

        missing = run("diff", sid, "cp-none")
        assert missing.returncode == 3 and "NOT_FOUND" in missing.stderr, missing.stderr
