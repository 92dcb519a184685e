"""A ``splice sync`` that finds a member held by another Splice process says which one it
waits for (docs/monorepo.md), on the graph's first run and on a no-op alike."""

from __future__ import annotations

import fcntl
import os
import subprocess
from pathlib import Path

from testing.cli import splice_executable
from testing.registry_fixtures import new_project


def _sync_while_held(root: Path, held: Path) -> tuple[int, str]:
    """``splice sync`` in ``root`` while this process holds ``held``'s project lock: its
    stderr up to the line it prints once it waits, the lock then let go, and its status."""
    lock_file = held / ".splice" / "state.lock"
    lock_file.parent.mkdir(exist_ok=True)
    fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        proc = subprocess.Popen(
            [splice_executable(), "sync"],
            cwd=root,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert proc.stderr is not None
        seen = ""
        while "Waiting" not in seen:
            line = proc.stderr.readline()
            assert line, f"sync ended without waiting: {seen!r}"
            seen += line
    finally:
        os.close(fd)  # let go: the sync takes the lock and ends
    seen += proc.stderr.read()
    return proc.wait(timeout=60), seen


def test_a_blocked_sync_names_the_member_it_waits_for(tmp_path: Path) -> None:
    for name in ("a", "b"):
        new_project(tmp_path / "packages" / name)
    (tmp_path / "pyproject.toml").write_text('[tool.splice.workspace]\nmembers = ["packages/*"]\n')
    waiting = "[packages/b] Waiting for another Splice process on .splice/..."
    for run in ("graph", "no-op"):
        code, stderr = _sync_while_held(tmp_path, tmp_path / "packages" / "b")
        assert code == 0, (run, stderr)
        # It named the root ("[.] Waiting ..."), which no process held.
        assert waiting in stderr.splitlines(), (run, stderr)
