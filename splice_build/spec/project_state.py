"""Grants never cover the project's own state (docs/security.md#grants-and-project-state).

A tool that may write ``splice.lock`` or its installed ``manifest.json`` can grant itself
anything on its next run, and one that may read ``.env`` or ``SPLICE_HOME`` holds the user's
keys and tokens. So ``fs`` entries may not reach the project's ``splice.json``,
``splice.lock`` (and the legacy ``splice-lock.json``), ``.splice/``, any top-level name
starting with ``.env``, its ``.git`` (git runs what ``.git/config`` and ``.git/hooks`` name
as the user, outside any sandbox, ``core.fsmonitor`` at every ``git status``; and a checkout
in CI keeps its token there), or ``SPLICE_HOME``; ``env`` entries may not name a ``SPLICE_*``
variable (every variable Splice reads is one: ``SPLICE_TOKEN``, ``SPLICE_MCP_TOKEN``,
``SPLICE_HOME``, ``SPLICE_REGISTRY``…) nor a provider key of the capability broker
(``spec/provider_variables.py``: ``GITHUB_TOKEN``, ``ROBINHOOD_RPC_URL``…), which a tool uses through
``permissions.capabilities`` and never holds.

The rule is decided on the *effective* path, the one the runtime hands to Node's permission
model (``effective_fs_path``: the project root joined with the entry and normalized, so
``.`` is the root itself), never on the entry's text. Node grants that path and everything
below it, and reads ``*`` as a wildcard; so an entry is refused when its effective path and
a protected path overlap (one equals or contains the other, which also refuses
``.splice/cache``), or when it holds a glob character at all (a grant names one path).

Without a project (``splice validate``, publish, the install's package check) the root is an
abstract one and ``SPLICE_HOME`` unknown; with one (consent, ``check_installed``, the
runtime) the real root and home are used, and the real path of each grant is checked too
(a directory that is a link to the project root covers the lock as surely as ``.``).
Names are compared folded (``spec.paths.fold_path``: normalization and case) with trailing
dots and spaces dropped, which is what case-insensitive file systems and Windows treat as
the same name: ``Splice.Lock`` and
``.ENV`` are refused everywhere (fail closed).
"""

from __future__ import annotations

import errno
import functools
import os
import stat
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import PurePath, PurePosixPath
from typing import TYPE_CHECKING, TypeVar

from splice_build.errors import ErrorCode, SpliceError
from splice_build.records import dataclass, replace
from splice_build.spec.paths import fold_name, fold_path

if TYPE_CHECKING:
    from splice_build.spec.linked_state import Linked
    from splice_build.spec.permissions import Permissions

PROJECT_FILE = "splice.json"
LOCK_FILE = "splice.lock"
LEGACY_LOCK_FILE = "splice-lock.json"
STATE_DIR = ".splice"
# git runs what its config names (core.fsmonitor on every status, hooks on every commit),
# as the user and outside any sandbox; its index lists the workspace's members; and a CI
# checkout keeps the job's token in its config (an http.<url>.extraheader).
REPOSITORY_DIR = ".git"

# What a refusal of a grant says (docs/security.md#grants-and-project-state): the rule, as
# the hint of a refused consent, and, after a line naming something the grant holds (the
# user's to move: a project, a repository, a hard link), what to do with it.
STATE_RULE = (
    "No grant may reach a project's splice.json, splice.lock, .splice/, .env* or .git, or "
    "SPLICE_HOME, nor hold another project or a hard link of one of those files; no write "
    "grant may hold a git repository, Splice's own files or its Node.js."
)
MOVE_OUT = ": move it out of the grant"
ENV_FILE_PREFIX = ".env"  # .env, .env.local, .envrc, …: provider keys are read from them
ENV_FILES = (".env.local", ".env")  # the ones the broker reads, in its order (broker/keys.py)
# SPLICE_HOME's files that say how Splice runs and whom it is (project/home.py)
HOME_CONFIG_FILE = "config.json"  # registry, isolation
HOME_CREDENTIALS_FILE = "credentials.json"  # registry tokens
RESERVED_ENV_PREFIX = "SPLICE_"
# Node's permission model reads "*" (anywhere in a path, also across "/") as a wildcard;
# the runtime refuses a project or package path that holds one (runtime/runtime.py).
NODE_WILDCARD = "*"
# The others are refused in entries as well so that a consent line always means exactly one
# path, whatever layer interprets it.
GLOB_CHARACTERS = NODE_WILDCARD + "?[]{}"
# The root of "a project" when none is known: entries are already project-relative safe
# paths there, so only the project's own files can overlap.
ABSTRACT_ROOT = PurePosixPath("/<project>")


@dataclass(frozen=True)
class Protected:
    """One path no grant may overlap; ``name_prefix``: every sibling whose name starts with
    the last part (``.env*``)."""

    path: PurePath
    what: str  # "splice.lock", ".splice/", ".env* files", "SPLICE_HOME (/home/u/.splice)"
    name_prefix: bool = False
    in_project: bool = True
    write_only: bool = False  # reading it is harmless; only a write grant is refused


def effective_fs_path(root: PurePath, entry: str) -> PurePath:
    """The path the runtime grants for ``entry``: ``root`` joined with it, normalized the way
    Node's ``path.resolve`` normalizes (``.`` is the root, ``..`` goes up, an absolute entry
    replaces the root)."""
    text = os.path.normpath(os.path.join(os.fspath(root), entry))  # one parse of its names
    if text.startswith("//"):  # POSIX keeps a leading "//"; path.resolve does not
        text = "/" + text.lstrip("/")
    return type(root)(text)


def protected_paths(root: PurePath, home: PurePath | None = None) -> list[Protected]:
    """What no grant of a project at ``root`` may overlap (``home``: SPLICE_HOME, if known)."""
    found = [
        Protected(root / PROJECT_FILE, PROJECT_FILE),
        Protected(root / LOCK_FILE, LOCK_FILE),
        Protected(root / LEGACY_LOCK_FILE, LEGACY_LOCK_FILE),
        Protected(root / STATE_DIR, f"{STATE_DIR}/"),
        Protected(root / ENV_FILE_PREFIX, f"{ENV_FILE_PREFIX}* files", name_prefix=True),
        Protected(root / REPOSITORY_DIR, f"{REPOSITORY_DIR}/"),
    ]
    return found + home_protected(home)


def home_protected(home: PurePath | None) -> list[Protected]:
    """``SPLICE_HOME``, if known: no grant of any project may overlap it."""
    return [] if home is None else [Protected(home, f"SPLICE_HOME ({home})", in_project=False)]


# The kernel's own file systems: their entries are processes, devices and kernel state, not
# files. A link to one in a project (a checkout's ``out -> /proc/self``) made a grant of
# ``/proc/self/mem`` (native code past every in-process guard), ``/proc/self/root`` (the whole
# file system: Node checks only the path string) and ``/proc/self/fd/N`` (the descriptors the
# host guards, opened again by path).
KERNEL_FILE_SYSTEMS = ("/proc", "/sys", "/dev")


def kernel_file_systems(root: PurePath) -> list[Protected]:
    """What no real grant may reach: ``/proc``, ``/sys`` and ``/dev``, read or written."""
    return [
        Protected(type(root)(path), f"the kernel's {path}", in_project=False)
        for path in KERNEL_FILE_SYSTEMS
    ]


def own_installation(root: PurePath, env: Mapping[str, str] | None = None) -> list[Protected]:
    """Splice's own code and the Python environment running it (the packages it imports
    and, by default, the sandbox's Node binary), and the Node binary ``SPLICE_NODE`` of
    ``env`` (default: this process's) names. A tool that may write there rewrites the
    parent's own code for its next run; a project's ``.venv`` often is it. The next run
    probes ``SPLICE_NODE`` with ``--version`` outside any sandbox: a tool granted the
    project directory it lay in put a script there, and the user's next run ran it."""
    import splice_build
    from splice_build.spec.node_override import override_path

    code = type(root)(os.path.dirname(os.path.abspath(splice_build.__file__)))
    found = [Protected(code, f"Splice's own code ({code})", in_project=False, write_only=True)]
    for directory in _python_environment():
        path = type(root)(directory)
        what = f"Splice's Python environment ({path})"
        found.append(Protected(path, what, in_project=False, write_only=True))
    node = override_path(env)
    if node is not None:
        path = type(root)(node)
        what = f"Splice's Node.js, SPLICE_NODE ({path})"
        found.append(Protected(path, what, in_project=False, write_only=True))
    return found


_ENVIRONMENT_LOCK = threading.Lock()


@functools.cache
def _python_environment() -> tuple[str, ...]:
    """The directories Python runs code from. A virtual environment whole (its
    ``pyvenv.cfg`` names the interpreter); otherwise the standard library, site-packages and
    scripts directories, and the user's own when that site is on: not ``sys.prefix`` whole,
    which for a system Python is ``/usr`` and would hold projects (``/usr/src/app``).

    Computed once, under a lock: ``sysconfig`` builds its variables on first use without
    one, and two threads doing so at once (``splice mcp`` listing and calling) get an
    ``AttributeError`` for a variable the other has not set yet."""
    if sys.prefix != sys.base_prefix:
        return (sys.prefix,)
    import site
    import sysconfig

    with _ENVIRONMENT_LOCK:
        keys = ("stdlib", "platstdlib", "purelib", "platlib", "scripts")
        paths = sysconfig.get_paths()
        found = [paths[key] for key in keys if key in paths]
        if site.ENABLE_USER_SITE:
            user = sysconfig.get_paths(sysconfig.get_preferred_scheme("user"))
            found += [user[key] for key in ("purelib", "scripts") if key in user]
    return tuple(dict.fromkeys(found))


def _fold(path: PurePath) -> tuple[str, ...]:
    return tuple(fold_name(part) for part in path.parts)


def _overlap(g: tuple[str, ...], p: tuple[str, ...], name_prefix: bool) -> str | None:
    """``"include"`` when the folded grant ``g`` covers the folded protected path ``p``,
    ``"inside"`` when it lies within it, None when they are apart."""
    if name_prefix:
        parent, prefix = p[:-1], p[-1]
        if len(g) <= len(parent):
            return "include" if g == parent[: len(g)] else None
        if g[: len(parent)] == parent and g[len(parent)].startswith(prefix):
            return "include" if len(g) == len(p) else "inside"
        return None
    n = min(len(g), len(p))
    if g[:n] != p[:n]:
        return None
    return "include" if len(g) <= len(p) else "inside"


def real_grant_path(path: str) -> str:
    """The real path of a grant, ``os.path.realpath``'s, but raising OSError (ELOOP) for a
    path through a loop of symbolic links, which ``realpath`` leaves as it found it: a
    checkout's ``docs -> docs`` then looked like a directory of the project, was installed
    without a question, and every call ended TOOL_CRASHED when the file view's plan met the
    loop ("too many levels of symbolic links"). Callers refuse it as they refuse a link
    that cannot be read (``grant_unresolved``)."""
    return _refuse_loop(os.path.realpath(path))


def _refuse_loop(real: str) -> str:
    """``real``, or the OSError (ELOOP) of a path through a loop of links."""
    try:
        os.stat(real)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise
    return real


# Protected paths, each with its path folded (``_fold``).
_Folded = list[tuple[tuple[str, ...], Protected]]

# A walk below a grant that found no project: the path and ``file_identity`` (device, inode,
# change time: splice_build/file_keys.py) of every directory it listed (spec/project_below.py).
Walked = tuple[tuple[str, int, int, int], ...]
# The directory a walk started from, and whether it looked for ``.git`` too (a write
# grant's): one that looked only for ``splice.json`` never answers for a write grant.
WalkKey = tuple[str, bool]
# A git index read (spec/git_links.py): the file read's ``change_key`` (device, inode, size,
# modification and change time: splice_build/file_keys.py), and the submodules it lists.
IndexRead = tuple[tuple[int, ...], tuple[str, ...]]
# What an earlier run recorded: its walks, and its index reads by the index's path.
Recorded = tuple[dict[WalkKey, Walked], dict[str, IndexRead]]


class Walks:
    """The walks below grants and the git index reads an earlier run recorded (``recorded``
    and ``recorded_indexes``, read by ``load`` when first asked for), and those this run
    trusted, found unchanged or made afresh (``trusted``, ``indexes``):
    spec/project_below.py, spec/git_links.py."""

    def __init__(self, load: Callable[[], Recorded] | None = None) -> None:
        self._load = load
        self._recorded: Recorded | None = None
        self.trusted: dict[WalkKey, Walked] = {}
        self.indexes: dict[str, IndexRead] = {}

    def _record(self) -> Recorded:
        if self._recorded is None:
            self._recorded = ({}, {}) if self._load is None else self._load()
        return self._recorded

    @property
    def recorded(self) -> dict[WalkKey, Walked]:
        return self._record()[0]

    @property
    def recorded_indexes(self) -> dict[str, IndexRead]:
        return self._record()[1]


class RunMemo:
    """Real paths, folded paths, which directories hold splice.json and the protected paths
    every member shares, looked up once for the checks of one run (one check by default: a
    ``ProjectState`` makes its own). Every run looks afresh, so a link changed or a project
    made since is found by the next."""

    def __init__(self, walks: Walks | None = None) -> None:
        """``walks``: the walks below grants to trust (a no-op sync's, project/walk_record.py)."""
        self._real: dict[PurePath, PurePath] = {}
        self._text: dict[str, str] = {}
        self._absent: dict[str, int] = {}  # real paths found missing: see absent_from
        self._folded: dict[PurePath, tuple[str, ...]] = {}
        self._names: dict[str, str] = {}
        self._holds: dict[PurePath, bool] = {}
        self._protected: dict[PurePath, _Folded] = {}
        self._shared: dict[tuple[PurePath | None, PurePath | None], tuple[_Folded, _Folded]] = {}
        self._home_linked: dict[PurePath | None, Linked] = {}
        self._above_linked: dict[PurePath, Linked] = {}
        self._repositories: dict[str, tuple[str, str] | None] = {}
        self._submodules: dict[str, tuple[str, tuple[PurePath, ...] | str]] = {}
        self.walks = Walks() if walks is None else walks

    def real(self, path: PurePath) -> PurePath:
        """``os.path.realpath`` of ``path`` (``real_text``)."""
        found = self._real.get(path)
        if found is None:
            found = self._real[path] = type(path)(self.real_text(os.fspath(path)))
        return found

    def real_text(self, path: str) -> str:
        """``os.path.realpath`` of ``path``, taken below its parent's real path: a name that
        is no link resolves to itself there, as realpath has it, so each directory is asked
        once (an ``lstat``) for every path of the run below it (the members' roots share
        their parents, each grant and protected file its root). A link, or a ``..``, is
        left to realpath itself.

        Below a name that is not there (its ``lstat`` fails with ``ENOENT``, or ``ENOTDIR``
        below a file) no name is asked: its ``lstat`` fails the same way, which realpath
        takes for no link, so the rest of the path is joined as it is (``absent_from``). A
        manifest's 1,000 grants of 128 names, none made yet, cost 128,000 ``lstat`` calls
        and as many steps of Python a check (``splice list`` 3.6 s of CPU)."""
        found = self._text.get(path)
        if found is not None:
            return found
        top, real, names = self._nearest(path)
        missing = self._absent.get(real)
        while names:
            if missing is not None:  # nothing there: the rest of the names as they are
                real = os.path.join(real, os.sep.join(reversed(names)))
                self._absent[real] = missing
                break
            name = names.pop()
            top, real = os.path.join(top, name), self._resolved(os.path.join(real, name))
            missing = self._absent.get(real)
            self._text[top] = real
        self._text[path] = real
        return real

    def _nearest(self, path: str) -> tuple[str, str, list[str]]:
        """A path above ``path`` resolved already (else one realpath resolves: the root, a
        ``..``), its real path, and the names below it, deepest first. Looked for from the
        top by the separators of ``path`` (the run's paths share the project's directories,
        and below a grant's first missing name none is kept), name by name where a name is
        no plain one."""
        found, cut = 0, 0
        while (cut := path.find(os.sep, cut + 1)) > 0 and path[:cut] in self._text:
            found = cut
        if found:
            names = path[found + 1 :].split(os.sep)[::-1]
            if not {"", os.curdir, os.pardir} & set(names):
                return path[:found], self._text[path[:found]], names
        names, top = [], path
        while True:
            parent, name = os.path.split(top)
            if name in ("", os.curdir, os.pardir):
                self._text[top] = os.path.realpath(top)
                return top, self._text[top], names
            names.append(name)
            top = parent
            known = self._text.get(top)
            if known is not None:
                return top, known, names

    def _resolved(self, path: str) -> str:
        """``path`` (a name below a real directory), or its real path where it is a link;
        ``path`` is remembered absent (``absent_from``) where nothing lies there."""
        try:
            mode = os.lstat(path).st_mode
        except OSError as exc:
            if exc.errno in (errno.ENOENT, errno.ENOTDIR):
                self._absent[path] = len(PurePath(path).parts)
            return path
        return os.path.realpath(path) if stat.S_ISLNK(mode) else path

    def absent_from(self, real: PurePath) -> int | None:
        """How many names the first directory of the real path ``real`` (a ``real_text``
        of this run) found missing has: it and everything below it hold nothing (no
        ``splice.json``, no ``.git``); None when all of it was there, or not asked."""
        return self._absent.get(os.fspath(real))

    def real_grant(self, path: PurePath) -> PurePath:
        """``real_grant_path`` of ``path``, its directories resolved once for the run."""
        real = self.real(path)
        _refuse_loop(str(real))
        return real

    def fold(self, path: PurePath) -> tuple[str, ...]:
        """``_fold(path)``, each name folded once for the run. Built from the path's names,
        never from its parent's fold: a path of k names made k parents, each hashed and
        copied (k² work), and 7,900 grants of 128 names (a 2 MiB manifest) took 11 s."""
        found = self._folded.get(path)
        if found is None:
            found = self._folded[path] = tuple(map(self._fold_name, path.parts))
        return found

    def _fold_name(self, name: str) -> str:
        found = self._names.get(name)
        if found is None:
            found = self._names[name] = fold_name(name)
        return found

    def shared(
        self, root: PurePath, home: PurePath | None, env: Mapping[str, str] | None
    ) -> tuple[_Folded, _Folded]:
        """The protected paths outside any project (``home``, Splice's installation and the
        Node.js ``SPLICE_NODE`` of ``env`` names, the kernel's file systems), folded, as
        named and at their real paths (``at_real_paths``): the same for every member."""
        from splice_build.spec.node_override import override_path

        key = (home, override_path(env))
        found = self._shared.get(key)
        if found is None:
            items = home_protected(home) + own_installation(root, env) + kernel_file_systems(root)
            named = [(self.fold(item.path), item) for item in items]
            found = self._shared[key] = (named, self.at_real_paths(named))
        return found

    def at_real_paths(self, named: _Folded) -> _Folded:
        """Each protected path of ``named`` at its real path, where that folds to another
        path: one that folds the same gives every grant the same verdict, named alike."""
        found = []
        for folded, item in named:
            text = os.fspath(item.path)
            if self.real_text(text) == text:
                continue  # the path itself (no link on its way): the same fold
            real = self.real(item.path)
            if (folded_real := self.fold(real)) != folded:
                found.append((folded_real, replace(item, path=real)))
        return found

    def home_linked(self, home: PurePath | None) -> Linked:
        """``linked_home(home)`` (spec/linked_state.py), looked at once for every member."""
        found = self._home_linked.get(home)
        if found is None:
            from splice_build.spec.linked_state import linked_home

            found = self._home_linked[home] = linked_home(home)
        return found

    def protected(self, directory: PurePath) -> _Folded:
        """``protected_paths(directory)``, each with its path folded (``_fold``): asked of
        every directory above each grant."""
        found = self._protected.get(directory)
        if found is None:
            found = self._protected[directory] = [
                (self.fold(item.path), item) for item in protected_paths(directory)
            ]
        return found

    def linked_above(self, root: PurePath) -> Linked:
        """``linked_above`` (spec/linked_state.py) of every directory above the real path
        of ``root``, each looked at once for every member below it."""
        from splice_build.spec.linked_state import linked_above

        found: dict[tuple[int, int], str] = {}
        for directory in reversed(self.real(root).parents):
            linked = self._above_linked.get(directory)
            if linked is None:
                linked = self._above_linked[directory] = linked_above(directory)
            found.update(linked)
        return found

    def submodules(self, real: PurePath) -> tuple[str, tuple[PurePath, ...] | str] | None:
        """The work tree of the git repository the real path ``real`` lies in and the
        submodules its index lists (their paths), or why that index could not be read; None
        outside any repository (spec/git_links.py). Looked up once per repository, and
        trusted from ``walks`` while the index is unchanged."""
        from splice_build.spec.git_links import UnreadableIndex, gitlinks

        missing = self.absent_from(real)  # no .git is asked of a directory that is not there
        below = real if missing is None else type(real)(*real.parts[: missing - 1])
        found = self.repository(os.fspath(below))
        if found is None:
            return None
        tree, git_directory = found
        known = self._submodules.get(git_directory)
        if known is None:
            try:
                links: tuple[PurePath, ...] | str = tuple(
                    type(real)(tree, link) for link in gitlinks(git_directory, self.walks)
                )
            except UnreadableIndex as exc:
                links = str(exc)
            known = self._submodules[git_directory] = (tree, links)
        return known

    def git_elsewhere(self, root: PurePath) -> _Folded:
        """The git directory of the repository the project at ``root`` lies in, where a
        ``.git`` file names one elsewhere (a linked worktree's, and the main checkout's
        ``.git`` it shares; a submodule's; one of ``--separate-git-dir``), folded: protected
        as ``.git`` is. A tool granted the main checkout's ``.git`` through a link set
        ``core.fsmonitor``, and the user's next ``git status`` in the worktree ran it."""
        from splice_build.spec.git_links import named_git_directories

        found = self.repository(os.fspath(self.real(root)))
        if found is None:
            return []
        items = [
            Protected(type(root)(path), f"the project's git directory {path}", in_project=False)
            for path in named_git_directories(found[0])
        ]
        return [(self.fold(item.path), item) for item in items]

    def repository(self, directory: str) -> tuple[str, str] | None:
        """``(work tree, git directory)`` of the nearest ``.git`` at or above the real
        directory ``directory``, as git finds it from there; None when there is none. Each
        directory is asked once for every grant of the run below it."""
        from splice_build.spec.git_links import git_directory

        if directory in self._repositories:
            return self._repositories[directory]
        named = git_directory(directory)
        parent = os.path.dirname(directory)
        if named is not None:
            found: tuple[str, str] | None = (directory, named)
        else:
            found = None if parent == directory else self.repository(parent)
        self._repositories[directory] = found
        return found

    def holds_project(self, directory: PurePath) -> bool:
        """``directory`` holds splice.json (members share the directories above grants)."""
        held = self._holds.get(directory)
        if held is None:
            held = self._holds[directory] = os.path.isfile(directory / PROJECT_FILE)
        return held


class ProjectState:
    """The protected paths of one project, folded once (and resolved once, for a real root),
    so checking every entry of a manifest costs a real path per entry, not per pair."""

    def __init__(
        self,
        root: PurePath = ABSTRACT_ROOT,
        home: PurePath | None = None,
        *,
        memo: RunMemo | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        """``memo``: what the checks of one run share (tasks/noop.py checks every member);
        ``env``: the environment that picks the sandbox's Node (default: this process's)."""
        self.root, self.home = root, home
        self._real = root != ABSTRACT_ROOT
        self._memo = RunMemo() if memo is None else memo
        fold = self._memo.fold
        if self._real:
            own = [(fold(item.path), item) for item in protected_paths(root)]
            own += self._memo.git_elsewhere(root)
            named, real = self._memo.shared(root, home, env)
            self._folded = own + named + self._memo.at_real_paths(own) + real
        else:
            self._folded = [(fold(item.path), item) for item in protected_paths(root, home)]
        self._own: PurePath | None = None  # the root's real path, taken on first use
        self._above: set[tuple[str, ...]] = set()  # and the directories above it, folded
        self._reached: tuple[str, str] | None = None  # _reached_above's answer
        self._reached_known = False
        self._linked: Linked | None = None  # its state files with another name, on first use

    def fs_problem(self, entry: str, *, write: bool = True) -> str | None:
        """Why ``entry`` may not be granted here (for writing, or only reading), or None."""
        globs = sorted({c for c in entry if c in GLOB_CHARACTERS})
        if globs:
            shown = ", ".join(f'"{c}"' for c in globs)
            reach = _pattern_reach(entry, self.root, self.home)
            tail = f", and this one could include {reach}" if reach else ""
            return f'"{entry}" contains {shown}: a grant names one path, never a pattern{tail}'
        granted = [effective_fs_path(self.root, entry)]
        candidates = [self._memo.fold(granted[0])]
        if self._real:
            granted.append(self._memo.real_grant(granted[0]))
            if (folded_real := self._memo.fold(granted[1])) != candidates[0]:
                candidates.append(folded_real)  # the same fold: the same verdicts
        included: list[Protected] = []
        for candidate in candidates:
            for folded, item in self._folded:
                if item.write_only and not write:
                    continue
                verdict = _overlap(candidate, folded, item.name_prefix)
                if verdict == "inside":
                    return f'"{entry}" is inside {_describe([item])}'
                if verdict == "include" and item.what not in {i.what for i in included}:
                    included.append(item)
        if included:
            return f'"{entry}" would include {_describe(included)}'
        if not self._real:
            return _git_name_problem(entry) if write else None
        return (
            self._other_project_problem(entry, granted[-1], write)
            or (self._git_real_name_problem(entry, granted[-1]) if write else None)
            or self._linked_problem(entry, granted[-1])
        )

    def _git_real_name_problem(self, entry: str, real: PurePath) -> str | None:
        """``_git_name_problem`` of ``entry``, or of its real path ``real`` where a link of the
        checkout leads it (the names past those it shares with the project's real path): the
        runtime makes the real path, so ``out -> x/.git`` made ``x/.git`` for the tool."""
        found = _git_name_problem(entry)
        if found is not None:
            return found
        shared = os.path.commonpath([real, self._memo.real(self.root)])
        if REPOSITORY_DIR not in _fold(PurePosixPath(*real.parts[len(PurePath(shared).parts) :])):
            return None
        return _git_name_problem(entry, real)

    def _linked_problem(self, entry: str, real: PurePath) -> str | None:
        """Why ``entry`` holds another name of a file of the project's or SPLICE_HOME's
        state (a hard link: spec/linked_state.py), or None."""
        from splice_build.spec.linked_state import linked_state, other_name

        if self._linked is None:
            self._linked = {
                **self._memo.linked_above(self.root),
                **linked_state(self.root),
                **self._memo.home_linked(self.home),
            }
        found = other_name(str(real), self._linked) if self._linked else None
        if found is None:
            return None
        if isinstance(found, OSError):
            return (
                f'"{entry}" holds a directory that could not be looked at ({found.filename}: '
                f"{found.strerror}): another name of the project's state may lie in it"
            )
        path, what = found
        return f'"{entry}" holds {path}, another name (a hard link) of {what}{MOVE_OUT}'

    def _other_project_problem(self, entry: str, real: PurePath, write: bool) -> str | None:
        """Why ``entry`` reaches the state of another project on the way to its real path
        ``real``, or None: a member below the root (``packages/a/.splice``, ``packages/a/.env``)
        or, through a link, a project beside or above it (``up -> ../../.env``), or a whole
        project inside it (``packages``: ``project_below``). The rule above is the project's
        own. The root's tool otherwise read the member's provider keys and rewrote its
        installed files, and the member's tools still ran. Each directory above the grant is
        looked at (one ``stat`` each), and each below it listed.

        Every directory above the root counts too, a project or not: the capability broker
        reads the nearest ``.env*`` (broker/keys.py), so those hold this project's own keys,
        and a workspace root that only ``pyproject.toml`` makes one (no ``splice.json``)
        keeps its members' keys there and its sync state in ``.splice/`` (a member's tool
        granted ``cfg -> ../../.env`` read them); a ``splice.lock`` above says where tools
        may have written (project/tool_written.py). Not a directory the project lies in,
        though (a project kept in a virtual environment named ``.env``): it holds no key
        the broker reads, and every grant of the project would reach it.

        A write grant (``write``) may not hold another git repository either
        (``project_below``): a submodule's working tree, whose ``.git`` a tool pointed at a
        configuration of its making."""
        if self._own is None:
            self._own = self._memo.real(self.root)
            self._above = {self._memo.fold(directory) for directory in self._own.parents}
        own = self._own
        folded, folded_own = self._memo.fold(real), self._memo.fold(own)
        parents, reached = real.parents, None
        names, depth = len(real.parts), len(own.parts)
        end = len(parents)
        if names > depth and real.parts[:depth] == own.parts:
            # Inside the project: above it, the grant reaches what the root itself reaches.
            end, reached = names - depth - 1, self._reached_above()
        # A directory found missing holds no project, and one as deep as the root is none
        # above it: those below both are not looked at (nor made as paths, one by one).
        missing = self._memo.absent_from(real)
        start = 0 if missing is None else max(0, names - max(missing, depth))
        for index in range(start, end):
            directory = parents[index]
            if directory == own:
                continue
            if self._memo.holds_project(directory):
                whose, items = f"the project {directory}", self._memo.protected(directory)
            # The directory's fold is the start of the grant's (folded name by name): folding
            # each of a deep grant's directories again cost k² names.
            elif folded[: len(folded) - 1 - index] in self._above:
                whose = f"{directory}, above the project"
                items = [
                    (path, item)
                    for path, item in self._memo.protected(directory)
                    if _overlap(folded_own, path, item.name_prefix) != "inside"
                ]
            else:
                continue
            for path, item in items:
                if _overlap(folded, path, item.name_prefix) is not None:
                    return f'"{entry}" reaches the {item.what} of {whose}'
        if reached is not None:
            return f'"{entry}" reaches the {reached[0]} of {reached[1]}'
        from splice_build.spec.project_below import project_below

        below = project_below(real, self._memo.walks, repositories=write)
        if below is None:
            return self._submodule_problem(entry, real) if write else None
        if isinstance(below, OSError):
            if below.errno == errno.ENAMETOOLONG:
                return (
                    f'"{entry}" holds a directory nested too deep to list (a path of '
                    f"{len(str(below.filename))} characters below {real}): another project's "
                    f"state or a git repository may lie in it{MOVE_OUT}"
                )
            if below.errno == errno.EACCES:
                return (
                    f'"{entry}" holds a directory that cannot be listed but can be entered '
                    f"({below.filename}): another project's state may lie in it"
                )
            return (
                f'"{entry}" holds a directory that could not be looked at ({below.filename}: '
                f"{below.strerror}): another project's state may lie in it"
            )
        holder, name = below
        if name != PROJECT_FILE:  # its .git, or the HEAD, objects and refs of a bare one
            return (
                f'"{entry}" would include the git repository of {holder} (its {name}, whose '
                f"configuration names commands git runs){MOVE_OUT}"
            )
        return (
            f'"{entry}" would include the project {holder} (its splice.json, splice.lock, '
            f".splice/ and .env* files){MOVE_OUT}"
        )

    def _submodule_problem(self, entry: str, real: PurePath) -> str | None:
        """Why the write grant ``entry`` (at ``real``, holding no ``.git``) holds a submodule
        of the git repository it lies in, which ``git status`` there enters once a tool
        makes its ``.git`` (spec/git_links.py), or None."""
        found = self._memo.submodules(real)
        if found is None:
            return None
        tree, links = found
        if isinstance(links, str):
            return (
                f'"{entry}" lies in the git repository of {tree}, whose index could not be '
                f"read (the submodules git status enters are unknown): {links}"
            )
        folded = self._memo.fold(real)
        for link in links:
            if _overlap(folded, self._memo.fold(link), False) == "include":
                return (
                    f'"{entry}" would include {link}, a submodule of the git repository of '
                    f"{tree} (git status enters the .git a tool makes there)"
                )
        return None

    def _reached_above(self) -> tuple[str, str] | None:
        """What every grant inside the project reaches above it (its name, and whose), by
        ``_other_project_problem``'s rule for the directories above the root, or None;
        looked up once per state. Such a grant lies deeper than each of their protected
        paths and shares the root's names down to the root, so it overlaps one exactly
        where the root does: a project's, wherever the root overlaps it; another
        directory's, where the root is that very path (``include``), not where the root
        lies inside it (the filter of ``_other_project_problem``)."""
        if not self._reached_known:
            assert self._own is not None
            own, self._reached_known = self._memo.fold(self._own), True
            for directory in self._own.parents:
                project = self._memo.holds_project(directory)
                for path, item in self._memo.protected(directory):
                    verdict = _overlap(own, path, item.name_prefix)
                    if verdict == "include" or (verdict is not None and project):
                        whose = (
                            f"the project {directory}"
                            if project
                            else f"{directory}, above the project"
                        )
                        self._reached = (item.what, whose)
                        return self._reached
        return self._reached


def fs_entry_problem(
    entry: str, root: PurePath = ABSTRACT_ROOT, home: PurePath | None = None
) -> str | None:
    """Why ``entry`` may not be granted to a project at ``root``, or None when it may.

    With an abstract root nothing is read from disk; with a real root the real paths of the
    grant, the project's state and ``home`` are compared as well.
    """
    return ProjectState(root, home).fs_problem(entry)


def _pattern_reach(entry: str, root: PurePath, home: PurePath | None) -> str | None:
    """What a pattern could match: everything whose path starts with its text before the
    first glob character (Node's ``*`` also crosses ``/``)."""
    cut = min(entry.index(c) for c in GLOB_CHARACTERS if c in entry)
    stem = _fold_text(str(root / entry[:cut]) if entry[:cut] else str(root) + os.sep)
    reached = [
        item
        for item in protected_paths(root, home)
        if _fold_text(str(item.path)).startswith(stem)
        or stem.startswith(_fold_text(str(item.path)) + os.sep)
    ]
    return _describe(reached) if reached else None


def _git_name_problem(entry: str, real: PurePath | None = None) -> str | None:
    """Why the write grant ``entry`` names a ``.git`` on its way (the name folded), or None:
    the runtime makes a missing grant (``mkdir -p``), so ``fs.write: ["out/.git"]`` passed
    every check, and the tool filled it with a configuration whose ``core.fsmonitor`` the
    user's next ``git status`` in ``out`` ran; a walk finds it only at the next check.
    ``real``: the real path a link leads ``entry`` to, whose names hold the ``.git``."""
    if real is None and REPOSITORY_DIR not in _fold(PurePosixPath(os.path.normpath(entry))):
        return None
    through = "" if real is None else f" through a link ({real})"
    return (
        f'"{entry}" names a git directory ({REPOSITORY_DIR}){through}: a tool that may write one '
        "makes a repository whose configuration names commands git runs"
    )


def _fold_text(text: str) -> str:
    return fold_path(text)


def _describe(items: Sequence[Protected]) -> str:
    """``the project's splice.json, splice.lock and .splice/`` (+ ``SPLICE_HOME (…)``)."""
    names = [i.what for i in items if i.in_project]
    parts = [f"the project's {_and(names)}"] if names else []
    parts += [i.what for i in items if not i.in_project]
    return _and(parts)


def _and(words: Sequence[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def env_entry_problem(name: str) -> str | None:
    """Why ``name`` may not be given to a tool, or None (``SPLICE_*`` and the broker's
    provider keys, in any case)."""
    from splice_build.spec.provider_variables import PROVIDER_VARIABLES

    if name.upper().startswith(RESERVED_ENV_PREFIX):
        return (
            f'"{name}" is reserved: {RESERVED_ENV_PREFIX}* variables configure Splice itself '
            "(registry and MCP tokens, SPLICE_HOME)"
        )
    if name.upper() in PROVIDER_VARIABLES:
        return (
            f'"{name}" is reserved: it holds a provider key of the capability broker, which a '
            "tool uses through permissions.capabilities and never reads (docs/data-providers.md)"
        )
    return None


E = TypeVar("E", bound=SpliceError)


def grant_unresolved(error: type[E], code: ErrorCode, subject: str, exc: OSError, done: str) -> E:
    """The refusal (``error`` with ``code``) of a check of ``subject``'s grants that stopped
    when resolving one raised ``exc``: ``readlink`` of a link renamed away for a directory as
    it was read (EINVAL), or of one this user may not read (``/proc/1/cwd``: EACCES)."""
    return error(
        code,
        f"{subject}: a granted path could not be resolved (a symbolic link on its way changed "
        f"as it was read, or cannot be read); {done}",
        details=[exc.strerror or str(exc)],
        hint="Keep its links in place and readable, then run it again.",
    )


def project_state_problems(
    permissions: Permissions,
    where: str = "permissions",
    *,
    root: PurePath = ABSTRACT_ROOT,
    home: PurePath | None = None,
    memo: RunMemo | None = None,
    env: Mapping[str, str] | None = None,
) -> list[str]:
    """``<where>.fs.read: "." would include …`` lines, one per refused entry (empty: fine).
    Raises OSError when a path cannot be resolved (``grant_unresolved``). ``memo``: what the
    caller's other checks of this run looked up (a lock's grant and its manifest); ``env``
    as for ``ProjectState``."""
    lines: list[str] = []
    fields = (("fs.read", permissions.fs_read), ("fs.write", permissions.fs_write))
    if permissions.fs_read or permissions.fs_write:
        state = ProjectState(root, home, memo=memo, env=env)
        # The write grants first: a walk below one that found neither a project nor a .git
        # answers for a read grant of the same directory too (spec/project_below.py), so a
        # directory granted both ways is listed once.
        problems = {
            (field, entry): state.fs_problem(entry, write=field == "fs.write")
            for field, entries in reversed(fields)
            for entry in entries
        }
        for field, entries in fields:
            for entry in entries:
                if (problem := problems[field, entry]) is not None:
                    lines.append(f"{where}.{field}: {problem}")
    for name in permissions.env:
        problem = env_entry_problem(name)
        if problem is not None:
            lines.append(f"{where}.env: {problem}")
    return lines
