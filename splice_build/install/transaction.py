"""Swapping installed directories and ``splice.lock`` as one crash-safe change.

docs/architecture.md#invariants, 8. A directory and a file cannot be replaced by one rename, so a change
is a small journaled transaction (``.splice/tmp/journal.json``):

1. the new package files are complete in a staging directory (``.splice/tmp/<name>-<12 hex>``);
2. the journal is written atomically: the swaps, the lock after the change and the
   ``splice.json`` ranges it sets or drops;
3. each old directory is renamed to its backup (``…-previous``), each staged one into place;
4. ``splice.lock`` is written atomically: **the commit point**;
5. the ranges are applied to ``splice.json`` as it is then; backups and the journal are
   deleted.

The journal holds the range changes, never a copy of ``splice.json``: between a crash and the
recovery the file may be edited by hand (another range, ``requireSignatures``), and a checkout
may ship a journal of its own; writing back a stored copy would silently undo the one and let
the other replace a reviewed ``splice.json``. A change is a package id and its range, or null
for a removed package, each checked as ``splice.json`` itself is.

:func:`recover` (run under the project lock before any state is read or changed) finishes or
undoes a transaction a crash interrupted (and deletes staging copies of an install killed
before its journal was written): if ``splice.lock`` already says what the journal
wanted, the swaps are completed (roll forward), otherwise undone (roll back). Every step of
both directions can itself be interrupted and re-run. A failure inside :func:`apply` before
the commit point rolls back at once and re-raises; one after it (``splice.lock`` renamed into
place, then the fsync of its directory failed) is never undone: the journal stays for the
next command's recovery to finish, as after a crash.

The journal names each swap by its package id and its staging token, never by a path: a
project is often someone else's checkout, and a journal in it is input like any other. The
paths are rebuilt from the layout (``Swap.build``), so no journal can make a recovery rename
or delete anything but the project's own package directories and staging copies; a journal
of any other shape is refused (``NOT_WRITABLE``, remove ``.splice/tmp``). Links inside
``.splice/`` are refused before the lock is taken (project/state_dir.py).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import stat
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

from splice_build.file_keys import same_file
from splice_build.project.atomic import (
    atomic_write_json,
    decode_json,
    fsync_directory,
    make_dirs,
    remove_stale_temps,
)
from splice_build.project.creation_modes import dir_mode_in
from splice_build.project.layout import ProjectLayout
from splice_build.project.lockfile import Lockfile, load_lockfile, save_lockfile
from splice_build.project.project_file import (
    load_project_file,
    range_change_problems,
    save_project_file,
)
from splice_build.project.state_dir import state_lock
from splice_build.records import dataclass
from splice_build.spec.limits import MAX_PROJECT_STATE_BYTES
from splice_build.spec.regular_file import read_regular_file

JOURNAL = "journal.json"


_TOKEN = re.compile(r"[0-9a-f]{12}")
_SWAP_KEYS = frozenset({"package", "token", "install"})
_JOURNAL_KEYS = frozenset({"swaps", "lock", "ranges"})
# A read failing for lack of descriptors or memory says nothing about the journal.
_PROCESS_LIMIT_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM})


def _staging_token() -> str:
    """12 random hex digits naming a staging directory (``os.urandom``, as ``secrets`` does:
    importing ``secrets`` loads OpenSSL's hashlib, which the no-op fast path never needs)."""
    return os.urandom(6).hex()


@dataclass(frozen=True)
class Swap:
    """One package directory change: install ``staged`` at ``final`` (None: remove ``final``).

    Built only by :meth:`build`, from the package id and the staging token: the three paths
    follow from those and the layout."""

    package_id: str
    token: str
    final: Path
    backup: Path
    staged: Path | None

    @classmethod
    def build(cls, layout: ProjectLayout, package_id: str, token: str, install: bool) -> Swap:
        """Raises ``SpecError(INVALID_NAME)`` for a bad id, ``ValueError`` for a bad token."""
        if _TOKEN.fullmatch(token) is None:
            raise ValueError(f"not a staging token: {token!r}")
        final = layout.package_dir(package_id)
        staged = layout.tmp_dir / f"{final.name}-{token}"
        backup = staged.with_name(staged.name + "-previous")
        return cls(package_id, token, final, backup, staged if install else None)

    def to_json(self) -> dict[str, str | bool]:
        return {"package": self.package_id, "token": self.token, "install": self.staged is not None}

    @classmethod
    def from_json(cls, layout: ProjectLayout, value: object) -> Swap:
        """The swap a journal names; ``ValueError`` (or ``SpecError``) for any other shape."""
        if not isinstance(value, dict) or value.keys() != _SWAP_KEYS:
            raise ValueError("a swap is not {package, token, install}")
        package_id, token, install = value["package"], value["token"], value["install"]
        if not (isinstance(package_id, str) and isinstance(token, str)):
            raise ValueError("a swap's package and token are not text")
        if not isinstance(install, bool):
            raise ValueError("a swap's install is not true or false")
        return cls.build(layout, package_id, token, install)


def staging_dir(layout: ProjectLayout, package_id: str) -> Path:
    """A fresh ``.splice/tmp/<name>-<12 hex>`` (created); its backup is ``…-previous``."""
    path = Swap.build(layout, package_id, _staging_token(), install=True).staged
    assert path is not None
    make_dirs(layout.tmp_dir)
    path.mkdir(mode=dir_mode_in(path.parent))
    return path


def discard_staging(layout: ProjectLayout, staged: Path) -> None:
    """Delete a staging copy that will not be installed, and ``.splice/tmp`` once empty."""
    remove_tree(staged)
    with contextlib.suppress(OSError):
        layout.tmp_dir.rmdir()  # only when empty


def swap_for(layout: ProjectLayout, package_id: str, staged: Path | None) -> Swap:
    """The swap installing ``staged`` (made by :func:`staging_dir`), or removing the package
    when None."""
    if staged is None:
        return Swap.build(layout, package_id, _staging_token(), install=False)
    swap = Swap.build(layout, package_id, staged.name.rpartition("-")[2], install=True)
    assert swap.staged == staged, f"{staged} is not a staging directory of {package_id}"
    return swap


def apply(
    layout: ProjectLayout,
    swaps: Sequence[Swap],
    lock_after: Lockfile,
    ranges: Mapping[str, str | None],
    on_commit: Callable[[], None] | None = None,
) -> None:
    """Run steps 2–5 of the module docstring; on any failure roll back and re-raise.

    ``ranges``: the ``splice.json`` packages to set (id → range) or drop (id → None).
    ``on_commit``: run once ``splice.lock`` is committed, while ``.splice/tmp`` is still
    there: a reader whose check fails waits for it to go (sdk.py ``_recovered``), so what is
    written here (the consent record) is read with the lock it goes with."""
    journal = {
        "swaps": [s.to_json() for s in swaps],
        "lock": lock_after.to_json(),
        "ranges": dict(ranges),
    }
    make_dirs(layout.tmp_dir)  # the journal's name must outlive a power cut, and tmp's too
    before = _lock_json(layout)
    atomic_write_json(layout.tmp_dir / JOURNAL, journal)
    try:
        for swap in swaps:
            _forward(swap)
        save_lockfile(layout.root, lock_after)
    except BaseException:
        if before == journal["lock"] or _lock_json(layout) != journal["lock"]:
            _rollback_all(layout, swaps)
        # Else the new lock was renamed into place and only what followed failed (the fsync
        # of its directory): the change is committed, so it is never undone here; the
        # journal stays and the next command's recovery finishes it, as after a crash.
        raise
    if on_commit is not None:
        on_commit()
    _finish(layout, swaps, ranges)


def _lock_json(layout: ProjectLayout) -> object:
    """``splice.lock`` as :func:`recover` compares it with a journal; None when it cannot be
    read (then no lock of ours was renamed into place: what is there is not what we wrote)."""
    from splice_build.errors import SpliceError

    try:
        return load_lockfile(layout.root).to_json()
    except (OSError, SpliceError):
        return None


def recover(layout: ProjectLayout) -> bool:
    """Finish or undo an interrupted transaction; returns True when there was one.

    Call it holding the project lock.
    """
    for written in (layout.lock_file, layout.project_file):
        remove_stale_temps(written)  # not rewritten when the recovery rolls back
    journal = _read_journal(layout)
    if journal is None:
        _drop_leftovers(layout)
        return False
    swaps, lock_after, ranges = journal
    if load_lockfile(layout.root).to_json() == lock_after:
        for swap in swaps:
            _forward(swap)
        _finish(layout, swaps, ranges)
    else:
        _rollback_all(layout, swaps)
    return True


def _read_journal(
    layout: ProjectLayout,
) -> tuple[list[Swap], object, dict[str, str | None]] | None:
    """The journal's swaps, lock and range changes; None when there is no journal.

    ``NOT_WRITABLE`` naming ``.splice/tmp`` when the journal cannot be read or is not one
    this module writes: it is written atomically, so any other shape was put there by
    someone else, and guessing what it meant could only move the wrong files."""
    from splice_build.errors import ErrorCode, ProjectError, SpecError

    path = layout.tmp_dir / JOURNAL

    def refused(why: str) -> ProjectError:
        return ProjectError(
            ErrorCode.NOT_WRITABLE,
            f"{path} {why}; installs keep their journal there",
            hint=f"remove {layout.tmp_dir}; the next install creates it again",
        )

    try:
        journal = decode_json(read_regular_file(path, MAX_PROJECT_STATE_BYTES))
    except FileNotFoundError:
        return None
    except OSError as exc:  # .splice/tmp a file, the journal a FIFO or a directory
        if exc.errno in _PROCESS_LIMIT_ERRNOS:
            raise  # the process's fault, not the journal's: never advise removing it
        raise refused(f"cannot be read ({exc.strerror})") from None
    except ValueError:
        raise refused("is not JSON") from None
    try:
        if not isinstance(journal, dict) or journal.keys() != _JOURNAL_KEYS:
            raise ValueError("not {swaps, lock, ranges}")
        if not isinstance(journal["swaps"], list) or not isinstance(journal["lock"], dict):
            raise ValueError("no list of swaps or no lock")
        ranges = journal["ranges"]
        if not isinstance(ranges, dict) or any(
            range_change_problems(package_id, text) for package_id, text in ranges.items()
        ):
            raise ValueError("range changes that splice.json could not hold")
        swaps = [Swap.from_json(layout, item) for item in journal["swaps"]]
    except (ValueError, SpecError):
        raise refused("is not a journal this version of Splice wrote") from None
    return swaps, journal["lock"], ranges


def _present(path: Path) -> bool:
    """Something is at ``path``, a link included: ``Path.exists`` follows a link, so a
    dangling one in a package's place (a checkout can ship it) was taken for nothing there,
    and the staged copy was then renamed onto it (``ENOTDIR``, an ``INTERNAL_ERROR``)."""
    return os.path.lexists(path)


def _forward(swap: Swap) -> None:
    """Put the new state at ``final`` (idempotent; the old one ends up at ``backup``)."""
    if swap.staged is None:
        if _present(swap.final) and not _present(swap.backup):
            _rename(swap.final, swap.backup)
        elif _present(swap.final):
            remove_tree(swap.final)
        return
    if not _present(swap.staged):
        return  # already moved in
    if _present(swap.final):
        if _present(swap.backup):
            remove_tree(swap.final)
        else:
            _rename(swap.final, swap.backup)
    make_dirs(swap.final.parent)
    _rename(swap.staged, swap.final)


def _rollback(swap: Swap) -> None:
    """Put the old state back at ``final`` (idempotent)."""
    if swap.staged is not None and _present(swap.staged):
        if _present(swap.backup) and not _present(swap.final):
            _rename(swap.backup, swap.final)
        remove_tree(swap.staged)
        return
    if _present(swap.backup):
        if _present(swap.final):
            remove_tree(swap.final)
        _rename(swap.backup, swap.final)
    elif swap.staged is not None:
        # No backup and the staged copy moved in: the package was new; remove it.
        remove_tree(swap.final)


def _rollback_all(layout: ProjectLayout, swaps: Sequence[Swap]) -> None:
    for swap in reversed(swaps):
        _rollback(swap)
    _drop_journal(layout)


def _finish(layout: ProjectLayout, swaps: Sequence[Swap], ranges: Mapping[str, str | None]) -> None:
    if ranges:
        project = load_project_file(layout.root)  # INVALID_PROJECT: the journal waits
        changed = project.with_ranges(ranges)
        if changed.packages != project.packages:
            save_project_file(layout.root, changed)
    for swap in swaps:
        remove_tree(swap.backup)
        _prune_empty(swap.final.parent, layout.packages_dir)
    _drop_journal(layout)


def _drop_journal(layout: ProjectLayout) -> None:
    with contextlib.suppress(FileNotFoundError):
        (layout.tmp_dir / JOURNAL).unlink()
        fsync_directory(layout.tmp_dir)
    with contextlib.suppress(OSError):
        layout.tmp_dir.rmdir()  # only when empty


def _drop_leftovers(layout: ProjectLayout) -> None:
    """Without a journal, anything in ``.splice/tmp`` is a staging copy of a killed install."""
    if layout.tmp_dir.is_dir():
        for leftover in layout.tmp_dir.iterdir():
            remove_tree(leftover)
        _drop_journal(layout)


def _prune_empty(scope_dir: Path, packages_dir: Path) -> None:
    """Remove an empty ``@ns`` dir, then an empty ``packages`` dir (docs/compatibility.md#splice-layout)."""
    for directory in (scope_dir, packages_dir):
        with contextlib.suppress(OSError):
            directory.rmdir()


def _rename(source: Path, target: Path) -> None:
    os.replace(source, target)
    fsync_directory(target.parent)
    if source.parent != target.parent:
        fsync_directory(source.parent)


def remove_tree(path: Path) -> None:
    """Delete a file or directory tree if it exists (links are removed, never followed).

    Every tree deleted here is the project's own: an installed package, its backup or a
    staging copy; but a checkout ships ``.splice/`` too, so it chooses their shape. The walk
    is :func:`_remove_directory`'s, on descriptors and with its own stack: ``shutil.rmtree``
    recurses once per level, and a package tree nested 1,500 deep made the install after its
    commit point fail with ``INTERNAL_ERROR`` (RecursionError), then every later command's
    recovery the same way. A package whose directories were made read-only (``chmod -R a-w``
    of vendored code) is emptied too: its backup is deleted after the commit point, and the
    add would otherwise report a failure it had not had. So each directory is given its
    owner's read, write and search bits before it is emptied."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(mode):
        path.unlink()
    elif _BY_DESCRIPTOR:
        _remove_directory(path)
    else:  # Windows: no descriptor-relative calls, and no directory a user cannot write
        shutil.rmtree(path)


_DIRECTORY = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
_BY_DESCRIPTOR = {os.open, os.rmdir, os.unlink} <= os.supports_dir_fd and os.scandir in (
    os.supports_fd
)


def _remove_directory(path: Path) -> None:
    """Remove the directory ``path`` and everything below it, depth first, each directory
    opened relative to its parent's descriptor (no recursion, no path length limit, no link
    followed: a link is an entry like a file, unlinked).

    One descriptor is open at a time: the walk climbs back through ``..``, checked to be the
    directory it came down from. A descriptor per level kept a tree deeper than the open-file
    limit (1,024 by default) from being removed at all (``EMFILE``). Each directory is listed
    once: listing it again after each subdirectory made a directory of n subdirectories cost
    n²/2 entries read."""
    fd = _open_directory(path, None)
    # One frame a level: the directory's name in its parent, its identity, the
    # subdirectories still to remove.
    stack = [("", same_file(os.fstat(fd)), _empty_but_directories(fd))]
    try:
        while True:
            below = stack[-1][2]
            if below:
                name = below.pop()
                child = _open_directory(name, fd)
                os.close(fd)
                fd = child
                stack.append((name, same_file(os.fstat(fd)), _empty_but_directories(fd)))
                continue
            name = stack.pop()[0]
            if not stack:
                break
            parent = os.open("..", _DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = parent
            if same_file(os.fstat(fd)) != stack[-1][1]:
                raise OSError(errno.ESTALE, f"{path}: a directory moved while it was removed")
            os.rmdir(name, dir_fd=fd)
    finally:
        os.close(fd)
    os.rmdir(path)


def _open_directory(name: str | Path, parent: int | None) -> int:
    """Open a directory to empty it, after giving it ``u+rwx`` (it is deleted anyway)."""
    try:
        fd = os.open(name, _DIRECTORY, dir_fd=parent)
    except PermissionError:
        # No read permission: only a chmod by name can add it (the entry was just listed
        # as a directory; races with other users are out of scope, project/state_dir.py).
        os.chmod(name, stat.S_IRWXU, dir_fd=parent)
        fd = os.open(name, _DIRECTORY, dir_fd=parent)
    mode = stat.S_IMODE(os.fstat(fd).st_mode)
    if mode & stat.S_IRWXU != stat.S_IRWXU:
        os.fchmod(fd, mode | stat.S_IRWXU)
    return fd


def _empty_but_directories(fd: int) -> list[str]:
    """Unlink every entry of the directory ``fd`` that is not a directory; the names of
    those that are."""
    with os.scandir(fd) as entries:
        listed = [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in entries]
    directories = []
    for name, is_directory in listed:
        if is_directory:
            directories.append(name)
        else:
            os.unlink(name, dir_fd=fd)
    return directories


@contextlib.contextmanager
def project_lock(
    layout: ProjectLayout, on_blocked: Callable[[], None] | None = None
) -> Iterator[None]:
    """Refuse links in ``.splice/``, hold the project's lock and finish any transaction a
    crash interrupted."""
    with state_lock(layout, on_blocked):
        recover(layout)
        yield
