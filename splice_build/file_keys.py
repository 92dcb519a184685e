"""What a file's ``stat`` tells: which file it is, and whether it changed since it was seen.

Three keys, each for one question; every caller that asks one of them takes its key here, so
that a field one of them needs is never left out of another (runtime/runtime.py's record of
write grants once compared no change time, and missed a record rewritten in place with its
modification time set back).

- :func:`same_file`: device and inode, the one file system object a path or descriptor
  reaches. Two names of one file (hard links) give the same key; a rename or a file made in
  another's place gives another. It says nothing of the bytes.
- :func:`file_identity`: device, inode and change time, a file of this machine as it has
  been since it last changed. A checkout can ship a file's text, never the inode and change
  time its copy gets here, so a memo kept on disk may name a file by it (it is compared with
  what is read as well). Any write, ``chmod``, ``chown``, ``utime`` or rename sets the
  change time to the file system's now, and no process sets it back (where the kernel alone
  sets it: spec/change_times.py).
- :func:`change_key`: git's index check (``git help format-index``: device, inode, size,
  modification and change time), whether a file read before may be trusted as read. The
  change time alone may miss a second change within its clock tick (a few milliseconds);
  the size catches most of those, and the modification time what the change time misses
  where a file system keeps none (FAT and FUSE give the modification time for it). A caller
  whose reading depends on more (the owner, the mode) adds that field beside it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from operator import attrgetter

SameFile = tuple[int, int]  # st_dev, st_ino
FileIdentity = tuple[int, int, int]  # st_dev, st_ino, st_ctime_ns
ChangeKey = tuple[int, int, int, int, int]  # st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns

# The fields of :func:`change_key`, in its order (install/statcache.py packs them with the
# mode, read in C: it takes one for every installed file on each no-op sync).
CHANGE_FIELDS = ("st_dev", "st_ino", "st_size", "st_mtime_ns", "st_ctime_ns")
_change_key: Callable[[os.stat_result], ChangeKey] = attrgetter(*CHANGE_FIELDS)


def same_file(info: os.stat_result) -> SameFile:
    """The file system object ``info`` is of: its device, and its inode on that device."""
    return info.st_dev, info.st_ino


def same_file_at(path: str | os.PathLike[str]) -> SameFile | None:
    """:func:`same_file` of what ``path`` names now (links followed); None when nothing is
    there, or it cannot be looked at."""
    try:
        return same_file(os.stat(path))
    except (OSError, ValueError):  # ValueError: a NUL in the path, which names nothing
        return None


def file_identity(info: os.stat_result) -> FileIdentity:
    """Which file this is on this machine, and since when it holds its bytes."""
    return info.st_dev, info.st_ino, info.st_ctime_ns


def change_key(info: os.stat_result) -> ChangeKey:
    """What tells one state of a file from another (the module docstring says why each
    field is there)."""
    return _change_key(info)


def change_key_at(path: str | os.PathLike[str]) -> ChangeKey | None:
    """:func:`change_key` of what ``path`` names now (links followed); None when nothing is
    there, or it cannot be looked at."""
    try:
        return _change_key(os.stat(path))
    except (OSError, ValueError):
        return None
