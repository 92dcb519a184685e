"""Two real ``splice workspace add`` at once on one workspace: neither member is lost.

The first is stopped (SIGSTOP, testing/kill_at.py) after reading ``pyproject.toml`` and just
before writing it back; the second runs meanwhile; then the first goes on.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import tomllib
from pathlib import Path

import pytest

from testing.cli import splice_executable
from testing.kill_at import kill_env, stopped, waiting_on

pytestmark = pytest.mark.skipif(
    not Path("/proc/locks").exists(), reason="reads the kernel's lock table"
)


def test_concurrent_workspace_adds_lose_no_member(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    for name in ("a", "b"):  # no projects yet: found, an add would write nothing
        (root / name).mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "ws"\n')
    stopper = kill_env(
        tmp_path / "hook", root, match=f"open:{root / '.pyproject.toml.'}", signal=signal.SIGSTOP
    )
    first = subprocess.Popen(
        [splice_executable(), "workspace", "add", "a"],
        cwd=root,
        env={**os.environ, **stopper},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    second = None
    try:
        while not stopped(first.pid):
            assert first.poll() is None, first.stderr.read() if first.stderr else ""
            time.sleep(0.001)
        second = subprocess.Popen(
            [splice_executable(), "workspace", "add", "b"],
            cwd=root,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        lock_file = root / ".splice" / "state.lock"
        while second.poll() is None and not (lock_file.exists() and waiting_on(lock_file)):
            time.sleep(0.001)
        os.kill(first.pid, signal.SIGCONT)
        assert first.wait() == 0
        assert second.wait() == 0
    finally:
        for process in (first, second):
            if process is not None and process.poll() is None:
                process.kill()
                process.wait()

    document = tomllib.loads((root / "pyproject.toml").read_text())
    assert sorted(document["tool"]["splice"]["workspace"]["members"]) == [
        "/a",
        "/b",
    ]  # literal, anchored (workspace._literal)
    assert document["project"] == {"name": "ws"}
