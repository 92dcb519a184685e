"""The files digest of an installed package, recomputed from the bytes on disk.

docs/compatibility.md#files-digest and docs/architecture.md#invariants, 3: every regular file under the package directory
counts, hidden files and ``node_modules`` included (a verified artifact holds neither, so any
added file changes the digest). A symbolic link or any other non-regular entry, a file larger
than a package file may be, or more files than a package may hold, makes the digest ``None``,
which never equals a recorded digest (and nothing of such a file is read).
Nothing here looks at modification times: every call reads every byte.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

from splice_build.spec.digests import files_digest_from_hashes, new_sha256
from splice_build.spec.limits import MAX_FILE_BYTES, MAX_FILES
from splice_build.spec.regular_file import READ_FLAGS

_CHUNK = 1024 * 1024


class NotAPackageTree(Exception):
    """The tree holds something a verified package cannot contain."""


def hash_package_file_and_stat(path: str) -> tuple[str, os.stat_result]:
    """Hex SHA-256 of the regular file at ``path`` (``NotAPackageTree`` for anything else)
    with the ``fstat`` of the descriptor it read: the stat cache records the two together
    (install/statcache.py), the check before a run looks at who may write it
    (install/installed.py)."""
    # O_NOFOLLOW: the entry was a regular file when listed; refuse it if it became a link.
    # READ_FLAGS: nor wait on a FIFO put in its place (refused below as no regular file).
    fd = os.open(path, READ_FLAGS | getattr(os, "O_NOFOLLOW", 0))
    try:
        info = os.fstat(fd)
        # Larger than any file of an artifact (spec/entry_rules.py): it can never match, and a
        # sparse file of a terabyte would hold every check for an hour.
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:
            raise NotAPackageTree(path)
        # One read sized to a small file (os.read allocates what it is asked for); large
        # files go in 1 MiB reads. A short read of a regular file is its end.
        want = min(info.st_size + 1, _CHUNK)
        digest = new_sha256(info.st_size)
        while True:
            chunk = os.read(fd, want)
            digest.update(chunk)
            if len(chunk) < want:
                break
    finally:
        os.close(fd)
    return digest.hexdigest(), info


def package_files(
    directory: str, directories: dict[str, os.stat_result] | None = None
) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """``(relative path, entry)`` of every file under ``directory``: the one walk of a
    package tree. ``NotAPackageTree`` for a link or anything but a directory or file, and
    past ``MAX_FILES`` files.

    ``directories``, when given, receives the ``lstat`` of every directory walked (``""`` for
    ``directory`` itself, else its relative path), taken *before* it is listed: a change to
    its entries after the listing then gives it a later ``ctime`` than the one recorded."""
    count = 0
    stack = [(directory, "")]
    while stack:
        current, base = stack.pop()
        if directories is not None:
            directories[base[:-1]] = os.lstat(current)
        with os.scandir(current) as entries:
            for entry in entries:
                relative = base + entry.name
                # The type comes from the directory listing (no stat call); links are neither.
                if entry.is_dir(follow_symlinks=False):
                    stack.append((entry.path, relative + "/"))
                elif entry.is_file(follow_symlinks=False):
                    count += 1
                    if count > MAX_FILES:
                        raise NotAPackageTree(entry.path)
                    yield relative, entry
                else:
                    raise NotAPackageTree(entry.path)


def tree_hashes(
    directory: Path | str, stats: list[tuple[str, os.stat_result]] | None = None
) -> dict[str, str] | None:
    """``relative path -> hex sha256`` of every file, or None for a tree no package can be
    (``directory`` may be text such as ``/proc/self/fd/N/.``, which a ``Path`` would cut to
    the link itself). ``stats``, when given, receives ``(path, stat)`` of every file read
    (its descriptor's ``fstat``) and every directory listed (its ``lstat``, taken before
    the listing): who may change what was hashed (install/installed.py)."""
    hashes: dict[str, str] = {}
    directories: dict[str, os.stat_result] | None = None if stats is None else {}
    try:
        if not stat.S_ISDIR(os.lstat(directory).st_mode):
            return None
        for relative, entry in package_files(os.fspath(directory), directories):
            hashes[relative], info = hash_package_file_and_stat(entry.path)
            if stats is not None:
                stats.append((entry.path, info))
    except (NotAPackageTree, FileNotFoundError, NotADirectoryError):
        return None
    if stats is not None and directories is not None:
        stats.extend((os.path.join(directory, rel), info) for rel, info in directories.items())
    return hashes


def tree_digest(directory: Path | str) -> str | None:
    """The files digest of ``directory`` read from bytes, or None (missing, links, specials)."""
    hashes = tree_hashes(directory)
    return None if hashes is None else files_digest_from_hashes(hashes)
