"""Reading a file Splice expects to be regular (``splice.json``, ``splice.lock``, state under
``.splice/``, an installed package's files) without ever blocking.

A FIFO put in place of one of them would make a plain ``open`` wait for a writer forever,
with the project lock held. ``O_NONBLOCK`` makes that open return at once; the file is then
refused as what it is (not a regular file), through the caller's own "cannot be read" error.
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


def read_regular_file(path: Path) -> bytes:
    """The bytes of the regular file at ``path`` (links followed, as ``Path.read_bytes``).

    Raises ``FileNotFoundError`` when it is missing and ``OSError`` (``EINVAL``, "not a
    regular file") for a FIFO, a device, a socket or a directory."""
    fd = os.open(path, READ_FLAGS)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        # One read sized past the end: a short read of a regular file is its end.
        want = info.st_size + 1
        chunks = []
        while True:
            chunk = os.read(fd, want)
            chunks.append(chunk)
            if len(chunk) < want:
                return b"".join(chunks)
            want = 1 << 20  # it grew since the fstat: read on to its end
    finally:
        os.close(fd)
