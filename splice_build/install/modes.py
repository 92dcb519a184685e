"""``splice install``/``sync`` take write access to an installed package from other users.

A package installed under a daemon's umask 0 before Splice stopped opening what it makes to
other users (project/creation_modes.py) is 0666/0777: every call of its tools
is then refused (``INSTALLED_PACKAGE_MODIFIED``, install/installed.py
``refuse_other_writers``), since another user could change its code between the check and
Node reading it. The graph's ``verify`` task closes ``.splice``, ``.splice/packages`` and
the scope's directory with ``chmod`` when this user owns them, and has a package whose own
tree another user may write installed again: a ``chmod`` does not take back a descriptor
that user opened for writing while the file was open to them, a new copy has new inodes.
It runs only when the graph runs, never on the no-op path (tasks/noop.py judges those
directories, and each installed entry that is not this user's alone, by the same rule,
and runs the graph when one is open).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from splice_build.install.installed import chain_to, other_writers
from splice_build.project.layout import ProjectLayout


def open_entries(layout: ProjectLayout, package_id: str) -> list[tuple[str, str]]:
    """``(path, why)`` of what ``refuse_other_writers`` would refuse for the package's tree
    as it lies now (each entry's ``lstat``); a tree no package can be is the digest's to
    refuse, not this."""
    from splice_build.spec.tree_digest import NotAPackageTree, package_files

    directory = layout.package_dir(package_id)
    stats: list[tuple[str, os.stat_result]] = []
    walked: dict[str, os.stat_result] = {}
    try:
        for _, entry in package_files(os.fspath(directory), walked):
            stats.append((entry.path, entry.stat(follow_symlinks=False)))
    except (NotAPackageTree, OSError):
        return []
    stats.extend((os.path.join(directory, rel), info) for rel, info in walked.items())
    return other_writers(layout, package_id, stats)


def close_modes(layout: ProjectLayout, package_id: str) -> list[tuple[str, str]]:
    """Take others' write (then a group's, when that still counts) from ``.splice``,
    ``.splice/packages`` and the package's scope directory where this user owns them and
    another user may write them; what is left open afterwards, the package's own tree
    included (installed again by the caller). The project's directory is the user's own to
    mend: never changed here."""
    found = open_entries(layout, package_id)
    if not found or getattr(os, "geteuid", None) is None:
        return found
    ours = {str(path) for path in chain_to(layout, package_id)[1:]}
    changed = False
    for path, _ in found:
        if path not in ours:
            continue
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue  # gone, or a link put in its place: the check refuses what is left
        try:
            info = os.fstat(fd)
            if info.st_uid != os.geteuid():
                continue
            mode = stat.S_IMODE(info.st_mode) & ~stat.S_IWOTH
            os.fchmod(fd, mode)
            changed = True
            if _still_open(layout, fd, Path(path)):
                os.fchmod(fd, mode & ~stat.S_IWGRP)
        except OSError:
            continue
        finally:
            os.close(fd)
    return open_entries(layout, package_id) if changed else found


def _still_open(layout: ProjectLayout, fd: int, path: Path) -> bool:
    from splice_build.project.state_owner import added_writer

    return added_writer(os.fstat(fd), path, os.stat(layout.root), layout.root) is not None
