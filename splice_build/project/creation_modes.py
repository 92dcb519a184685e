"""The modes Splice asks for (the umask then applies) for the directories and the installed
package files it creates in a project: ``.splice/`` and everything under it, the directory
``splice init`` makes, a write grant's directories; and the directories of a registry's data
store (``registry serve --data``).

Never writable by other users, whatever the umask: under a daemon's umask 0 an installed
package's files were 0666 and its directories 0777, and another user could change a tool's
code between its check and Node reading it. The group gets write access only where the
directory the new entry is made in already gives it to the group the entry will have (the
directory's own when it is setgid, else the process's): a team's group-writable checkout
stays one, and nothing opens to a group the project did not. Under umask 0 with a primary
group every user shares (``users``), a project whose directory is not group-writable gains no
group write; one whose directory is could be renamed away by that group anyway. The group's
write is its ACL group entry's where the directory has an access ACL, and a default ACL
naming a writer the directory does not let write takes the group's write away (its mask
would be theirs: project/posix_acl.py). This is the
rule the check before a run applies (project/state_owner.py ``added_writer``: group write
where the project's directory gives it to that same group), so what Splice makes passes it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


def dir_mode_in(parent: Path) -> int:
    """The mode for a directory made in ``parent``: 0775 or 0755."""
    return 0o775 if _group_may_write_in(parent) else 0o755


def make_directories(path: Path) -> None:
    """``path`` and its missing parents (``mkdir -p``), each made with ``dir_mode_in`` its own
    parent: ``Path.mkdir(parents=True)`` makes the parents 0777 less the umask, and under a
    daemon's umask 0 a registry's data directory (``--data /srv/registry/data``) was
    writable by every user, who is then its admin (docs/registry.md)."""
    missing: list[Path] = []
    while not path.is_dir():
        missing.append(path)
        if path.parent == path:
            break
        path = path.parent
    for directory in reversed(missing):
        try:
            directory.mkdir(mode=dir_mode_in(directory.parent))
        except FileExistsError:
            if not directory.is_dir():
                raise


def file_mode_in(parent: Path) -> int:
    """The mode for a file Splice makes in ``parent``: 0664 or 0644."""
    return 0o664 if _group_may_write_in(parent) else 0o644


def private_mode_in(parent: Path) -> int:
    """The mode for a file made in ``parent`` that only those who may write it need to open:
    0660 or 0600, never others' read. A lock file: ``flock`` asks only for a descriptor, so
    whoever may open one may hold it, and a 0644 ``.splice/state.lock`` let any local user
    stop every sync of the project (project/locking.py). A doit database: SQLite's read lock
    asks only for read access, and a transaction another user held open on a 0644
    ``.splice/graph.sqlite3`` made every ``add`` crash, "database is locked"
    (tasks/graph.py)."""
    return 0o660 if _group_may_write_in(parent) else 0o600


def beyond_private(mode: int, parent: Path) -> int:
    """The group's and others' bits of ``mode`` that ``private_mode_in(parent)`` does not
    give: what a file made before (0644) opens to users who should not open it. One
    without them (0600) costs no look at ``parent``: a no-op sync takes a lock per member."""
    if not mode & 0o077:
        return 0
    return mode & 0o077 & ~private_mode_in(parent)


def _group_may_write_in(parent: Path) -> bool:
    from splice_build.project.posix_acl import default_adds_writers, group_may_write

    try:
        info = os.stat(parent)
    except OSError:
        return False  # the mkdir or open that follows says why
    if not (info.st_mode & stat.S_ISGID or info.st_gid == os.getegid()):
        return False
    return group_may_write(info, parent) and not default_adds_writers(info, parent)
