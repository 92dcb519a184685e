"""Whether a registry's data directory (``--data``) is out of strangers' reach.

Whoever can write the data directory is the registry's admin (docs/registry.md): it holds
``registry.db``, its users, tokens and owners, and the artifacts. A data directory in a
directory every user may write (``/srv/shared/registry``, not sticky) was theirs to rename
away and replace with a store of their own: uid 65534 moved it aside, put back a copy of
``registry.db`` naming a user of theirs, and the next ``registry admin`` or server opened it.

So the data directory, when it exists, must be owned by this user or root and not writable
by every user, and in every directory above it (by the path given and its real path) nobody
but this user, root and a group may rename the entry on the way: a directory owned by this
user or root, not writable by every user unless sticky (``/tmp``) with the entry this user's
or root's. A group's write is allowed: a team that shares the store's directory shares its
administration, as a group-writable parent gives the group write on what Splice makes there
(project/creation_modes.py).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from splice_build.project.paths_above import entries_above


def data_problem(data: Path) -> str | None:
    """Why a user other than this one, root or a group may replace what ``data`` holds, or
    None (module docstring)."""
    if getattr(os, "geteuid", None) is None:
        return None  # a platform without uids
    trusted = (os.geteuid(), 0)
    real = os.path.realpath(data)
    try:
        info = os.stat(real)
    except FileNotFoundError:
        pass  # registry serve makes it, closed to others (creation_modes.make_directories)
    except OSError as exc:
        return f"it cannot be examined ({exc.strerror or exc})"
    else:
        if info.st_uid not in trusted:
            return f"it is owned by user {info.st_uid}"
        if info.st_mode & stat.S_IWOTH:
            return "every user may write it"
    for directory, path in entries_above(data):
        problem = _renamer(directory, path, trusted)
        if problem is not None:
            return f"another user may replace {path} ({problem})"
    return None


def _renamer(directory: str, path: str, trusted: tuple[int, int]) -> str | None:
    """Why a user outside ``trusted`` and the groups may rename ``path`` in ``directory``."""
    try:
        above = os.stat(directory)
    except FileNotFoundError:
        return None  # made by registry serve
    except OSError as exc:
        return f"{directory} cannot be examined: {exc.strerror or exc}"
    if above.st_uid not in trusted:
        return f"{directory} is owned by user {above.st_uid}"
    if not above.st_mode & stat.S_IWOTH:
        return None
    if not above.st_mode & stat.S_ISVTX:
        return f"every user may write {directory}"
    try:
        owner = os.lstat(path).st_uid
    except FileNotFoundError:
        return None  # made by registry serve, this user's
    except OSError as exc:
        return f"{path} cannot be examined: {exc.strerror or exc}"
    return None if owner in trusted else f"{path} is user {owner}'s, in the sticky {directory}"
