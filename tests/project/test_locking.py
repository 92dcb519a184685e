"""The project lock with real processes: waiting, release on death, and no lost updates."""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from splice_build.project.layout import ProjectLayout
from splice_build.project.lockfile import load_lockfile
from splice_build.project.locking import lock
from splice_build.project.project_file import load_project_file
from testing.projects import REPO_ROOT, make_project, start_churn

HOLD_LOCK = """
import sys, time
from pathlib import Path
from splice_build.project.locking import lock
ready, release, releasing = (Path(p) for p in sys.argv[2:5])
with lock(Path(sys.argv[1])):
    ready.touch()
    while not release.exists():
        time.sleep(0.01)
    releasing.touch()
"""


def _hold(tmp_path: Path, lock_path: Path) -> subprocess.Popen[bytes]:
    """A process holding ``lock_path`` until ``tmp_path/release`` exists; it touches
    ``tmp_path/releasing`` just before it lets go."""
    files = [tmp_path / name for name in ("ready", "release", "releasing")]
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(lock_path), *map(str, files)], cwd=REPO_ROOT
    )
    deadline = time.monotonic() + 30
    while not files[0].exists():
        assert proc.poll() is None, "lock holder died"
        assert time.monotonic() < deadline
        time.sleep(0.01)
    return proc


def test_lock_creates_the_file_and_its_directory(tmp_path: Path) -> None:
    path = tmp_path / ".splice" / "state.lock"
    with lock(path):
        assert path.is_file()
    assert path.is_file()  # never deleted (see the module docstring)


def test_uncontended_lock_does_not_call_on_blocked(tmp_path: Path) -> None:
    calls: list[int] = []
    with lock(tmp_path / "l", lambda: calls.append(1)):
        pass
    assert calls == []


def test_waits_for_another_process_and_tells_the_caller(tmp_path: Path) -> None:
    """Told before waiting (the holder still holds it: it lets go only when told, from the
    callback), and acquired only once the holder let go. No clock involved."""
    path = tmp_path / "state.lock"
    holder = _hold(tmp_path, path)
    calls: list[bool] = []

    def blocked() -> None:
        calls.append((tmp_path / "releasing").exists())
        (tmp_path / "release").touch()

    with lock(path, blocked):
        acquired_after_release = (tmp_path / "releasing").exists()
    holder.wait(timeout=30)
    assert calls == [False]  # once, while the other process still held the lock
    assert acquired_after_release


def test_a_killed_holder_releases_the_lock(tmp_path: Path) -> None:
    """The kernel drops the lock of a process it killed: free at the first try."""
    path = tmp_path / "state.lock"
    holder = _hold(tmp_path, path)
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=30)
    calls: list[int] = []
    with lock(path, lambda: calls.append(1)):
        pass
    assert calls == []
    assert not (tmp_path / "releasing").exists()  # it never let go by itself


def test_two_processes_racing_lose_no_update(tmp_path: Path) -> None:
    root = make_project(tmp_path / "proj")
    go = tmp_path / "go"
    cycles = 200
    workers = [start_churn(root, tag, cycles, go) for tag in ("a", "b")]
    deadline = time.monotonic() + 30
    while not all(Path(f"{go}.{tag}.ready").exists() for tag in ("a", "b")):
        assert all(w.poll() is None for w in workers), "a worker died before the start"
        assert time.monotonic() < deadline
        time.sleep(0.01)
    go.touch()
    reports = []
    for worker in workers:
        out, _ = worker.communicate(timeout=120)
        assert worker.returncode == 0
        reports.append(json.loads(out))
    expected = {f"@churn/{tag}-{i}" for tag in ("a", "b") for i in range(cycles)}
    assert set(load_project_file(root).packages) == expected
    assert set(load_lockfile(root).packages) == expected
    # The writers really overlapped: at least one of them found the lock busy.
    assert sum(r["blocked"] for r in reports) > 0
    leftovers = {p.name for p in root.iterdir()} - {"splice.json", "splice.lock", ".splice"}
    assert leftovers == set()
    assert {p.name for p in ProjectLayout(root).state_dir.iterdir()} == {"state.lock"}


def test_a_cancelled_call_stops_waiting_for_the_lock(tmp_path: Path) -> None:
    """A tool call of ``splice mcp`` that waited for a project another ``splice`` process was
    changing (``Splice._recovered``) sat in a blocking ``flock`` that neither the client's
    cancellation nor the server's stop could end: the stop never ended (a real ``splice
    mcp --http``: the request cancelled with a 500 after the cut, then the process waited for
    the call's thread at its exit until SIGKILL). Now the call's cancellation ends the wait,
    ``STATE_LOCKED``; outside a call nothing changes (the wait above). The holder here is
    another thread: the lock belongs to an open file, so it excludes this one alike."""
    import threading

    from splice_build.cancel import Cancellation, cancellable
    from splice_build.errors import ErrorCode, ProjectError

    path = tmp_path / "state.lock"
    held, released, blocked = threading.Event(), threading.Event(), threading.Event()

    def hold() -> None:
        with lock(path):
            held.set()
            released.wait(10)  # the bound of the old code, which waited for it

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(10)
    token, found = Cancellation(), []

    def wait() -> None:
        with cancellable(token):
            try:
                with lock(path, on_blocked=blocked.set):
                    found.append("taken")
            except ProjectError as exc:
                found.append(exc.code)

    waiter = threading.Thread(target=wait)
    waiter.start()
    try:
        assert blocked.wait(10)
        token.cancel()
        waiter.join(10)
        assert found == [ErrorCode.STATE_LOCKED] and not released.is_set()
    finally:
        released.set()
        holder.join()
        waiter.join()


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="locks the file as another user (root: setpriv)",
)
@pytest.mark.parametrize("made_before", [False, True])
def test_another_user_cannot_hold_the_lock(made_before: bool) -> None:
    """``flock`` asks only for a descriptor, and a lock file was 0644: any local user could
    open it read-only and hold it (``flock -x .splice/state.lock sleep inf`` as uid 65534),
    and every sync, add and remove of the project, or every command taking SPLICE_HOME's
    lock, waited for ever. Only those who may write it may open it; one made 0644 before
    loses others' read at its owner's next lock."""
    top = Path(tempfile.mkdtemp(prefix="splice-lock-"))
    try:
        top.chmod(0o755)
        path = top / "state.lock"
        if made_before:
            path.touch()
            path.chmod(0o644)
        with lock(path):
            pass
        assert stat.S_IMODE(path.stat().st_mode) & 0o044 == 0
        nobody = ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups"]
        held = subprocess.run([*nobody, "flock", "-n", "-x", str(path), "true"], check=False)
        assert held.returncode != 0
    finally:
        shutil.rmtree(top)
