"""The exclusive lock file that serializes writers of project and user state.

Modelled on pre-commit's ``file_lock.py``: one ``lock(path, on_blocked)`` with the platform
code inside. It tries a non-blocking lock first and, if another process holds it, calls
``on_blocked`` (so the CLI can say it is waiting on ``.splice/``) and then blocks.

The lock belongs to an open file, not to a process or thread: two threads on the same path
exclude each other, so the lock is not re-entrant. A nested ``with lock(...)`` on a lock file
the same thread holds (a progress or consent callback of an install making another change)
would wait for itself for ever: it is refused at once, ``STATE_LOCKED``. A process that dies
releases its lock with its file descriptors.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from splice_build.file_keys import same_file

if sys.platform == "win32":  # pragma: no cover (Linux CI)
    import msvcrt

    # msvcrt locks a byte region; any fixed region works as long as every caller uses it.
    _REGION = 0xFFFF

    @contextlib.contextmanager
    def _locked(fileno: int, on_blocked: Callable[[], None]) -> Iterator[None]:
        try:
            msvcrt.locking(fileno, msvcrt.LK_NBLCK, _REGION)
        except OSError:
            on_blocked()
            while True:
                try:
                    msvcrt.locking(fileno, msvcrt.LK_LOCK, _REGION)
                except OSError as exc:
                    # LK_LOCK gives up with EDEADLOCK after 10 one-second attempts: retry.
                    if exc.errno != errno.EDEADLOCK:
                        raise
                else:
                    break
        try:
            yield
        finally:
            msvcrt.locking(fileno, msvcrt.LK_UNLCK, _REGION)

else:
    import fcntl

    @contextlib.contextmanager
    def _locked(fileno: int, on_blocked: Callable[[], None]) -> Iterator[None]:
        try:
            fcntl.flock(fileno, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            on_blocked()
            _wait_for(fileno)
        try:
            yield
        finally:
            fcntl.flock(fileno, fcntl.LOCK_UN)

    def _wait_for(fileno: int) -> None:
        """Take the lock once its holder lets it go; inside a call that can be cancelled
        (splice_build/cancel.py: a tool call of ``splice mcp``), ``STATE_LOCKED`` once the call
        is cancelled. A blocking ``flock`` cannot be interrupted from another thread: a call
        waiting for a project another ``splice`` process was changing was out of the reach
        of its cancellation and of the server's stop, which then never ended."""
        from splice_build.cancel import active

        token = active()
        if token is None:
            fcntl.flock(fileno, fcntl.LOCK_EX)
            return
        cancelled = threading.Event()
        forget = token.on_cancel(cancelled.set)
        try:
            while True:
                try:
                    fcntl.flock(fileno, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    return
                except BlockingIOError:
                    if cancelled.wait(_CANCEL_POLL_SECONDS):
                        raise _cancelled_while_waiting() from None
        finally:
            forget()


def _nothing() -> None:
    return None


# What a command prints before it waits for a project's lock another process holds.
WAITING = "Waiting for another Splice process on .splice/..."

# Told which project's lock another process holds, before waiting for it: a run over many
# projects (``splice sync``) names the one it waits for.
BlockedOn = Callable[[Path], None]


def blocked_on(on_blocked: BlockedOn | None, project: Path) -> Callable[[], None] | None:
    """The ``on_blocked`` of ``lock`` for ``project``'s lock, telling ``on_blocked`` it."""
    if on_blocked is None:
        return None
    return lambda: on_blocked(project)


_CANCEL_POLL_SECONDS = 0.05  # how soon a cancelled call stops waiting for a lock


def _cancelled_while_waiting() -> Exception:
    from splice_build.errors import ErrorCode, ProjectError

    return ProjectError(
        ErrorCode.STATE_LOCKED,
        "the call was cancelled while it waited for the project, which another splice "
        "process is changing",
        hint="call it again once that command has finished",
    )


@contextlib.contextmanager
def lock(path: Path, on_blocked: Callable[[], None] | None = None) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` for the duration of the ``with`` block.

    ``path`` and its parent directories are created if missing. The lock file itself is
    never deleted: removing it while another process waits on it would let a third process
    lock a new file and run alongside the second.
    """
    path = Path(path)
    fd, found = _open_lock_file(path)
    try:
        key = same_file(found)
        held = _held_here()
        if key in held:  # waiting would wait for this very thread: for ever
            raise _held_by_this_thread(path)
        held.add(key)
        try:
            with _locked(fd, on_blocked or _nothing):
                yield
        finally:
            held.discard(key)
    finally:
        os.close(fd)


_THIS_THREAD = threading.local()


def _held_here() -> set[tuple[int, int]]:
    """The lock files (device, inode) the calling thread holds."""
    held: set[tuple[int, int]] | None = getattr(_THIS_THREAD, "held", None)
    if held is None:
        held = _THIS_THREAD.held = set()
    return held


def _held_by_this_thread(path: Path) -> Exception:
    from splice_build.errors import ErrorCode, ProjectError

    return ProjectError(
        ErrorCode.STATE_LOCKED,
        f"{path} is held by this thread: a change asked while another is in progress in it "
        "(from a progress or consent callback) would wait for itself",
        hint="make the change after the call in progress has returned",
    )


def _create_lock_file(path: Path, flags: int) -> int:
    """Open ``path`` with ``flags``, creating it (and its parent directories) with the mode
    project/creation_modes.py gives a lock file made in its directory."""
    from splice_build.project.creation_modes import private_mode_in

    if not path.parent.is_dir():
        path.parent.mkdir(parents=True, exist_ok=True)
    return os.open(path, flags | os.O_CREAT, private_mode_in(path.parent))


def _close_to_readers(fd: int, path: Path, found: os.stat_result) -> None:
    """Take from a lock file of this user what ``private_mode_in`` would not give it
    (others' read of one made 0644 before): whoever may open it may hold it. A descriptor
    opened before stays open; the file is never made anew (module docstring of ``lock``)."""
    if not found.st_mode & 0o077:
        # Nothing beyond its owner's bits: beyond_private's answer without the call, so a
        # no-op sync (a lock per member) asks no euid and imports no creation_modes.
        return
    from splice_build.project.creation_modes import beyond_private

    if getattr(os, "geteuid", None) is None or found.st_uid != os.geteuid():
        return
    mode = stat.S_IMODE(found.st_mode)
    extra = beyond_private(mode, path.parent)
    if extra:
        os.fchmod(fd, mode & ~extra)


def _open_lock_file(path: Path) -> tuple[int, os.stat_result]:
    """A descriptor of the lock file and its ``fstat``, the file created (with its parent
    directories) if missing. ``NOT_WRITABLE`` naming it when something other than a regular
    file is in its place or on its way (a directory, a FIFO: ``O_NONBLOCK`` keeps the open
    from waiting on one; a socket; a file where a directory should be; a symbolic link,
    never followed: ``O_NOFOLLOW``), or when the file system refuses it.

    Only the descriptor's lock is used, so no file object is made (nor its blocking mode
    restored: ``flock`` ignores it), and the file and its parents are made only when the open
    finds them missing (``mkdir`` of an existing directory is an exception and another
    ``stat``; a no-op sync takes a lock per member). A new lock file gets the group's write
    where its directory gives it (project/creation_modes.py); one that this user may not
    write (a teammate's in a team's checkout, made before that rule) is locked through a
    read-only descriptor: ``flock`` asks for none."""
    from splice_build.errors import ErrorCode, ProjectError, storage_error

    def occupied(what: str) -> ProjectError:
        return ProjectError(
            ErrorCode.NOT_WRITABLE,
            f"{what} is in the way of the lock file {path}",
            hint="remove it; the next command creates the lock file again",
        )

    flags = (
        os.O_APPEND
        | getattr(os, "O_NONBLOCK", 0)
        | getattr(os, "O_CLOEXEC", 0)
        | getattr(os, "O_NOFOLLOW", 0)
    )
    try:
        try:
            fd = os.open(path, flags | os.O_RDWR)
        except FileNotFoundError:  # the first lock here, or a missing parent
            fd = _create_lock_file(path, flags | os.O_RDWR)
        except OSError as exc:  # not ours to write, or a read-only mount's: flock needs neither
            if not isinstance(exc, PermissionError) and exc.errno != errno.EROFS:
                raise
            fd = os.open(path, flags | os.O_RDONLY)
    except (FileExistsError, NotADirectoryError):
        raise occupied("a file that is not a directory") from None
    except IsADirectoryError:
        raise occupied("a directory") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise occupied("a symbolic link") from None
        coded = storage_error(exc)
        if coded is not None:
            raise coded from exc
        raise occupied(f"something that cannot be opened ({exc.strerror})") from exc
    try:
        found = os.fstat(fd)
        if not stat.S_ISREG(found.st_mode):
            raise occupied("something that is not a regular file")
        _close_to_readers(fd, path, found)
        return fd, found
    except BaseException:
        os.close(fd)
        raise
