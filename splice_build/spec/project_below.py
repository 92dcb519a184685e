"""Whether a granted directory holds another project, or for writing another git repository
(docs/security.md#grants-and-project-state).

A grant holding a member (``fs.read: ["packages"]`` at a monorepo's root) let the root's tool
read the member's ``.env`` (its provider keys) and ``.splice/``, with the OS layer and
without it; so a grant whose real path holds a directory with ``splice.json`` is refused, as
one holding the project's own state is (spec/project_state.py). Every call asks again, so a
member made there later is found before the next call starts.

A write grant may not hold a ``.git`` either (a directory, or the file a submodule's working
tree has): git runs what a repository's configuration names, and a tool granted a
submodule's working tree (``vendor/lib``) pointed its ``.git`` at a directory of its making
whose ``core.fsmonitor`` the user's next ``git status`` in the project ran. Nor a bare
repository (a directory holding ``HEAD``, ``objects`` and ``refs``, which a git started in it
takes for its git directory, ``.git`` or not): a tool made one whose ``core.pager`` the
user's next ``git branch`` there ran, and a walk looking for ``.git`` alone never found it;
nor one holding ``HEAD`` and ``commondir``, git's other sign of a git directory
(``_git_directory_signs``).

Every directory below the grant is listed, hidden ones and ``node_modules`` too (a project
there is as readable). A link is not followed: with the file view it leads only to a
granted path, whose own check this is, and without it Node follows any link below a grant
anyway (docs/security.md#residual-limits). A directory that can be entered but not listed
is refused: its names are unknown here, and a tool that knows ``a/.env`` opens it; so is one
whose listing failed for any other reason than being gone, no directory or closed to the
tool (``passed_over``), which a walk used to pass over. So is a
directory nested so deep that its path is longer than one system call may name
(``ENAMETOOLONG``): a tool granted ``out`` renamed a chain of 1,990 directories, a ``.git``
at its bottom, into the bottom of another such chain (each path under the limit), and the
walk, which names each directory by its path, passed over what lay below the limit.

A walk that found nothing is remembered with each directory's device, inode and change time
(``st_ctime_ns``: any entry made, removed or renamed there changes it, and no process sets
it back; a mount on one of them changes what ``stat`` says of its path), on the file systems
spec/change_times.py allows (elsewhere no walk is remembered). The next check
``stat``s each (about a tenth of a listing) and lists again only when one changed. A listing
taken within ``RECENT_NS`` of its directory's last change is not remembered: the kernel keeps
change times at its clock tick, and a second change within the tick of the first leaves it
as it was. A walk found unchanged or made afresh is trusted for the rest of its run (one
check, or one no-op sync's members: ``Walks.trusted``), as a run's other look-ups are
(``RunMemo``); a directory granted for reading and writing is looked at once. (A network
file system's client may answer ``stat`` from its attribute cache for
a while, so a change another machine made there is seen by a long-lived process, ``splice
mcp`` or one ``Splice``, only once that cache expires; each new process lists afresh.)

A no-op ``splice sync`` also keeps the walks it trusted in the workspace root's ``.splice/``
(a no-op ``splice install`` in its project's: project/walk_record.py) and hands them to the
next one (``Walks``), and a run's checks read the project's record too: each is trusted
exactly as a walk of this process is, every directory ``stat``ed and compared. A walk recorded
elsewhere (a checkout's) cannot know the inodes and change times the directories got here.
Each walk, remembered or recorded, says whether it looked for ``.git`` too: one that looked
only for ``splice.json`` (a read grant's) never answers for a write grant of the directory,
which the user may have made of it since.
"""

from __future__ import annotations

import errno
import os
import time
from pathlib import PurePath
from typing import TypeVar

from splice_build.file_keys import file_identity
from splice_build.spec.project_state import PROJECT_FILE, REPOSITORY_DIR, Walked, WalkKey, Walks

# What a walk looking for ``.git`` reports of a directory git takes for its git directory
# without any ``.git``, by the names (folded) that make it one: a bare repository's, or one
# whose ``commondir`` file names where its objects, refs and configuration lie.
_GIT_DIRECTORY_NAMES = (
    ("HEAD, objects and refs", frozenset(("head", "objects", "refs"))),
    ("HEAD and commondir", frozenset(("head", "commondir"))),
)
# Longer than any kernel clock tick (10 ms at HZ=100), with room for a clock stepped back.
RECENT_NS = 2_000_000_000
_REMEMBERED_MAX = 64
# The errors of a directory below the grant that the walk passes over: gone since it was
# listed, or no directory after all (``EACCES``: ``passed_over``). Any other (``EMFILE``,
# ``EIO``, ``ENAMETOOLONG``) leaves its names unknown, and the grant is refused (fail closed).
_PASSED_OVER = frozenset((errno.ENOENT, errno.ENOTDIR))
K = TypeVar("K")
V = TypeVar("V")

# Each real directory a walk found nothing below (and whether it looked for ``.git``), with
# (path, device, inode, change time) of every directory it listed.
_remembered: dict[WalkKey, Walked] = {}


def project_below(
    directory: PurePath, walks: Walks | None = None, *, repositories: bool = False
) -> tuple[PurePath, str] | OSError | None:
    """The first directory at or below the real directory ``directory`` holding a project
    (``splice.json``, its name folded as names are in spec/project_state.py) or, with
    ``repositories``, a ``.git``, with that name; or the error of a directory there that can
    be entered but not listed; or None. ``directory`` is not the caller's project
    (``fs_problem``'s rules refuse that first). ``walks``: those an earlier run recorded,
    and those this run trusted (a no-op sync's, project/walk_record.py)."""
    key = (str(directory), repositories)
    # a walk that found no .git either answers for projects alone, never the other way
    keys = (key,) if repositories else (key, (key[0], True))
    if walks is not None and any(each in walks.trusted for each in keys):
        return None  # trusted already in this run (one check, or one no-op sync's)
    # the process's own walks first; the record (read when first asked for) where they miss
    if any(_trusted(each, _remembered.get(each), walks) for each in keys):
        return None
    if walks is not None and any(_trusted(each, walks.recorded.get(each), walks) for each in keys):
        return None
    found, listed = _walk(key[0], repositories)
    if isinstance(found, OSError):
        return found
    if found is not None:
        return type(directory)(found[0]), found[1]
    if listed is not None and _keeps_change_times(listed):
        _trust(key, listed, walks)
    return None


def _keeps_change_times(listed: Walked) -> bool:
    """Whether every directory of ``listed`` lies on a file system whose change times only
    the kernel sets (spec/change_times.py): one ``statfs`` for each device."""
    from splice_build.spec.change_times import keeps_change_times

    first = {device: path for path, device, _, _ in reversed(listed)}
    return all(map(keeps_change_times, first.values()))


def _trusted(key: WalkKey, seen: Walked | None, walks: Walks | None) -> bool:
    """Whether the walk ``seen`` is there, every directory it listed unchanged and on a file
    system whose change times no process sets; it is then remembered in the process and
    trusted for the run."""
    if seen is None or not all(_unchanged(*entry) for entry in seen):
        return False
    if not _keeps_change_times(seen):
        return False
    _trust(key, seen, walks)
    return True


def _trust(key: WalkKey, listed: Walked, walks: Walks | None) -> None:
    remember(_remembered, key, listed, None if walks is None else walks.trusted)


def remember(memo: dict[K, V], key: K, value: V, trusted: dict[K, V] | None) -> None:
    """Put ``value`` in the process's ``memo`` (emptied once it holds ``_REMEMBERED_MAX``)
    and in what the run ``trusted``, if known: a walk here, an index read in
    spec/git_links.py."""
    if len(memo) >= _REMEMBERED_MAX:
        memo.clear()
    memo[key] = value
    if trusted is not None:
        trusted[key] = value


def _walk(top: str, repositories: bool) -> tuple[tuple[str, str] | OSError | None, Walked | None]:
    """The first directory at or below ``top`` holding a project (or a ``.git``), with that
    name, or the error of an unlistable one; else None and what was listed (None when a
    listing is too recent to remember)."""
    listed: list[tuple[str, int, int, int]] | None = []
    recent = time.time_ns() - RECENT_NS
    pending = [top]
    while pending:
        current = pending.pop()
        try:
            info = os.stat(current, follow_symlinks=False)
        except OSError as exc:  # gone (its directory changed), or nothing granted yet
            if current == top:  # a grant no path can name holds nothing a tool reaches:
                return None, None  # making it fails (NOT_WRITABLE), and no call opens it
            if passed_over(exc, current):
                continue
            return exc, None
        # Each directory is remembered before it is listed, also one that cannot be: a
        # ``chmod`` making it one to enter changes its own change time, not its parent's.
        if listed is not None:
            if info.st_ctime_ns >= recent:
                listed = None
            else:
                listed.append((current, *file_identity(info)))
        try:
            with os.scandir(current) as entries:
                names = [(entry.name, _is_real_directory(entry)) for entry in entries]
        except OSError as exc:
            if passed_over(exc, current):
                continue
            return exc, None  # too deep, or unlisted for another reason: its names are unknown
        if repositories and (signs := _git_directory_signs(names)) is not None:
            return (current, signs), None
        for name, is_directory in names:
            if _is_project_file(name):
                return (current, PROJECT_FILE), None
            if repositories and _is_named(name, REPOSITORY_DIR):
                return (current, REPOSITORY_DIR), None
            if is_directory:
                pending.append(os.path.join(current, name))
    return None, None if listed is None else tuple(listed)


def passed_over(error: OSError, directory: str) -> bool:
    """Whether a walk may pass over ``directory``, whose listing failed with ``error``: it is
    gone, no directory, or not to be entered (by the tool either). Any other failure leaves
    its names unknown, and the grant holding it is refused."""
    if error.errno == errno.EACCES:
        return not os.access(directory, os.X_OK)
    return error.errno in _PASSED_OVER


def _git_directory_signs(names: list[tuple[str, bool]]) -> str | None:
    """The names that make a directory of these names a git directory to a git started in
    it (a repository needs no ``.git``), or None: a bare repository's ``HEAD``, ``objects``
    and ``refs``, whose ``config`` names a pager the user's next ``git branch`` there runs;
    or ``HEAD`` and ``commondir`` (a linked worktree's git directory), git then looking for
    the objects, refs and configuration in the directory ``commondir`` names: a tool
    granted ``out`` wrote ``out/wt/HEAD``, ``out/wt/commondir`` naming ``../c`` and
    ``out/c/{objects,refs,config}``, no directory holding all three, and git 2.39's ``git
    branch`` in ``out/wt`` ran ``out/c/config``'s pager. The names folded, as everywhere
    here."""
    folded = {_folded(name) for name, _ in names}
    return next((signs for signs, wanted in _GIT_DIRECTORY_NAMES if folded >= wanted), None)


def _unchanged(path: str, device: int, inode: int, changed: int) -> bool:
    try:
        info = os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    return file_identity(info) == (device, inode, changed)


def _is_project_file(name: str) -> bool:
    """Whether ``name`` is ``splice.json`` to a file system that folds case and Unicode
    normalization (``Splice.JSON``, ``splice.json.``), as spec/project_state.py compares
    names."""
    return _is_named(name, PROJECT_FILE)


def _is_named(name: str, wanted: str) -> bool:
    """Whether ``name`` is ``wanted`` (lower case) to such a file system; the full fold only
    for a name that could be it."""
    return len(name) >= len(wanted) and _folded(name) == wanted


def _folded(name: str) -> str:
    """``name`` folded as spec/project_state.py folds names."""
    if name.isascii():
        return name.lower().rstrip(". ")
    from splice_build.spec.paths import fold_name

    return fold_name(name)


def _is_real_directory(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False
