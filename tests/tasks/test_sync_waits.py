"""A command that finds a project of the workspace held by another Splice process says so,
and which one it waits for (docs/monorepo.md): ``sync`` on the graph's first run and on a
no-op alike, and ``workspace add`` when the root, a member, is held."""

from __future__ import annotations

import fcntl
import os
import select
import subprocess
import time
from pathlib import Path

from testing.cli import splice_executable
from testing.registry_fixtures import new_project

WAITING = "Waiting for another Splice process on .splice/..."


def _run_while_held(root: Path, held: Path, *args: str) -> tuple[int, str]:
    """``splice ARGS`` in ``root`` while this process holds ``held``'s project lock: its
    stderr once it said it waits (10 s at most, then the lock is let go), and its status."""
    lock_file = held / ".splice" / "state.lock"
    lock_file.parent.mkdir(exist_ok=True)
    fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        proc = subprocess.Popen(
            [splice_executable(), *args],
            cwd=root,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        assert proc.stderr is not None
        seen, deadline = b"", time.monotonic() + 10
        while WAITING.encode() not in seen and time.monotonic() < deadline:
            if select.select([proc.stderr], [], [], deadline - time.monotonic())[0]:
                chunk = os.read(proc.stderr.fileno(), 4096)
                if not chunk:
                    break
                seen += chunk
    finally:
        os.close(fd)  # let go: the command takes the lock and ends
    seen += proc.stderr.read()
    return proc.wait(timeout=60), seen.decode()


def _workspace(root: Path, members: str) -> None:
    for name in ("a", "b"):
        new_project(root / "packages" / name)
    (root / "pyproject.toml").write_text(f"[tool.splice.workspace]\nmembers = {members}\n")


def test_a_blocked_sync_names_the_member_it_waits_for(tmp_path: Path) -> None:
    _workspace(tmp_path, '["packages/*"]')
    for run in ("graph", "no-op"):
        code, stderr = _run_while_held(tmp_path, tmp_path / "packages" / "b", "sync")
        assert code == 0, (run, stderr)
        # It named the root ("[.] Waiting ..."), which no process held.
        assert f"[packages/b] {WAITING}" in stderr.splitlines(), (run, stderr)


def test_workspace_add_says_it_waits_for_the_root(tmp_path: Path) -> None:
    # A sync of a workspace whose root is a member holds the root's lock to its end, and
    # `workspace add` waited that long without a word.
    _workspace(tmp_path, '[".", "packages/a"]')
    new_project(tmp_path)
    code, stderr = _run_while_held(tmp_path, tmp_path, "workspace", "add", "packages/b")
    assert code == 0, stderr
    assert WAITING in stderr.splitlines(), stderr
    assert '"packages/b"' in (tmp_path / "pyproject.toml").read_text()
