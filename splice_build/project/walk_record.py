"""The walks below grants a no-op ``splice sync`` (or ``splice install``) trusted, kept for
the next one.

Each cold ``splice sync`` listed every directory below every member's ``fs`` grant to find a
project there (spec/project_below.py): 60 grants of one subdirectory each cost a no-op of
30 members ~6 ms. The walks that found none are kept in ``<root>/.splice/walks.json`` with
each directory's device, inode and change time; the next no-op ``stat``s those directories
and lists again only below one that changed. It is a cache: unreadable, of another shape or
version, it is ignored and written anew; ``--check`` reads it and writes nothing, and so do
the checks of a run (``splice run``, a ``splice mcp`` call, ``Splice.run``: the project's
own record, ``recorded_walks``). A record made elsewhere (shipped in a checkout) cannot
name the inodes and change times of the directories here, so it is never trusted; nor is
one another user made or may write (a walk that leaves out a directory is trusted for what
it lists, and another user can ``stat`` this user's directories), so the record is this
user's alone (mode 0600). Each walk says whether it looked for ``.git`` too (a write
grant's), as the process's own do.

The record keeps the git index reads the run trusted too (spec/git_links.py: a 50,000-file
index holding a submodule costs ~60 ms to read), each with the device, inode, size,
modification and change time of the index it was read from: the next run ``stat``s the
index and reads it again when any of them differs.
"""

from __future__ import annotations

import functools
import json
import stat
from pathlib import Path

from splice_build.file_keys import CHANGE_FIELDS
from splice_build.project.layout import STATE_DIR
from splice_build.spec.limits import MAX_PROJECT_STATE_BYTES
from splice_build.spec.project_state import IndexRead, Recorded, Walked, WalkKey, Walks

RECORD_FILE = "walks.json"
# 2: each walk says whether it looked for .git; 3: and for a bare repository; 4: index reads,
# and walks that looked for HEAD with commondir and refused a path too long to name
_VERSION = 4
_IDENTITY_FIELDS = len(CHANGE_FIELDS)  # an index's change_key


def recorded_walks(root: Path) -> Walks:
    """The record of ``root``'s ``.splice/``, read when a check first misses the process's
    own walks and index reads: a run's checks trust it as a no-op's, writing nothing."""
    return Walks(functools.partial(read_record, root))


def read_record(root: Path) -> Recorded:
    """The walks and the index reads recorded in ``root``'s ``.splice/``; neither when
    there are none or any field is not of its shape."""
    from splice_build.spec.regular_file import read_regular_file_and_stat, this_user

    try:
        data, info = read_regular_file_and_stat(
            root / STATE_DIR / RECORD_FILE, MAX_PROJECT_STATE_BYTES, owner=this_user(), follow=False
        )
        body = json.loads(data)
    except (OSError, ValueError, RecursionError):
        return {}, {}
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return {}, {}  # another user could have left out the directory holding a project
    if not isinstance(body, dict) or body.get("version") != _VERSION:
        return {}, {}
    walks, indexes = body.get("walks"), body.get("indexes")
    if not isinstance(walks, list) or not isinstance(indexes, list):
        return {}, {}
    if not all(map(_is_index_read, indexes)):
        return {}, {}
    found: dict[WalkKey, Walked] = {}
    for walk in walks:
        if not _is_walk(walk):
            return {}, {}
        top, repositories, listed = walk
        if listed[0][0] != top:  # a walk lists its top first (spec/project_below.py _walk)
            return {}, {}
        found[top, repositories] = tuple(map(tuple, listed))
    return found, {path: (tuple(identity), tuple(links)) for path, identity, links in indexes}


def _is_walk(walk: object) -> bool:
    """``[top, looked for .git, [entry, …]]``."""
    return (
        isinstance(walk, list)
        and len(walk) == 3
        and isinstance(walk[0], str)
        and type(walk[1]) is bool
        and isinstance(walk[2], list)
        and bool(walk[2])
        and all(map(_is_entry, walk[2]))
    )


def _is_entry(entry: object) -> bool:
    """``[path, device, inode, change time]``."""
    return (
        isinstance(entry, list)
        and len(entry) == 4
        and isinstance(entry[0], str)
        and all(type(number) is int for number in entry[1:])
    )


def _is_index_read(read: object) -> bool:
    """``[index path, [device, inode, size, modification time, change time], [gitlink, …]]``."""
    return (
        isinstance(read, list)
        and len(read) == 3
        and isinstance(read[0], str)
        and isinstance(read[1], list)
        and len(read[1]) == _IDENTITY_FIELDS
        and all(type(number) is int for number in read[1])
        and isinstance(read[2], list)
        and all(isinstance(link, str) for link in read[2])
    )


def write_walks(
    root: Path,
    walks: dict[WalkKey, Walked],
    recorded: dict[WalkKey, Walked],
    indexes: dict[str, IndexRead] | None = None,
    recorded_indexes: dict[str, IndexRead] | None = None,
) -> None:
    """Keep ``walks`` and ``indexes`` (those this run trusted) unless ``recorded`` and
    ``recorded_indexes`` hold exactly them, as a cache (project/state_dir.py
    ``write_cache``)."""
    indexes = indexes or {}
    if walks == recorded and indexes == (recorded_indexes or {}):
        return
    from splice_build.project.state_dir import write_cache

    body = {
        "version": _VERSION,
        "walks": [
            [top, repositories, list(map(list, w))] for (top, repositories), w in walks.items()
        ],
        "indexes": [
            [path, list(identity), list(links)] for path, (identity, links) in indexes.items()
        ],
    }
    write_cache(root, RECORD_FILE, json.dumps(body).encode("utf-8"), mode=0o600)
