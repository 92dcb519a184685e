"""Atomic file replacement: the only way project and user state reaches the disk.

docs/architecture.md#invariants, 8: a crash at any instant leaves the previous file or the new one, never
a mix. The bytes go to a temp file in the target's directory (same file system, so the rename
is atomic), are fsynced, renamed over the target with ``os.replace``, and the directory is
fsynced so the rename itself survives a power cut. The temp file is created with its final
mode through ``os.open``, so a secret file is never readable by others, not even while it is
being written.

It also owns the JSON encoding every state file shares: ``JSON.stringify(value, null, 2)``
plus a newline on the way out, UTF-8 with an optional BOM on the way in.
"""

from __future__ import annotations

import _thread
import contextlib
import json
import os
import re
import stat
import sys
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from splice_build.project.creation_modes import dir_mode_in, file_mode_in

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor

_O_BINARY = getattr(os, "O_BINARY", 0)  # Windows only; 0 elsewhere


def atomic_write_bytes(
    path: Path,
    data: bytes,
    *,
    mode: int | None = None,
    exclusive: bool = False,
    keep_mode: bool = False,
    durable: bool = True,
) -> bool:
    """Replace ``path`` with ``data`` atomically; the new file has ``mode`` minus the umask
    (None: the mode project/creation_modes.py gives a file made in its directory, 0664 in a
    team's checkout: a teammate's next command rewrites it in place or locks it).

    With ``keep_mode`` a file that ``path`` already is keeps its permission bits instead (a
    user's ``splice.json`` made private or group-writable stays so after ``splice add``); a
    secret is never written with it, its ``mode`` is the only one it may have.

    With ``exclusive`` an existing ``path`` is left alone and False is returned (the complete
    file is linked into place, which fails if the name exists: create-if-absent without a
    check-then-write race). The parent directory must exist. Raises ``OSError`` when the write
    fails; the previous file is then untouched and the temp file is removed.

    ``durable=False`` skips both fsyncs, for a cache that is ignored as a whole when it cannot
    be read and whose every entry is checked against what it describes (the stat cache, the
    member memo, the walks' record): a power cut may then leave the previous file, or the new
    name empty or short, both of which only cost the next run work. Its readers, not this
    function, make that safe. The rename is still atomic for every process that outlives the
    write. Never for a file that records something nothing else can rebuild (a lock, a key, a
    consent record).
    """
    path = Path(path)
    remove_stale_temps(path)
    kept = _current_mode(path) if keep_mode else None
    temp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    if mode is None:
        mode = file_mode_in(path.parent)
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_BINARY, mode)
    try:
        try:
            if kept is not None:
                os.fchmod(fd, kept)  # exactly the old bits: the umask applies to new files
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        if exclusive:
            try:
                os.link(temp, path)
            except FileExistsError:
                return False
            finally:
                os.unlink(temp)
        else:
            os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise
    if durable:
        fsync_directory(path.parent)
    return True


def _current_mode(path: Path) -> int | None:
    """The permission bits of the regular file at ``path`` (None: none there, or no POSIX
    modes to keep)."""
    if not hasattr(os, "fchmod"):
        return None
    try:
        status = os.lstat(path)
    except OSError:
        return None
    # The rwx bits only: a set-id or sticky bit on a JSON file is nothing to carry over.
    return status.st_mode & 0o777 if stat.S_ISREG(status.st_mode) else None


def remove_stale_temps(path: Path) -> None:
    """Delete the temp files of ``path`` that a killed writer left beside it.

    A ``kill -9`` between the temp file's creation and its rename leaves a full copy of the
    new content next to the target (a lock in the project's root where ``git add`` finds it,
    a token in SPLICE_HOME that outlives ``splice logout``). A temp file is its writer's
    until the rename, so only those whose writer's process id (the name holds it) no longer
    runs on this machine are deleted; a live one, or one this process cannot signal, is left.
    Nothing is deleted on Windows, where a process cannot be probed without a handle.

    Skipped where :func:`remove_dead_temps` swept the whole directory less than
    ``SWEEP_INTERVAL`` seconds ago: that sweep removed these temps with all the others.
    """
    if not _swept_lately(path.parent):
        _remove_dead_temps(path.parent, re.escape(path.name))


def remove_dead_temps(directory: Path) -> None:
    """:func:`remove_stale_temps` for every file of ``directory``, whatever its name: for a
    directory only this module writes in (the artifact cache, the consent records), where a
    temp file of an entry that is never written again (a package given up after a killed
    ``splice add``) would otherwise stay for good.

    Such a directory holds one file per artifact or project ever seen, thousands, and a sync
    writes in it once per member: listing it on every write made a sync's cost grow with the
    members times the directory's files (1,200 members: 5 s of listing alone). So a process
    lists it once per ``SWEEP_INTERVAL`` seconds, on the first write there, and its later
    writes there list nothing (nor does their :func:`remove_stale_temps`). The guarantee is
    unchanged: every temp a writer killed before the sweep left is removed by it, and one
    killed after it by the next sweep of the directory, by this process within the interval
    if it writes there again or by any later process's first write there; none stays for
    good.
    """
    if _swept_lately(directory):
        return
    _remove_dead_temps(directory, r"[^/]+")
    _swept[os.path.abspath(directory)] = time.monotonic()


SWEEP_INTERVAL = 60.0
_swept: dict[str, float] = {}  # directory -> when this process last swept it whole


def _swept_lately(directory: Path) -> bool:
    when = _swept.get(os.path.abspath(directory))
    return when is not None and time.monotonic() - when < SWEEP_INTERVAL


def _remove_dead_temps(directory: Path, name: str) -> None:
    if sys.platform == "win32":
        return
    pattern = re.compile(rf"\.{name}\.([0-9]{{1,10}})\.[0-9a-f]{{8}}\.tmp")
    try:
        with os.scandir(directory) as entries:
            names = [e.name for e in entries if pattern.fullmatch(e.name)]
    except OSError:
        return  # the write itself reports an unusable directory
    for found in names:
        match = pattern.fullmatch(found)
        assert match is not None
        if _running(int(match.group(1))):
            continue
        with contextlib.suppress(OSError):
            os.unlink(directory / found)


def _running(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True  # another user's process, or no process id this system can have
    return True


def atomic_write_json(
    path: Path,
    value: object,
    *,
    mode: int | None = None,
    exclusive: bool = False,
    keep_mode: bool = False,
) -> bool:
    """Write ``value`` as ``JSON.stringify(value, null, 2)`` plus a trailing newline.

    The text is JavaScript's to the byte (``spec.json_text``): a file written here is the file
    the TypeScript Splice writes for the same value.
    """
    from splice_build.spec.json_text import stringify

    text = stringify(value, indent=2) + "\n"
    return atomic_write_bytes(
        path, text.encode("utf-8"), mode=mode, exclusive=exclusive, keep_mode=keep_mode
    )


def decode_json(data: bytes, *, unique_keys: bool = False) -> object:
    """Parse a JSON state file; raises ``ValueError`` with a one-line reason.

    The reason names a position, never the content, so a damaged credentials file cannot
    leak a token into an error message. ``unique_keys`` (``splice.json``, ``splice.lock``:
    committed files, no secret in a key) refuses a key given twice in one object, naming it:
    ``JSON.parse`` keeps the last, so a lock listing one package twice (a hand edit, or a
    merge that kept both sides) installed whichever came last, silently, while a reader of
    the file may take the first.
    """
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 (byte {exc.start})") from exc
    try:
        hook = _unique_object if unique_keys else None
        return json.loads(text, parse_constant=_reject_constant, object_pairs_hook=hook)
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        ) from exc
    except RecursionError as exc:
        raise ValueError("not valid JSON (nested too deeply)") from exc
    except _RepeatedKey:
        raise
    except ValueError as exc:  # from _reject_constant
        raise ValueError(f"not valid JSON ({exc})") from exc


class _RepeatedKey(ValueError):
    """A key given twice in one object: valid JSON, but not one reading of it."""


def _unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _RepeatedKey(f"the key {json.dumps(key[:100])} is given twice in one object")
            seen.add(key)
    return value


def _reject_constant(name: str) -> object:
    # NaN and Infinity are Python extensions; JSON.parse refuses them, and so do we.
    raise ValueError(f"{name} is not JSON")


def make_dirs(directory: Path) -> None:
    """``mkdir -p`` whose every new directory's name is durable: the parent of each directory
    it creates is fsynced (a rename into a directory whose own name a power cut can lose is
    lost with it). Raises ``FileExistsError`` when a non-directory is in the way."""
    if directory.is_dir():
        return
    make_dirs(directory.parent)
    try:
        directory.mkdir(mode=dir_mode_in(directory.parent))
    except FileExistsError:
        if not directory.is_dir():
            raise
        return
    fsync_directory(directory.parent)


def make_dirs_through_no_link(directory: str, made_in: set[str] | None = None) -> None:
    """:func:`make_dirs` of a canonical path (no symbolic link in it) that follows none: each
    component is opened ``O_NOFOLLOW`` from ``/`` and each missing one made in the directory
    so opened, so a link renamed in on the way (after the path was resolved and checked)
    fails the walk (``ELOOP``, ``ENOTDIR``) instead of leading the creation elsewhere.

    ``made_in``: each directory a new one was made in is added there and left for the
    caller to fsync (``fsync_all``), once however many were made in it: a package's 1,000
    write grants in one directory took 1,000 fsyncs of it, one after the other (seconds),
    before its tool ran."""
    flags = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    done = "/"
    held = os.open(done, flags)
    try:
        for part in [p for p in directory.split("/") if p]:
            parent, done = done, os.path.join(done, part)
            try:
                here = os.open(part, flags, dir_fd=held)
            except FileNotFoundError:
                with contextlib.suppress(FileExistsError):  # made by another call meanwhile
                    os.mkdir(part, dir_mode_in(Path(parent)), dir_fd=held)
                    if made_in is None:
                        fsync_directory(Path(parent))
                    else:
                        made_in.add(parent)
                here = os.open(part, flags, dir_fd=held)
            os.close(held)
            held = here
    finally:
        os.close(held)


def write_tree(directory: Path, files: Mapping[str, bytes]) -> None:
    """Write ``files`` (relative POSIX path → bytes) as new files below the existing
    ``directory``; return once every file and directory written (``directory`` included) is
    durable. The caller renames the tree to the name that commits it (install/transaction.py)
    only then, so a power cut can never leave an empty or short file under that name.

    Each file's fsync starts on a worker thread as soon as the file is written, while the next
    one is being written, and the directories' follow: the calls are independent, and
    concurrent fsyncs share the file system's journal commits (ext4, XFS), where one after the
    other each waits for its own (bench/README.md, "install_write")."""
    from concurrent.futures import wait

    from splice_build.stopping import signals_deferred

    pool = _fsync_pool()
    pending: list[Future[None]] = []
    directories = {directory}
    # The tree's directories are made in ``directory`` or in one another: one answer for all.
    dir_mode, file_mode = dir_mode_in(directory), file_mode_in(directory)

    def new_file(path: str, flags: int) -> int:
        return os.open(path, flags, file_mode)

    # A stop signal acts once the fsyncs are queued: a ^C while the pool started a thread
    # (Thread.start waits for it to run) left that thread unknown to concurrent.futures,
    # which never told it to end, and the exit joined it for ever (a real ``splice add`` of
    # three packages: "interrupted by SIGINT", then a hang until a second ^C). Once per
    # tree: a deferral costs tens of microseconds.
    try:
        with signals_deferred():
            for relative, content in files.items():
                path = directory.joinpath(*relative.split("/"))
                if path.parent not in directories:
                    below = path.relative_to(directory).parents[:-1]  # "a/b", "a" of "a/b/c.js"
                    for parent in reversed(below):
                        (directory / parent).mkdir(mode=dir_mode, exist_ok=True)
                    directories.update(directory / parent for parent in below)
                with open(path, "xb", opener=new_file) as handle:
                    handle.write(content)
                pending.append(pool.submit(_fsync_path, str(path)))
            pending += [pool.submit(_fsync_path, str(d)) for d in directories]
    finally:
        wait(pending)  # none still runs when the caller deletes the tree after a failure
    for done in pending:
        done.result()  # the first failure, if any


def fsync_all(paths: Iterable[str]) -> None:
    """Make each of ``paths`` durable (files, or directories for the names made in them),
    the fsyncs side by side on ``write_tree``'s pool: concurrent fsyncs share the file
    system's journal commits. The first failure is raised once none still runs."""
    from concurrent.futures import wait

    from splice_build.stopping import signals_deferred

    pool = _fsync_pool()
    pending: list[Future[None]] = []
    try:
        with signals_deferred():  # as in write_tree: a stop signal once all are queued
            pending += [pool.submit(_fsync_path, path) for path in paths]
    finally:
        wait(pending)
    for done in pending:
        done.result()


_fsync_executor: ThreadPoolExecutor | None = None
_fsync_executor_lock = _thread.allocate_lock()  # builtin: no import on the no-op path
_FSYNC_THREADS = 16


def _fsync_pool() -> ThreadPoolExecutor:
    """One pool for the process (``sync -j`` installs share it), its threads started on
    first use; ``concurrent.futures`` is imported only then, never on the no-op path."""
    global _fsync_executor
    from concurrent.futures import ThreadPoolExecutor

    with _fsync_executor_lock:
        if _fsync_executor is None:
            _fsync_executor = ThreadPoolExecutor(_FSYNC_THREADS, thread_name_prefix="fsync")
        return _fsync_executor


def _forget_fsync_pool() -> None:
    """In a child of ``fork`` (``multiprocessing``'s default start method on Linux): the
    parent's pool is not the child's. Its threads do not exist there, but the pool still
    counts the idle ones: the child's first writes, no more of them than that count, were
    queued for threads that never ran them, and ``write_tree`` waited for ever (a child
    adding @splice/example after its parent installed a package of 40 files hung in its
    first ``add``). The child makes a pool of its own on first use."""
    global _fsync_executor, _fsync_executor_lock
    _fsync_executor = None
    _fsync_executor_lock = _thread.allocate_lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_fsync_pool)


def _fsync_path(path: str) -> None:
    if sys.platform == "win32":
        if os.path.isdir(path):
            return  # see fsync_directory
        access = os.O_RDWR  # FlushFileBuffers needs a handle open for writing there
    else:
        access = os.O_RDONLY
    # Never follow a link, never wait on a FIFO put there: the tree's digest is checked next.
    flags = access | _O_BINARY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_directory(directory: Path) -> None:
    """Make a rename or unlink inside ``directory`` durable (a no-op where unsupported)."""
    if sys.platform == "win32":
        return  # directories cannot be opened for fsync on Windows; NTFS journals renames
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
