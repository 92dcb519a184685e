"""Kill (or stop) a real ``splice`` process just before one chosen file-system change.

No breakpoint and no patched code: a ``sitecustomize`` module on the child's ``PYTHONPATH``
installs an audit hook (``sys.addaudithook``) that counts the changes the process makes
under one directory (a file opened for writing, a rename, a removal, a directory made or
removed) and sends itself ``SIGKILL`` before the one asked for. The kill is as abrupt as
``kill -9`` from outside, and it lands at the same step on every run.

``kill_env(hook_dir, root, match=…)`` kills before the first change whose event and path
contain ``match`` (``"os.rename:/splice.lock"``); ``count=N`` kills before the Nth change
instead; ``log`` lists every change seen, one ``N event path`` a line. ``fail=errno.ENOSPC`` makes
that change fail with that ``OSError`` instead of killing (the rest of the run goes on, so
its error handling and rollback are what is tested), ``descriptors=True`` also counts a change
named relative to a directory's descriptor (``install/transaction.py`` empties a tree so: the
unlinks of a backup after the commit point; bench/kill_walk.py walks them, CI's walks leave
them out for time), and ``directories=True`` also counts
each directory opened without writing: the ``fsync`` of a directory after a rename or
unlink (``project/atomic.py``) opens it so, and a failing fsync is what it stands for.
``signal=SIGSTOP`` stops the process there instead, holding whatever it holds (the project lock, a half-done
swap) until the test sends it ``SIGCONT``: another process can then be run against exactly
that state.
"""

from __future__ import annotations

import os
import signal as signals
import sys
from collections.abc import Sequence
from pathlib import Path

_HOOK = """\
import sys
sys.path.insert(0, {testing!r})
from kill_at import install
install()
"""

_EVENTS = frozenset(
    {"os.rename", "os.remove", "os.rmdir", "os.mkdir", "os.link", "shutil.rmtree", "os.truncate"}
)


def kill_env(
    hook_dir: Path,
    root: Path | Sequence[Path],
    *,
    match: str | None = None,
    count: int | None = None,
    log: Path | None = None,
    signal: signals.Signals = signals.SIGKILL,
    fail: int | None = None,
    directories: bool = False,
    descriptors: bool = False,
) -> dict[str, str]:
    """The environment of a ``splice`` child that kills itself as described above; ``root``
    may be several directories (a project and ``SPLICE_HOME``), whose changes count alike."""
    roots = [root] if isinstance(root, Path) else list(root)
    hook_dir.mkdir(parents=True, exist_ok=True)
    testing = str(Path(__file__).resolve().parent)
    (hook_dir / "sitecustomize.py").write_text(_HOOK.format(testing=testing), encoding="utf-8")
    repo = str(Path(testing).parent)
    env = {
        "PYTHONPATH": os.pathsep.join([str(hook_dir), repo]),
        "SPLICE_TEST_KILL_ROOT": os.pathsep.join(str(r) for r in roots),
        "SPLICE_TEST_KILL_SIGNAL": str(int(signal)),
    }
    if match is not None:
        env["SPLICE_TEST_KILL_MATCH"] = match
    if count is not None:
        env["SPLICE_TEST_KILL_COUNT"] = str(count)
    if log is not None:
        env["SPLICE_TEST_KILL_LOG"] = str(log)
    if fail is not None:
        env["SPLICE_TEST_KILL_FAIL"] = str(fail)
    if directories:
        env["SPLICE_TEST_KILL_DIRS"] = "1"
    if descriptors:
        env["SPLICE_TEST_KILL_DESCRIPTORS"] = "1"
    return env


def install() -> None:
    """The audit hook (run in the child by ``sitecustomize``)."""
    roots = tuple(r for r in os.environ.get("SPLICE_TEST_KILL_ROOT", "").split(os.pathsep) if r)
    if not roots:
        return
    match = os.environ.get("SPLICE_TEST_KILL_MATCH")
    count = int(os.environ.get("SPLICE_TEST_KILL_COUNT", "0"))
    log = os.environ.get("SPLICE_TEST_KILL_LOG")
    sent = int(os.environ.get("SPLICE_TEST_KILL_SIGNAL", str(int(signals.SIGKILL))))
    fail = int(os.environ.get("SPLICE_TEST_KILL_FAIL", "0"))
    directories = os.environ.get("SPLICE_TEST_KILL_DIRS") == "1"
    descriptors = os.environ.get("SPLICE_TEST_KILL_DESCRIPTORS") == "1"
    seen = [0]
    fired = [False]
    writing = os.O_WRONLY | os.O_RDWR | os.O_CREAT

    def hook(event: str, args: tuple[object, ...]) -> None:
        if event not in _EVENTS and event != "open":
            return
        target = args[0]
        if not isinstance(target, str | bytes | os.PathLike):
            return
        path = os.fsdecode(target)
        if descriptors:
            path = _joined(path, event, args)
        if not path.startswith(roots):
            return
        if event == "open":
            if not isinstance(args[2], int):
                return
            if not args[2] & writing:
                if not (directories and args[1] is None and os.path.isdir(path)):
                    return
                event = "open-dir"
        seen[0] += 1
        if log:
            with open(log, "a", encoding="utf-8") as handle:  # outside root: not counted
                handle.write(f"{seen[0]} {event} {path}\n")
        if fired[0]:
            return
        if seen[0] == count or (match is not None and match in f"{event}:{path}"):
            fired[0] = True  # once: a stopped process goes on after SIGCONT
            if fail:
                raise OSError(fail, os.strerror(fail), path)
            os.kill(os.getpid(), sent)

    sys.addaudithook(hook)


# Where each event's ``dir_fd`` is among its arguments: a name relative to that descriptor
# (``install/transaction.py`` empties a tree so) is a change under the directory it names.
_DIR_FD_ARGUMENT = {"os.remove": 1, "os.rmdir": 1, "os.mkdir": 2, "os.rename": 2, "os.link": 2}


def _joined(path: str, event: str, args: tuple[object, ...]) -> str:
    """``path`` made absolute through the descriptor it is relative to, if any."""
    at = _DIR_FD_ARGUMENT.get(event)
    if at is None or os.path.isabs(path) or len(args) <= at:
        return path
    dir_fd = args[at]
    if not isinstance(dir_fd, int):
        return path
    return os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), path)


def stopped(pid: int) -> bool:
    """Whether process ``pid`` is stopped (state ``T`` in /proc; Linux)."""
    text = Path(f"/proc/{pid}/stat").read_text()
    return text.rpartition(")")[2].split()[0] == "T"


def waiting_on(lock_file: Path) -> bool:
    """Whether some process waits for a lock on ``lock_file`` (a ``->`` line of /proc/locks)."""
    inode = lock_file.stat().st_ino
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        if fields[1] == "->" and fields[6].endswith(f":{inode}"):
            return True
    return False
