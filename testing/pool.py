"""Helpers for the warm-pool tests: the process table, and a parent process to kill.

``sandbox_pids(needle)`` lists live processes (zombies excluded) whose command line contains
``needle`` — a unique temporary directory, so only this test's sandbox processes match.
``start_pool_parent`` runs ``hold_pool`` in a child Python: it prewarms a pooled runtime for
the given packages, optionally starts a call that never ends, prints ``ready`` and then
exits once the test closes its stdin (so the test counts the processes first), or waits to be
killed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _state(pid: str) -> str:
    with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def sandbox_pids(needle: str) -> list[int]:
    """Live (not zombie) processes whose command line mentions ``needle``."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read().decode("utf-8", "replace")
            if needle in cmdline and _state(pid) != "Z":
                found.append(int(pid))
        except OSError:
            continue
    return found


def wait_until_gone(needle: str, timeout: float = 30.0) -> list[int]:
    """The processes still alive after ``timeout`` seconds (empty when all ended)."""
    deadline = time.monotonic() + timeout
    while True:
        alive = sandbox_pids(needle)
        if not alive or time.monotonic() >= deadline:
            return alive
        time.sleep(0.05)


def wait_until_dead(pid: int, timeout: float = 30.0) -> None:
    """Until ``pid`` is a zombie or gone, as ``waitpid`` then sees it. A process killed with
    a large address space loses its command line (``sandbox_pids``) as it starts to exit,
    before it is one: under load a pool could still find it running."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if _state(str(pid)) == "Z":
                return
        except OSError:
            return
        time.sleep(0.01)
    raise AssertionError(f"process {pid} still running after {timeout} s")


def start_pool_parent(
    project: Path, packages: list[Path], *, mode: str, hang: Path | None = None
) -> subprocess.Popen[str]:
    """A child Python holding a warm pool; returns once it printed ``ready``."""
    args = [str(project), mode, str(hang or ""), *map(str, packages)]
    code = "import sys; from testing.pool import hold_pool; hold_pool(sys.argv[1:])"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, *args],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if line.strip() != "ready":
        proc.kill()
        raise AssertionError(
            f"pool parent failed: {line!r} {proc.stderr.read() if proc.stderr else ''}"
        )
    return proc


def hold_pool(argv: list[str]) -> None:
    """Child side of ``start_pool_parent``: ``project mode hang-package package...``."""
    from splice_build.runtime import SpliceRuntime
    from splice_build.runtime.pool import WarmPool

    project, mode, hang, *packages = argv
    runtime = SpliceRuntime(project_root=project, env={}, pool=WarmPool())
    for path in packages:
        runtime.prewarm(runtime.load(path), wait=True)
    if hang:
        pkg = runtime.load(hang)
        marker = Path(project) / "out" / "pid"
        threading.Thread(target=runtime.execute, args=(pkg, "t", {}), daemon=True).start()
        deadline = time.monotonic() + 30
        while not marker.exists():
            if time.monotonic() > deadline:
                raise SystemExit("the hanging call never started")
            time.sleep(0.02)
    print("ready", flush=True)
    if mode == "exit":
        sys.stdin.read()  # the test has counted the processes and closed our stdin
        return  # a normal exit: atexit closes the pool
    while True:
        time.sleep(1)
