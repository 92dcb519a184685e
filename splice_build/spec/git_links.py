"""The submodules of the git repository a write grant lies in (docs/security.md#grants-and-project-state).

``git status`` in a repository enters each submodule its index lists (a "gitlink", mode
160000) whose directory holds a git directory, and runs ``git status`` there, with that
directory's configuration (``core.fsmonitor``), checked out or not: in a clone made without
``--recursive``, or after ``git submodule deinit``, the submodule is an empty directory. A
tool granted it (or a directory above it) made its ``.git`` during one call, and the user's
next ``git status`` in the project ran the command it named. So a write grant may not hold
a submodule's directory; the index is the record git itself reads (``.gitmodules`` is not:
an embedded repository added without it is a gitlink too).

The index format (``git help format-index``): a ``DIRC`` header, version 2, 3 or 4, the
entries sorted by path, then extensions. The object names are 20 bytes (SHA-1) or 32
(SHA-256) and the index does not say which, so both are tried and every gitlink either
reading finds is kept. An index split in two (``core.splitIndex``: a ``link`` extension)
keeps most entries in another file; it, and an index of any other shape, is reported
unreadable, and the caller refuses the grant (fail closed).

An index read is remembered for the process with its device, inode, size, modification and
change time: git writes a new index and renames it over the old one (another inode), and
any write in place changes the change time, which no process sets back; so a check
``stat``s the index and reads it again only when one of them changed (``splice mcp`` and
one ``Splice`` ask at every call, and a cold ``splice run`` at each of its checks). As for
the walks of spec/project_below.py, an index changed within ``RECENT_NS`` of its read is
not remembered (a second change within the kernel's clock tick keeps the change time). A
no-op ``splice sync`` or ``splice install`` keeps the reads it trusted with its walks
(project/walk_record.py) for the next one and a run's checks, each trusted exactly as a read
of this process.
"""

from __future__ import annotations

import os
import stat
import struct
import time
from pathlib import Path

from splice_build.file_keys import change_key, change_key_at
from splice_build.spec.project_below import RECENT_NS, remember
from splice_build.spec.project_state import REPOSITORY_DIR, IndexRead, Walks
from splice_build.spec.regular_file import read_regular_file, read_regular_file_and_stat

# A larger index (millions of files) is refused as unreadable rather than read whole.
MAX_INDEX_BYTES = 256 * 1024 * 1024
_GITDIR_PREFIX = b"gitdir:"
_SMALL_FILE_BYTES = 64 * 1024
_GITLINK = 0o160000
_HASH_SIZES = (20, 32)
_GITLINK_MODE = struct.pack(">I", _GITLINK)  # as an entry holds it
_SPLIT = b"link"  # the extension of a split index
# The path of each index read -> the file read's ``change_key`` (splice_build/file_keys.py),
# and its gitlinks.
_remembered: dict[str, IndexRead] = {}


class UnreadableIndex(Exception):
    """An index that is there but not one this module reads (its entries unknown)."""


def git_directory(directory: str) -> str | None:
    """The git directory the ``.git`` of ``directory`` is or names (a submodule's or a
    linked worktree's file), as git finds it there; None when there is none."""
    path = os.path.join(directory, REPOSITORY_DIR)
    try:
        info = os.stat(path)  # git follows a link named .git
    except OSError:
        return None
    if stat.S_ISDIR(info.st_mode):
        return path
    if not stat.S_ISREG(info.st_mode):
        return None
    try:
        line = _first_line(path)
    except OSError:
        return None
    if not line.startswith(_GITDIR_PREFIX):
        return None
    named = os.fsdecode(line[len(_GITDIR_PREFIX) :].strip())
    return os.path.normpath(os.path.join(directory, named))


def named_git_directories(directory: str) -> list[str]:
    """The real paths of the git directory the ``.git`` file of ``directory`` names (a
    submodule's, a linked worktree's, one of ``git clone --separate-git-dir``) and of the
    common directory that one names (a linked worktree's: the main checkout's ``.git``,
    whose configuration and hooks git runs there); [] for a ``.git`` directory (it is
    protected by name) or none."""
    named = git_directory(directory)
    if named is None or named == os.path.join(directory, REPOSITORY_DIR):
        return []
    found = [os.path.realpath(named)]
    try:
        common = os.fsdecode(_first_line(os.path.join(named, "commondir")))
    except OSError:
        return found
    if common:
        found.append(os.path.realpath(os.path.join(named, common)))
    return found


def _first_line(path: str) -> bytes:
    """The first line of the small regular file at ``path`` (a ``.git`` file, ``commondir``),
    stripped; OSError for anything else, a FIFO included (it is never waited on)."""
    return read_regular_file(Path(path), _SMALL_FILE_BYTES).split(b"\n", 1)[0].strip()


def gitlinks(git_directory: str, walks: Walks | None = None) -> tuple[str, ...]:
    """The paths (relative to the work tree, ``/``-separated) the index of
    ``git_directory`` lists as submodules; () without an index or with one this user may
    not read (another user's repository above the project: git, run by this user, reads
    it no more and enters no submodule). Raises UnreadableIndex. ``walks``: the index reads
    an earlier run recorded, trusted while the index is unchanged, and those this run
    trusted (a no-op sync's, project/walk_record.py)."""
    path = os.path.join(git_directory, "index")
    # the process's own reads first; the record (read when first asked for) where they miss
    known = _remembered.get(path)
    if known is None and walks is not None:
        known = walks.recorded_indexes.get(path)
    if known is not None and change_key_at(path) == known[0]:
        _trust(path, known, walks)
        return known[1]
    recent = time.time_ns() - RECENT_NS
    try:
        data, info = read_regular_file_and_stat(Path(path), MAX_INDEX_BYTES)
    except (FileNotFoundError, PermissionError):  # git reads none either, nor enters any
        return ()
    except OSError as exc:  # a FIFO never blocks the check (spec/regular_file.py)
        raise UnreadableIndex(f"{path}: {exc.strerror or exc}") from exc
    found = _gitlinks(path, data)
    if max(info.st_mtime_ns, info.st_ctime_ns) < recent:
        _trust(path, (change_key(info), found), walks)
    return found


def _trust(path: str, read: IndexRead, walks: Walks | None) -> None:
    remember(_remembered, path, read, None if walks is None else walks.indexes)


def _gitlinks(path: str, data: bytes) -> tuple[str, ...]:
    """The gitlinks of the index ``data`` read from ``path``; raises UnreadableIndex."""
    if data[:4] == b"DIRC" and _GITLINK_MODE not in data and _SPLIT not in data:
        return ()  # no entry can be a gitlink, nor the index split: a large one read in C
    found: set[str] = set()
    why = "not an index this version of Splice reads"
    read_any = False
    for size in _HASH_SIZES:
        try:
            found.update(_entries(data, size))
        except UnreadableIndex as exc:
            why = str(exc) if size == _HASH_SIZES[0] else why
            continue
        except (struct.error, ValueError, IndexError):  # cut short, or no name's end
            continue
        read_any = True
    if not read_any:
        raise UnreadableIndex(f"{path}: {why}")
    return tuple(sorted(found))


def _entries(data: bytes, hash_size: int) -> list[str]:
    """The gitlinks of ``data`` read with object names of ``hash_size`` bytes."""
    if data[:4] != b"DIRC":
        raise UnreadableIndex("not an index this version of Splice reads")
    version, count = struct.unpack_from(">II", data, 4)
    if version not in (2, 3, 4):
        raise UnreadableIndex(
            f"index version {version}, which this version of Splice does not read"
        )
    offset, previous, found = 12, b"", []
    for _ in range(count):
        (mode,) = struct.unpack_from(">I", data, offset + 24)
        flags_at = offset + 40 + hash_size
        (flags,) = struct.unpack_from(">H", data, flags_at)
        name_at = flags_at + 2 + (2 if flags & 0x4000 and version >= 3 else 0)
        if version == 4:
            strip, name_at = _varint(data, name_at)
            end = data.index(b"\0", name_at)
            if strip > len(previous):
                raise UnreadableIndex("prefix longer than the previous name")
            name = previous[: len(previous) - strip] + data[name_at:end]
            offset = end + 1
        else:
            end = data.index(b"\0", name_at)
            name = data[name_at:end]
            offset += (end - offset + 8) // 8 * 8
            if data[end:offset].strip(b"\0") or offset > len(data):
                raise UnreadableIndex("entry padding")
        if len(name) < 0xFFF and len(name) != flags & 0xFFF:
            raise UnreadableIndex("name length")
        if mode & 0o170000 == _GITLINK:
            found.append(name.decode("utf-8", "surrogateescape"))
        previous = name
    _check_extensions(data, offset, hash_size)
    return found


def _varint(data: bytes, at: int) -> tuple[int, int]:
    """git's offset encoding of a number (index version 4), and where it ends."""
    byte = data[at]
    value, at = byte & 0x7F, at + 1
    while byte & 0x80:
        byte = data[at]
        value, at = ((value + 1) << 7) | (byte & 0x7F), at + 1
    return value, at


def _check_extensions(data: bytes, offset: int, hash_size: int) -> None:
    """The extensions after the entries end exactly at the checksum, and none is ``link``."""
    end = len(data) - hash_size
    while offset < end:
        signature = data[offset : offset + 4]
        (size,) = struct.unpack_from(">I", data, offset + 4)
        if signature == b"link":
            raise UnreadableIndex("a split index (core.splitIndex)")
        offset += 8 + size
    if offset != end:
        raise UnreadableIndex("extensions")
