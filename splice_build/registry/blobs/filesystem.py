"""Filesystem ``BlobStore``: one file per artifact under a root directory.

Writes are atomic and durable: temp file in the target directory, fsync, rename, fsync of
the directory. A reader therefore sees either no file or the complete bytes. Reads take
regular files of at most ``MAX_ARCHIVE_BYTES`` only (publish stores nothing larger): a FIFO
or device in the store, a link to one, or a file too large is refused at once (``OSError``
from a download, as for any unreadable artifact; ``ARTIFACT_STORAGE_FAILED`` from a
publish), never a read that blocks or does not end. A download reads the file a piece at a time
(``reader``), opening it for each piece with the same checks: the store never rewrites a file
in place, so every piece comes from the same bytes, and a file whose size changed since is an
``OSError``.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path

from splice_build.errors import ErrorCode, RegistryError
from splice_build.registry.blobs.interface import BlobReader, conflict, missing
from splice_build.spec.limits import MAX_ARCHIVE_BYTES
from splice_build.spec.paths import is_safe_relative_path
from splice_build.spec.regular_file import READ_FLAGS, read_regular_file


class FilesystemBlobStore:
    backend = "fs"

    def __init__(self, root: Path) -> None:
        self.root = root

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
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, temp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-", suffix=".part")
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data)
                    handle.flush()
                    os.fsync(handle.fileno())
                os.replace(temp, target)
            except BaseException:
                Path(temp).unlink(missing_ok=True)
                raise
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
