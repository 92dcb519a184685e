"""Splice never follows a symbolic link inside a project's ``.splice/``.

A project is often a checkout of someone else's repository, and a repository can hold links
anywhere, ``.splice/`` included: a link there (``.splice/tmp`` to a home directory, a scope
directory ``.splice/packages/@acme`` to another project) would turn the clean-up of staging
copies, a package swap or the graph database's writes into changes outside the project.
Every path Splice creates, renames, writes or deletes under ``.splice/`` lies below
``.splice`` itself, one of its entries, or a scope directory of ``.splice/packages``;
:func:`check_state_dir` refuses a link at any of those places before the project lock is
taken. Links deeper down are harmless: an installed package directory that is a link, a
dangling one too, is found modified or missing and replaced or removed without following it
(install/installed.py, install/transaction.py), and staging copies are renamed or removed,
never entered through a link.

Races with another local user are out of scope: ``.splice/`` belongs to the project's owner.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

from splice_build.errors import ErrorCode, ProjectError
from splice_build.project.layout import STATE_DIR, ProjectLayout
from splice_build.project.locking import lock


@contextlib.contextmanager
def state_lock(
    layout: ProjectLayout, on_blocked: Callable[[], None] | None = None
) -> Iterator[None]:
    """Hold the project's lock, after :func:`check_state_dir`: the lock file is created
    inside ``.splice``, so taking it through a linked ``.splice`` would create a file
    elsewhere. Every writer of project state takes the lock here."""
    if not check_state_dir(layout):
        _make_state_dir(layout)  # a no-op sync takes a lock per member, its .splice there
    with lock(layout.state_lock, on_blocked):
        yield


def _make_state_dir(layout: ProjectLayout) -> None:
    """``.splice`` made inside the project's directory, never that directory itself (the lock
    file's parents are made for a user's SPLICE_HOME): a project removed while a ``Splice`` of
    it lives is ``NOT_A_PROJECT``, not made again as a directory holding ``.splice/state.lock``.
    Anything else in the way is named by the lock file's own open, coded."""
    from splice_build.project.creation_modes import dir_mode_in

    try:
        layout.state_dir.mkdir(mode=dir_mode_in(layout.root), exist_ok=True)
    except FileNotFoundError:
        raise project_gone(layout.root) from None
    except OSError:
        return


def project_gone(root: Path) -> ProjectError:
    """A project's directory or its splice.json removed since it was opened."""
    return ProjectError(
        ErrorCode.NOT_A_PROJECT,
        f"{root} no longer holds splice.json: the project was removed or moved",
        hint="Open the project again where it is now, or `splice init` it.",
    )


def check_state_dir(layout: ProjectLayout) -> bool:
    """``NOT_WRITABLE`` naming the first symbolic link among ``.splice``, its entries and the
    entries of ``.splice/packages``, or a scope entry of the latter that is no directory;
    nothing is changed. A missing ``.splice`` is fine. Returns whether ``.splice`` is a
    directory (``state_lock`` then need not make it: ``mkdir`` of an existing directory is
    an exception and another ``stat``)."""
    state = layout.state_dir
    if not _is_real_directory(state):
        return False  # missing, or a file: the lock file's own check names the latter
    _refuse_links_in(state)
    if _is_real_directory(layout.packages_dir):
        _refuse_links_in(layout.packages_dir, scopes=True)
    return True


def _is_real_directory(path: Path) -> bool:
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return False
    if stat.S_ISLNK(mode):
        raise _link(path)
    return stat.S_ISDIR(mode)


def _refuse_links_in(directory: Path, *, scopes: bool = False) -> None:
    """``scopes``: ``directory`` is ``.splice/packages``, whose ``@ns`` entries must be
    directories too (a file there made the swap of a package of that scope fail uncoded,
    ``INTERNAL_ERROR`` FileExistsError, after the checks had passed)."""
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                if entry.is_symlink():
                    raise _link(Path(entry.path))
                if scopes and entry.name.startswith("@") and not entry.is_dir():
                    raise _not_a_scope(Path(entry.path))
    except OSError:
        return  # unreadable: the command's own reads and writes report it, coded


def _not_a_scope(path: Path) -> ProjectError:
    return ProjectError(
        ErrorCode.NOT_WRITABLE,
        f"{path} is not a directory; Splice keeps the packages of a namespace in it",
        hint=f"remove {path}; the next command creates what it needs",
    )


def _link(path: Path) -> ProjectError:
    return ProjectError(
        ErrorCode.NOT_WRITABLE,
        f"{path} is a symbolic link; Splice never follows links inside {STATE_DIR}/, "
        "where it keeps the project's installed packages and state",
        hint=f"remove {path}; the next command creates what it needs",
    )


def write_cache(root: Path, name: str, data: bytes, mode: int | None = None) -> None:
    """Write ``data`` to ``root``'s ``.splice/<name>``, a cache (the workspace's member memo,
    the walks below grants): never through a link in ``.splice/`` (``NOT_WRITABLE``, as
    :func:`check_state_dir`), any other failure left for the next run to write again.
    ``mode``: as ``atomic_write_bytes``'s. Not fsynced: a cache lost or torn by a power cut is
    ignored as a whole, or is a previous one whose entries are checked as any are."""
    from splice_build.project.atomic import atomic_write_bytes
    from splice_build.project.creation_modes import dir_mode_in

    layout = ProjectLayout(root)
    check_state_dir(layout)
    try:
        layout.state_dir.mkdir(mode=dir_mode_in(root), exist_ok=True)
        atomic_write_bytes(layout.state_dir / name, data, mode=mode, durable=False)
    except OSError:
        return
