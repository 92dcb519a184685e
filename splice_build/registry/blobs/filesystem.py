"""Filesystem ``BlobStore``: one file per artifact under a root directory.

Writes are atomic and durable: temp file, fsync, rename into place, fsync of the target's
directory. A reader therefore sees either no file or the complete bytes. The temp files live
in one directory, ``PARTS``, each locked (``flock``) by its writer from its creation until it
is renamed: a write that was killed leaves its file unlocked, and opening the store removes
the files of ``PARTS`` it can lock (``sweep_parts``), never one another writer still holds,
whichever process or worker it is. Splice before that wrote its temp files unlocked beside
the artifact (``packages/<ns>/<name>/<version>/.tmp-<random>.part``): nothing tells a killed
write of those from one an older server sharing the store is still making, but such a write
takes seconds, so ``sweep_legacy_parts`` removes those last modified more than
``LEGACY_PART_SECONDS`` ago, until a walk finds none left (then ``LEGACY_SWEPT`` is written
and later opens look no further: the walk reads every version's directory; a store this
process cannot write is not walked). Reads take
regular files of at most ``MAX_ARCHIVE_BYTES`` only (publish stores nothing larger): a FIFO
or device in the store, a link to one, or a file too large is refused at once (``OSError``
from a download, as for any unreadable artifact; ``ARTIFACT_STORAGE_FAILED`` from a
publish), never a read that blocks or does not end. A download reads the file a piece at a time
(``reader``), opening it for each piece with the same checks: the store never rewrites a file
in place, so every piece comes from the same bytes, and a file whose size changed since is an
``OSError``.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import stat
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from splice_build.errors import ErrorCode, RegistryError
from splice_build.file_keys import same_file
from splice_build.project.creation_modes import make_directories
from splice_build.registry.blobs.interface import BlobReader, conflict, missing
from splice_build.spec.limits import MAX_ARCHIVE_BYTES
from splice_build.spec.paths import is_safe_relative_path
from splice_build.spec.regular_file import READ_FLAGS, read_regular_file

PARTS = ".parts"  # below the root, beside ``packages/`` (no key starts with a dot)
# flock errors of a file system without such locks: there the writers write unlocked, and the
# sweep, which removes only what it could lock, removes nothing
_NO_LOCKS = frozenset({errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EINVAL})
# The temp files of older versions: ``tempfile.mkstemp(prefix=".tmp-", suffix=".part")`` in
# the artifact's own directory, three levels below ``packages/``.
_LEGACY_PART = re.compile(r"\.tmp-[a-z0-9_]{8}\.part")
LEGACY_PART_SECONDS = 24 * 3600  # a write takes seconds; a day leaves room for clock skew
LEGACY_SWEPT = ".legacy-parts-swept"  # in the root: no legacy temp file was left at a sweep


class FilesystemBlobStore:
    backend = "fs"

    def __init__(self, root: Path) -> None:
        self.root = root
        sweep_parts(root / PARTS)
        sweep_legacy_parts(root)

    def _path(self, key: str) -> Path:
        if not is_safe_relative_path(key, allow_dot=False):
            raise AssertionError(f"BUG: unsafe artifact key {key!r}")
        return self.root / key

    def put(self, key: str, data: bytes) -> None:
        target = self._path(key)
        try:
            if target.exists():
                if read_regular_file(target, limit=MAX_ARCHIVE_BYTES) != data:
                    raise conflict(key)
                return
            parts = self.root / PARTS
            make_directories(parts)
            fd, temp = _locked_temp(parts)
            try:
                with os.fdopen(fd, "wb", closefd=False) as handle:
                    handle.write(data)
                    handle.flush()
                    os.fsync(handle.fileno())
                make_directories(target.parent)
                os.replace(temp, target)
            except BaseException:
                Path(temp).unlink(missing_ok=True)
                raise
            finally:
                os.close(fd)  # the lock goes with it, once the file is in place or removed
            _fsync_dir(target.parent)
        except OSError as exc:
            raise RegistryError(
                ErrorCode.ARTIFACT_STORAGE_FAILED, f"Could not store artifact {key}: {exc.strerror}"
            ) from exc

    def get(self, key: str) -> bytes:
        try:
            return read_regular_file(self._path(key), limit=MAX_ARCHIVE_BYTES)
        except FileNotFoundError as exc:
            raise missing(key) from exc

    def reader(self, key: str) -> BlobReader:
        path = self._path(key)
        try:
            size = _read_at(path, None, 0, 0)[1]
        except FileNotFoundError as exc:
            raise missing(key) from exc
        return BlobReader(size, lambda offset, count: _read_at(path, size, offset, count)[0])

    def url(self, key: str) -> str | None:
        return None


def _locked_temp(directory: Path) -> tuple[int, str]:
    """A new temp file in ``directory``, open and locked by this writer, and its path.

    A sweep may take the lock of a file just created, before its writer does, and remove it;
    the writer then finds its path naming no file, or another, and makes a new one.
    """
    while True:
        fd, temp = tempfile.mkstemp(dir=directory, suffix=".part")
        try:
            if not _lock(fd, wait=True) or _names(temp, fd):
                return fd, temp
        except BaseException:
            os.close(fd)
            Path(temp).unlink(missing_ok=True)
            raise
        os.close(fd)


def sweep_parts(directory: Path) -> None:
    """Remove the temp files of writes that were interrupted: those of ``directory`` whose
    lock this process can take (a writer holds its file's lock until the file is renamed, and
    the lock ends with the writer's process). Best effort: a store this process cannot write
    keeps them."""
    try:
        entries = list(os.scandir(directory))
    except OSError:  # no write made it yet, or not readable
        return
    for entry in entries:
        try:
            fd = os.open(entry.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            if _lock(fd, wait=False) and _names(entry.path, fd):
                os.unlink(entry.path)
        except OSError:
            pass
        finally:
            os.close(fd)


def sweep_legacy_parts(root: Path) -> None:
    """Remove the temp files older versions left beside the artifacts (the module docstring),
    those last modified more than ``LEGACY_PART_SECONDS`` ago; once a walk leaves none
    behind, write ``LEGACY_SWEPT`` so that later opens skip the walk. Best effort, as
    ``sweep_parts``."""
    marker = root / LEGACY_SWEPT
    if os.path.lexists(marker):
        return
    if not os.access(root, os.W_OK):
        # A store this process cannot write (a read-only mount, another user's store read
        # by the embedded registry): the marker could never be written, so every open
        # walked every version directory (44 ms for 5,000 versions, each command of the
        # CLI), and the temp files, if any, are the writer's to remove.
        return
    old_before = time.time() - LEGACY_PART_SECONDS
    left = 0
    try:
        for version in _version_directories(root / "packages"):
            for entry in os.scandir(version):
                if not _LEGACY_PART.fullmatch(entry.name):
                    continue
                info = entry.stat(follow_symlinks=False)
                if not stat.S_ISREG(info.st_mode):
                    continue  # no temp file (``mkstemp`` makes regular files): not ours
                if info.st_mtime > old_before:
                    left += 1  # a write of an older server may be making it: not yet
                    continue
                with contextlib.suppress(FileNotFoundError):  # another opener took it
                    os.unlink(entry.path)
        if left == 0:
            marker.touch()
    except OSError:  # not readable or not writable: the next open tries again
        return


def _version_directories(packages: Path) -> Iterator[str]:
    """``packages/<ns>/<name>/<version>``: the directories artifacts are written in (no
    link is followed)."""
    try:
        namespaces = list(os.scandir(packages))
    except FileNotFoundError:  # nothing published yet
        return
    for namespace in namespaces:
        if not namespace.is_dir(follow_symlinks=False):
            continue
        for name in os.scandir(namespace.path):
            if not name.is_dir(follow_symlinks=False):
                continue
            for version in os.scandir(name.path):
                if version.is_dir(follow_symlinks=False):
                    yield version.path


def _lock(fd: int, *, wait: bool) -> bool:
    """An exclusive ``flock`` on ``fd``: True when taken, False when this file system has no
    such locks or (``wait=False``) another open file holds it."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError as exc:
        if exc.errno in _NO_LOCKS:
            return False
        raise
    return True


def _names(path: str, fd: int) -> bool:
    """``path`` still names the file open as ``fd``."""
    try:
        named = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    opened = os.fstat(fd)
    return same_file(named) == same_file(opened)


def _read_at(path: Path, size: int | None, offset: int, count: int) -> tuple[bytes, int]:
    """Up to ``count`` bytes at ``offset`` of the regular file at ``path`` and its size, which
    must be ``size`` when given (``OSError`` otherwise, as for anything but a regular file of
    at most ``MAX_ARCHIVE_BYTES``)."""
    fd = os.open(path, READ_FLAGS)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        if info.st_size > MAX_ARCHIVE_BYTES:
            raise OSError(errno.EFBIG, f"larger than {MAX_ARCHIVE_BYTES} bytes", str(path))
        if size is not None and info.st_size != size:
            raise OSError(errno.EIO, f"its size changed from {size} bytes", str(path))
        os.lseek(fd, offset, os.SEEK_SET)
        return os.read(fd, count), info.st_size
    finally:
        os.close(fd)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
