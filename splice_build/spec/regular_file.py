"""Reading a file Splice expects to be regular (``splice.json``, ``splice.lock``, state under
``.splice/``, an installed package's files, the artifact cache under ``SPLICE_HOME``) without
ever blocking.

A FIFO put in place of one of them would make a plain ``open`` wait for a writer forever,
with the project lock held. ``O_NONBLOCK`` makes that open return at once; the file is then
refused as what it is (not a regular file), through the caller's own "cannot be read" error.
A caller that knows how large the file may be passes ``limit``: a link to a huge file (or a
file that keeps growing) is then refused with at most ``limit + 1`` bytes read, never read
into memory whole. A caller that trusts only the user's own files (provider keys) passes
``owner``: a file another user made (a ``.env`` left in ``/tmp``) is refused as well.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

# Binary on Windows (no newline translation); no O_NONBLOCK there, and no FIFO either.
READ_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_BINARY", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


def this_user() -> int | None:
    """The ``owner`` to pass for a file only this user (or root) may have made; None on a
    platform without uids (Windows), where there are no owners to compare."""
    return os.geteuid() if hasattr(os, "geteuid") else None


def read_regular_file(path: Path, limit: int | None = None, *, owner: int | None = None) -> bytes:
    """The bytes of the regular file at ``path`` (links followed, as ``Path.read_bytes``);
    see :func:`read_regular_file_and_stat`."""
    return read_regular_file_and_stat(path, limit, owner=owner)[0]


def read_regular_file_and_stat(
    path: Path, limit: int | None = None, *, owner: int | None = None, follow: bool = True
) -> tuple[bytes, os.stat_result]:
    """The bytes of the regular file at ``path`` and the ``fstat`` of the very descriptor
    they were read from (links followed, as ``Path.read_bytes``).

    Raises ``FileNotFoundError`` when it is missing and ``OSError`` (``EINVAL``, "not a
    regular file") for a FIFO, a device, a socket or a directory. With ``limit``, a file of
    more than ``limit`` bytes is ``OSError`` (``EFBIG``), and at most ``limit + 1`` bytes are
    ever read, even from a file that grows while it is read. With ``owner`` (a uid), a file
    owned by anyone but that user or root is ``OSError`` (``EPERM``), decided on the opened
    file itself. ``follow=False``: a link at ``path`` itself is ``OSError`` (``ELOOP``,
    ``O_NOFOLLOW``)."""
    fd = os.open(path, READ_FLAGS if follow else READ_FLAGS | getattr(os, "O_NOFOLLOW", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        if owner is not None and info.st_uid not in (owner, 0):
            raise OSError(errno.EPERM, "owned by another user", str(path))
        if limit is not None and info.st_size > limit:
            raise _too_large(path, limit)
        data = _read_to_end(fd, info.st_size, limit)
        if limit is not None and len(data) > limit:
            raise _too_large(path, limit)
        return data, info
    finally:
        os.close(fd)


def _read_to_end(fd: int, size: int, limit: int | None) -> bytes:
    """Everything from ``fd`` (``size`` bytes by its ``fstat``), or ``limit + 1`` bytes."""
    # One read sized past the end: a short read of a regular file is its end.
    want = size + 1
    chunks = []
    total = 0
    while True:
        if limit is not None:
            want = min(want, limit + 1 - total)
        chunk = os.read(fd, want)
        chunks.append(chunk)
        total += len(chunk)
        if len(chunk) < want or (limit is not None and total > limit):
            return b"".join(chunks)
        want = 1 << 20  # it grew since the fstat: read on to its end


def _too_large(path: Path, limit: int) -> OSError:
    return OSError(errno.EFBIG, f"larger than {limit} bytes", str(path))
