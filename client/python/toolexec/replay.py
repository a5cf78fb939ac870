"""Replaying a session recording against a daemon: ``toolexec.replay(path, client)``.

The replay itself is the ``toolexec`` command line's (``toolexec replay FILE --json``,
client/replay.h), so the comparison, and the one list of what it leaves out, are
the same whichever way it runs; this runs that command against ``client``'s daemon
(its target and token) and returns what it found.
"""

import json
import os
import shutil
import subprocess

from .errors import ToolexecError


def _cli(cli):
    path = cli or os.environ.get("TOOLEXEC_CLI") or shutil.which("toolexec")
    if not path:
        raise ToolexecError("the toolexec command line is needed to replay: put it on PATH, "
                            "set $TOOLEXEC_CLI, or pass cli=")
    return path


def replay(path, client, *, workspace=None, cli=None, report=False):
    """Re-runs the recording at ``path`` against ``client``'s daemon (in ``workspace``,
    relative to the daemon's, as it is; else in the recorded one, first restored to
    the session's first checkpoint) and returns the results that
    differ: a list of {"batch", "index", "id", "name", "fields": [{"field",
    "recorded", "replayed"}]}, empty when none does. ``report=True`` returns the
    whole report instead (per batch: calls, compared, from_recording, notes)."""
    token = dict(client._metadata).get("authorization", "").removeprefix("Bearer ")
    env = {**os.environ, "TOOLEXEC_TOKEN": token} if token else dict(os.environ)
    argv = [_cli(cli), f"--target={client.target}", "replay", os.fspath(path), "--json"]
    if workspace:
        argv += ["--workspace", workspace]
    run = subprocess.run(argv, capture_output=True, text=True, env=env)
    if run.returncode not in (0, 1):
        raise ToolexecError(f"toolexec replay failed (exit {run.returncode}): "
                            f"{run.stderr.strip()}")
    out = json.loads(run.stdout)
    if report:
        return out
    return [{"batch": b["batch"], **d} for b in out["batches"] for d in b["differences"]]
