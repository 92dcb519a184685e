"""A workspace: the many projects one ``splice sync`` covers, and ``[tool.splice.workspace]``.

The root is found by walking up from the current directory to a ``pyproject.toml`` holding
``[tool.splice.workspace]``::

    [tool.splice.workspace]
    members = ["packages/*", "services/**"]   # gitignore-style patterns (pathspec)
    exclude = ["services/legacy"]

Another user's ``pyproject.toml`` above the current directory is passed over unless they may
write it or a directory between (``_foreign``: ``/tmp/pyproject.toml`` is anyone's to make).

A member is a directory holding a ``splice.json`` whose path relative to the root matches
``members`` and not ``exclude``. As in ``.gitignore``, a matched directory includes its
subdirectories (``packages/*`` also covers ``packages/a/nested``). Without such a file the
root is ``--root``, else the git work tree, else the current directory, and every
``splice.json`` below it that git does not ignore is a member (``git ls-files``; outside a
git work tree, every one not under a hidden directory or ``node_modules``).

``add_member`` / ``remove_member`` edit ``pyproject.toml`` with tomlkit, so every byte
outside the ``members`` / ``exclude`` arrays stays as written (comments, spacing, order).

Parsing the TOML and matching the patterns are pure functions of the ``pyproject.toml`` bytes
and of the directories found, and importing tomllib and pathspec costs a no-op ``sync`` more
than the rest of its work (issue #22). So ``find_workspace(..., remember=True)`` keeps their
last answer in ``<root>/.splice/workspace.json`` (:class:`_Memo`): the text of the bytes with
the patterns they hold, and the candidate directories with the members among them. The tree
is still walked every time; an answer is reused only when the bytes are the same (compared,
not hashed: a no-op loads no hashing library), the file is the one the memo was written for
(its device, inode and ``ctime``, which a memo shipped in a checkout cannot know), and the
walk found exactly the same candidates (and only candidates are ever members). It is a cache:
unreadable, of another shape or of another file, it is recomputed and rewritten.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from splice_build.errors import ErrorCode, ProjectError, UsageError
from splice_build.file_keys import file_identity
from splice_build.project.layout import PROJECT_FILE, STATE_DIR
from splice_build.project.tool_written import (
    Dropped,
    GrantedSubtrees,
    ProjectState,
    drop_tool_written,
)
from splice_build.records import dataclass
from splice_build.spec.limits import MAX_PROJECT_STATE_BYTES
from splice_build.spec.regular_file import read_regular_file

PYPROJECT = "pyproject.toml"
# Workspace patterns, each list: a checkout chooses them, and compiling them costs their
# size (200,000 patterns held a sync 28 s and 780 MB before RE2 gave up). Far above any
# workspace's own; the matcher of the largest lists compiles in well under a second.
MAX_PATTERNS = 256
MAX_PATTERN_CHARS = 256
# Keys and array items of a pyproject.toml that workspace add/remove edit with tomlkit
# (_check_editable): 5,000 dotted keys under one table cost it 0.5 s.
MAX_EDITED_ENTRIES = 5_000
_PRUNED = {STATE_DIR, "node_modules", ".git"}


@dataclass(frozen=True)
class WorkspaceConfig:
    members: tuple[str, ...]
    exclude: tuple[str, ...] = ()


@dataclass(frozen=True)
class Workspace:
    """The root, where its members came from, and the member directories (path order)."""

    root: Path
    source: str  # "pyproject", "git" or "walk"
    members: tuple[Path, ...]
    # Projects found inside a write grant, where a tool may have written them
    # (project/tool_written.py): never members.
    dropped: tuple[Dropped, ...] = ()
    # Members inside a write grant of another user's lock or record, who cannot write them
    # (project/state_owner.py): the grant is ignored for them, with a warning.
    ignored: tuple[Dropped, ...] = ()
    # Another user's pyproject.toml or .git above the current directory, with its writer,
    # not taken as the root (``_foreign``, ``_foreign_git``): a warning each.
    passed: tuple[tuple[Path, int], ...] = ()

    def label(self, member: Path) -> str:
        """The member's path relative to the root (``.`` for the root itself), as text: a
        byte of a name that is not UTF-8 reads ``\\xff`` and a backslash ``\\\\``, so two
        members never share a label (labels name doit tasks, which must be unique, and JSON)."""
        relative = member.relative_to(self.root).as_posix()
        return _shown(relative.replace("\\", "\\\\")) or "."

    def _named(self, project: Path) -> str:
        """A project's label, or its path when it lies above the root."""
        return self.label(project) if project.is_relative_to(self.root) else _shown(str(project))

    def dropped_lines(self) -> list[str]:
        """One warning per project found inside a write grant (project/tool_written.py),
        then one per grant of another user's state ignored for a member."""
        return (
            [
                f"{self.label(d.directory)} is not synced: it lies in the write grant "
                f"{d.grant!r} of {self._named(d.granted_by)}, where a tool may have written it"
                for d in self.dropped
            ]
            + [
                f"the write grant {d.grant!r} of {self._named(d.granted_by)} is ignored for "
                f"{self.label(d.directory)}: {_recorder(d.writer)}"
                for d in self.ignored
            ]
            + [
                f"{_shown(str(path))} is not taken as the workspace root: {_owner(writer)}"
                for path, writer in self.passed
            ]
        )

    def dropped_json(self) -> list[dict[str, str]]:
        """The dropped projects for ``--json``: the same facts as ``dropped_lines``."""
        return [
            {"path": self.label(d.directory), "grant": d.grant, "of": self._named(d.granted_by)}
            for d in self.dropped
        ]


def _recorder(writer: int | None) -> str:
    """Who recorded an ignored grant (project/state_owner.py): another user, or a file of
    yours or root's that another user may have put where it lies and written."""
    from splice_build.project.state_owner import ANYONE

    if writer == ANYONE:
        return (
            "its file is yours or root's, but lies where another user may have put it and "
            "written it (a file others may write, or with another link, in a directory they "
            "may write), and no other user can write that project"
        )
    return f"it was recorded by another user (uid {writer}), who cannot write that project"


def _owner(writer: int) -> str:
    """Whose ``pyproject.toml`` or ``.git`` above the current directory was passed over
    (``_foreign``, ``_foreign_git``)."""
    from splice_build.project.state_owner import ANYONE

    if writer == ANYONE:
        return (
            "it is yours or root's, but lies where another user may have put it and written "
            "it, and no other user can write this directory"
        )
    return f"it is another user's (uid {writer}), who cannot write this directory"


def read_config(pyproject: Path) -> WorkspaceConfig | None:
    """``[tool.splice.workspace]`` of ``pyproject`` (None when absent); raises ``INVALID_CONFIG``."""
    raw = _pyproject_bytes(pyproject)
    return None if raw is None else _config_of(pyproject, raw)


def _pyproject_bytes(pyproject: Path) -> bytes | None:
    """The bytes of ``pyproject`` (None when absent); raises ``INVALID_CONFIG`` when unreadable."""
    found = _pyproject_bytes_and_stat(pyproject)
    return None if found is None else found[0]


def _pyproject_bytes_and_stat(pyproject: Path) -> tuple[bytes, os.stat_result] | None:
    """``_pyproject_bytes`` with the ``fstat`` of the file read (whose owner it is)."""
    from splice_build.spec.regular_file import read_regular_file_and_stat

    try:
        return read_regular_file_and_stat(pyproject, MAX_PROJECT_STATE_BYTES)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _invalid(pyproject, str(exc)) from exc


def _config_of(pyproject: Path, raw: bytes) -> WorkspaceConfig | None:
    return _config_in(pyproject, _toml_of(pyproject, raw))


def _toml_of(pyproject: Path, raw: bytes) -> dict[str, Any]:
    """``raw`` read as TOML; raises ``INVALID_CONFIG`` for anything that is not."""
    import tomllib

    try:
        return tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise _invalid(pyproject, str(exc)) from exc
    except RecursionError as exc:  # tomllib recurses once per level of nested arrays
        raise _invalid(pyproject, "nested too deeply") from exc


def _config_in(pyproject: Path, data: dict[str, Any]) -> WorkspaceConfig | None:
    """The ``[tool.splice.workspace]`` table of the TOML ``data``, checked."""
    # Walk the tables one key at a time: any level may be a value of another type
    # (``tool = 1`` is valid TOML), which is a malformed file, not a crash.
    table: Any = data
    for depth, key in enumerate(("tool", "splice", "workspace"), start=1):
        if depth == 3:
            _only_known(pyproject, "tool.splice", table, ("workspace",))
        table = table.get(key)
        if table is None:
            return None
        if not isinstance(table, dict):
            name = ".".join(("tool", "splice", "workspace")[:depth])
            raise _invalid(pyproject, f"[{name}] must be a table")
    _only_known(pyproject, "tool.splice.workspace", table, ("members", "exclude"))
    return WorkspaceConfig(
        _patterns(pyproject, table, "members"), _patterns(pyproject, table, "exclude")
    )


def _only_known(pyproject: Path, name: str, table: dict[str, Any], known: tuple[str, ...]) -> None:
    """``INVALID_CONFIG`` for a key of ``[name]`` that is none of ``known``, naming the one
    it is nearest to: ``memebers`` read as no members (every sync ``NOT_A_PROJECT``) and a
    ``[tool.splice.workspce]`` table as none (every project found a member), silently.
    ``[tool.splice]`` is Splice's alone, and only this module reads it."""
    from splice_build.spec.names import guessed

    for key in table:
        if key not in known:
            guess = guessed(key[:MAX_PATTERN_CHARS], known)
            shown = key if len(key) <= MAX_PATTERN_CHARS else key[:MAX_PATTERN_CHARS] + "…"
            raise _invalid(
                pyproject, f"[{name}] has no key {shown!r}{guess}: it holds only {', '.join(known)}"
            )


def find_workspace(
    start: Path,
    *,
    root: Path | None = None,
    remember: bool = False,
    home: Path | None = None,
    may_be_empty: bool = False,
) -> Workspace:
    """The workspace containing ``start`` (or rooted at ``root``); see the module docstring.

    ``remember``: write the memo when it did not hold this answer (never for a run that
    must change no byte). ``home``: SPLICE_HOME, whose grant record counts (default: from
    the environment). Raises ``ProjectError(NOT_A_PROJECT)`` when it has no member, unless
    ``may_be_empty`` (``splice workspace list``: an empty list is its answer).
    """
    passed: list[tuple[Path, int]] = []
    if root is not None:
        base = Path(os.path.abspath(root))
        memo = _Memo.read(base, base / PYPROJECT)
    else:
        base, memo, passed = _walk_up(Path(os.path.abspath(start)))
    # The projects above the root too: a repository checked out in a directory that a
    # project above it grants for writing is as much a tool's as anything planted in it.
    above = Path(os.path.realpath(base)).parents
    state = ProjectState()
    config = memo.config if memo is not None else None
    if memo is not None and config is not None:
        members = memo.members(base, GrantedSubtrees(state, above))
        found = memo.found
        if remember:
            memo.write(base)
        source = "pyproject"
    else:
        holder = _git_holder(base)
        if root is None and holder is not None:
            writer = _foreign_git(holder, base)
            if writer is not None:  # their work tree is not yours: the walk from here
                passed.append((holder / ".git", writer))
                holder = None
        top = None if holder is None else _git_toplevel(base, holder)
        if root is None and top is not None:
            base = top
        # Only a work tree git names for the directory holding its .git lists members.
        listed = None if top is None else _git_listed(base)
        source = "walk" if listed is None else "git"
        members = listed if listed is not None else _walk(base, GrantedSubtrees(state, above))
        found = members
    if home is None:
        from splice_build.project.home import SpliceHome

        home = SpliceHome.from_env(os.environ).path
    members, dropped, ignored = drop_tool_written(members, [*found, *above], home, state)
    if not members and may_be_empty:
        return Workspace(base, source, (), tuple(dropped), tuple(ignored), tuple(passed))
    if not members and dropped:
        raise ProjectError(
            ErrorCode.NOT_A_PROJECT,
            f"Every project of the workspace at {base} lies in a write grant, where a tool "
            "may have written it",
            details=Workspace(base, source, (), tuple(dropped), (), tuple(passed)).dropped_lines(),
            hint="Narrow the grant so that it holds no project, or move the projects out of it.",
        )
    if not members:
        raise ProjectError(
            ErrorCode.NOT_A_PROJECT,
            f"No project (splice.json) in the workspace at {base}",
            hint="Run `splice init` in a project, or `splice workspace add <dir>`.",
        )
    ordered = sorted(set(members), key=lambda p: p.relative_to(base).as_posix())
    return Workspace(base, source, tuple(ordered), tuple(dropped), tuple(ignored), tuple(passed))


def _walk_up(start: Path) -> tuple[Path, _Memo | None, list[tuple[Path, int]]]:
    """The nearest directory at or above ``start`` whose ``pyproject.toml`` holds a
    workspace table, with its memo; and each such file above ``start`` passed over as
    another user's (``_foreign``)."""
    passed: list[tuple[Path, int]] = []
    for directory in (start, *start.parents):
        try:
            memo = _Memo.read(directory, directory / PYPROJECT, start)
        except _Foreign as foreign:
            passed.append((directory / PYPROJECT, foreign.writer))
            continue
        if memo is not None and memo.config is not None:
            return directory, memo, passed
    return start, None, passed


def configured_root(start: Path) -> Path | None:
    """The nearest directory at or above ``start`` whose ``pyproject.toml`` holds a
    workspace table this user may take (``_walk_up``), or None."""
    base, memo, _ = _walk_up(Path(os.path.abspath(start)))
    return base if memo is not None else None


class _Foreign(Exception):
    """A ``pyproject.toml`` above the current directory that another user may have written
    and the workspace table (or the failure to read it) of which is not this user's to take."""

    def __init__(self, writer: int) -> None:
        super().__init__(writer)
        self.writer = writer


def _foreign(pyproject: Path, info: os.stat_result | None, start: Path) -> int | None:
    """The other user whose claim ``pyproject`` above ``start`` is (project/state_owner.py
    ``claimed_above``; ``info``: the ``fstat`` of what was read, None when it could not be
    read). Another user's ``/tmp/pyproject.toml`` made ``/tmp`` the workspace of your
    ``/tmp/victim``: its ``members`` synced their projects and left yours out, and a FIFO
    there was ``INVALID_CONFIG`` for every command."""
    from splice_build.project.state_owner import claimed_above

    return claimed_above(pyproject, info, start)


MEMO_FILE = "workspace.json"
# 2: the text of pyproject.toml, not its SHA-256; 3: the file's identity; 4: ``members``
# patterns no walk reaches refused (``_reachable``), which a memo of 3 would not check again
_MEMO_VERSION = 4


class _Memo:
    """The last parse of one ``pyproject.toml`` and match of its patterns (module docstring)."""

    def __init__(
        self,
        text: str,
        identity: list[int] | None,
        config: WorkspaceConfig | None,
        saved: dict[str, Any],
    ):
        self.text = text  # pyproject.toml's bytes (undecodable ones as surrogates)
        self.identity = identity  # pyproject.toml's (device, inode, ctime) as read
        self.config = config
        self._saved = saved  # the memo file's content, when it held these bytes
        self._answer: dict[str, Any] | None = None
        self.found: list[Path] = []  # every directory ``members`` walked to, member or not

    @classmethod
    def read(cls, directory: Path, pyproject: Path, start: Path | None = None) -> _Memo | None:
        """None without a ``pyproject.toml``; raises ``INVALID_CONFIG`` as ``read_config``.
        ``start``: the directory the walk up began in; ``_Foreign`` for another user's file
        above it that holds a workspace table or cannot be read (``_foreign``)."""
        try:
            found = _pyproject_bytes_and_stat(pyproject)
        except ProjectError:
            if start is not None and (writer := _foreign(pyproject, None, start)) is not None:
                raise _Foreign(writer) from None
            raise
        if found is None:
            return None
        raw, info = found
        if start is not None and (writer := _foreign(pyproject, info, start)) is not None:
            try:
                config = _config_of(pyproject, raw)
            except ProjectError:
                config = WorkspaceConfig(())
            if config is None:
                return None  # no workspace table: not a root whoever wrote it
            raise _Foreign(writer)
        text = raw.decode("utf-8", "surrogateescape")
        identity = _identity(pyproject)
        saved = _load_memo(directory / STATE_DIR / MEMO_FILE)
        if saved.get("pyproject") != text or identity is None or saved.get("file") != identity:
            return cls(text, identity, _config_of(pyproject, raw), {})
        return cls(text, identity, WorkspaceConfig(*map(tuple, saved["config"])), saved)

    def members(self, root: Path, granted: GrantedSubtrees) -> list[Path]:
        """The member directories, matched again only when the candidates differ."""
        assert self.config is not None
        # Names that differ only in bytes that are not UTF-8 (or in those and U+FFFD) are one
        # text to the patterns: they are members together or not at all, never one of them.
        found: dict[str, list[Path]] = {}
        self.found = _walk(root, granted)
        for directory in self.found:
            text = _matchable(directory.relative_to(root).as_posix() or ".")
            found.setdefault(text, []).append(directory)
        relative = sorted(found)
        if self._saved.get("candidates") == relative:
            matched = set(self._saved["members"])
        else:
            matched = _matching(self.config, relative)
        self._answer = {"candidates": relative, "members": sorted(matched)}
        return [d for rel in relative if rel in matched for d in found[rel]]

    def write(self, root: Path) -> None:
        """Save this answer unless the memo holds it already (best effort: it is a cache;
        ``NOT_WRITABLE`` for a link in the root's ``.splice/``, project/state_dir.py)."""
        assert self.config is not None and self._answer is not None
        if self.identity is None:
            return
        body = {
            "version": _MEMO_VERSION,
            "pyproject": self.text,
            "file": self.identity,
            "config": [list(self.config.members), list(self.config.exclude)],
            **self._answer,
        }
        if body == self._saved:
            return
        import json

        from splice_build.project.state_dir import write_cache

        write_cache(root, MEMO_FILE, json.dumps(body).encode("utf-8"))


def _load_memo(path: Path) -> dict[str, Any]:
    """The memo file's content when every field has its shape, else {} (recomputed)."""
    import json

    try:
        body = json.loads(read_regular_file(path, MAX_PROJECT_STATE_BYTES))
    except (OSError, ValueError, RecursionError):
        return {}
    shape = {"version", "pyproject", "file", "config", "candidates", "members"}
    if not isinstance(body, dict) or set(body) != shape or body["version"] != _MEMO_VERSION:
        return {}
    if not isinstance(body["file"], list) or not all(type(v) is int for v in body["file"]):
        return {}
    config = body["config"]
    if not isinstance(config, list) or len(config) != 2 or not isinstance(body["pyproject"], str):
        return {}
    lists = [body["candidates"], body["members"], *config]
    if not all(isinstance(x, list) and all(isinstance(v, str) for v in x) for x in lists):
        return {}
    return body


def _identity(path: Path) -> list[int] | None:
    """``path``'s ``file_identity`` (device, inode and ``ctime``) as a JSON list, None when
    it cannot be read: a memo is this machine's own only when it names them. A checkout can
    ship ``.splice/workspace.json`` with the text of its ``pyproject.toml`` and any members;
    it cannot know the inode and ``ctime`` its files get when they are written here, and no
    process sets a ``ctime``."""
    try:
        return list(file_identity(os.stat(path)))
    except OSError:
        return None


def _matching(config: WorkspaceConfig, relative: list[str]) -> set[str]:
    """Which of the ``relative`` paths (already ``_matchable``) are members."""
    members, exclude = _spec(config.members), _spec(config.exclude)
    return {r for r in relative if members.match_file(r) and not exclude.match_file(r)}


def _matchable(relative: str) -> str:
    """``relative`` as text a pattern can be matched against: a byte of a name that is not
    UTF-8 (held as a surrogate) becomes U+FFFD, which wildcards match and literals do not."""
    return relative.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _shown(relative: str) -> str:
    """``relative`` with each byte that is not UTF-8 written ``\\xNN``."""
    return relative.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _walk(root: Path, granted: GrantedSubtrees) -> list[Path]:
    """Directories holding a ``splice.json``, skipping hidden ones, ``node_modules`` and the
    write grants in ``granted`` (learned from each project as it is found: no project inside
    one can be a member, project/tool_written.py).

    A checkout chooses how deep its tree is: ``os.walk`` recurses once per level (Python
    3.11), so a tree nested past the recursion limit made a sync fail with ``RecursionError``.
    This walk keeps its own stack, follows no link (a linked directory is not entered, as
    with ``os.walk``) and skips a directory it cannot list (a path too long to name, a
    directory this user may not read)."""
    found = []
    pending: list[tuple[str, int | None]] = [(str(root), None)]
    while pending:
        directory, inode = pending.pop()
        # Checked when taken, not when listed: the project whose grant it is may be found
        # (its splice.json listed) after it.
        if inode is not None and granted.skips(directory, inode):
            continue
        try:
            with os.scandir(directory) as entries:
                listed = [(entry.name, _is_directory(entry), entry.inode()) for entry in entries]
        except OSError:
            continue
        for name, (is_directory, is_real), number in listed:
            if name == PROJECT_FILE and not is_directory:
                found.append(Path(directory))
                granted.learn(found[-1])
            elif is_real and not _never_walked(name):
                pending.append((os.path.join(directory, name), number))
    return found


def _never_walked(name: str) -> bool:
    """Whether ``_walk`` never enters a directory called ``name``: a hidden one or
    ``node_modules``."""
    return name in _PRUNED or name.startswith(".")


def _is_directory(entry: os.DirEntry[str]) -> tuple[bool, bool]:
    """Whether ``entry`` is a directory or a link to one, and whether it is a directory
    itself; ``os.walk``'s answers (an entry that cannot be looked up is neither)."""
    try:
        return entry.is_dir(), entry.is_dir(follow_symlinks=False)
    except OSError:
        return False, False


def _git(root: Path, *args: str) -> str | None:
    """git's output, decoded as file names are (a byte that is not UTF-8 as a surrogate,
    like the walk's), or None when git is missing, fails or outlasts its limit (an implicit
    bare repository, a FIFO in the checkout: security/checkout_git.py; the walk is used
    instead)."""
    from splice_build.security.checkout_git import run_git

    out = run_git(root, *args)
    return None if out is None else os.fsdecode(out)


def _git_holder(start: Path) -> Path | None:
    """The nearest directory at or above ``start`` that holds a ``.git``: git is asked only
    when there is one (without, its answer was never taken)."""
    return next((d for d in (start, *start.parents) if os.path.lexists(d / ".git")), None)


def _git_toplevel(start: Path, holder: Path) -> Path | None:
    """The git work tree holding ``start``, when git names ``holder`` (``_git_holder``),
    else None (no git: the walk).

    An unpacked archive can carry its ``.git`` with a ``config`` of its choosing, and
    ``core.worktree`` there made git name any directory of the machine as the work tree: a
    sync run inside the archive then synced (and wrote ``.splice/`` into) the projects of
    another repository instead of its own."""
    out = _git(start, "rev-parse", "--show-toplevel")
    if not out:
        return None
    # Only the line break is git's: a directory name may end with a space.
    top = Path(out.removesuffix("\n"))
    return top if _same_directory(top, holder) else None


def _foreign_git(holder: Path, start: Path) -> int | None:
    """The other user whose claim the ``.git`` above ``start`` is (project/state_owner.py
    ``claimed_above``), as for a ``pyproject.toml``, and git is not started there: with
    git told to trust any repository (``safe.directory = *``, a common setting of CI
    images) another user's ``/tmp/.git`` made ``/tmp`` the workspace of your
    ``/tmp/victim``, and your sync synced their projects beside it; and a FIFO of theirs as
    ``/tmp/.git/HEAD`` held every sync below ``/tmp`` for git's time limit (git opens it
    while it looks for the repository, before its own ownership check)."""
    from splice_build.project.state_owner import claimed_above

    return claimed_above(holder / ".git", None, start)


def _same_directory(one: Path, other: Path) -> bool:
    try:
        return os.path.samefile(one, other)
    except OSError:
        return False


def _git_listed(root: Path) -> list[Path] | None:
    """Directories of tracked or untracked-but-not-ignored ``splice.json`` files, or None."""
    out = _git(
        root,
        "ls-files",
        "-z",
        "--cached",
        "--others",
        "--exclude-standard",
        "--",
        f":(glob)**/{PROJECT_FILE}",
    )
    if out is None:
        return None
    found = []
    for name in out.split("\0"):
        path = root / name
        if name and _below_without_links(root, name) and path.is_file():
            found.append(path.parent)
    return found


def _below_without_links(root: Path, name: str) -> bool:
    """``name`` (a path git listed) is a file in a real directory below ``root``: relative,
    no ``..``, not in ``.splice``, and no symbolic link on the way to it. git lists what its
    index holds, and a work tree (an unpacked archive with its ``.git``) can hold a link
    where the index has a directory; a member reached through it would be another project
    of this machine, which the sync would then change (the walk follows no link either)."""
    import stat

    parts = name.split("/")
    if name.startswith("/") or any(p in ("", ".", "..", STATE_DIR) for p in parts):
        return False
    directory = root
    for part in parts[:-1]:
        directory = directory / part
        try:
            if not stat.S_ISDIR(os.lstat(directory).st_mode):
                return False
        except OSError:
            return False
    return True


def _patterns(pyproject: Path, table: Any, key: str) -> tuple[str, ...]:
    """The ``key`` patterns of ``table``, each string as written; raises ``INVALID_CONFIG``
    unless they are a list of at most ``MAX_PATTERNS`` strings of at most
    ``MAX_PATTERN_CHARS`` characters that ``_spec`` compiles."""
    value = table.get(key, [])
    name = f"[tool.splice.workspace] {key}"
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _invalid(pyproject, f"{name} must be a list of strings")
    if len(value) > MAX_PATTERNS:
        raise _invalid(pyproject, f"{name} holds more than {MAX_PATTERNS} patterns")
    if any(len(v) > MAX_PATTERN_CHARS for v in value):
        raise _invalid(
            pyproject, f"{name} holds a pattern of more than {MAX_PATTERN_CHARS} characters"
        )
    patterns = tuple(str(v) for v in value)
    try:
        _spec(patterns)
    except ValueError as exc:
        raise _invalid(pyproject, f"{name}: {exc}") from exc
    if key == "members":
        for pattern in patterns:
            _reachable(pyproject, pattern)
    return patterns


def _reachable(pyproject: Path, pattern: str) -> None:
    """``INVALID_CONFIG`` for a ``members`` pattern that names a directory no member can lie
    in: a hidden one or ``node_modules``, which the walk that finds members never enters
    (``_walk``), or ``..``, above the root. ``members = [".tools/x", "../shared"]`` matched
    nothing, and those projects were silently never synced. A negation (``!``) is left be."""
    if pattern.startswith("!"):
        return
    for part in pattern.split("/"):
        name = part.removeprefix("\\")
        if name == ".." or (name not in ("", ".") and _never_walked(name)):
            where = (
                "above the root"
                if name == ".."
                else "never entered (a hidden directory or node_modules)"
            )
            raise _invalid(
                pyproject,
                f"[tool.splice.workspace] members: {pattern!r} names {part!r}, {where}: "
                "no member can lie there",
            )


def _spec(patterns: tuple[str, ...]) -> Any:
    """``patterns`` compiled for matching; raises ``ValueError`` naming why they cannot be.

    pathspec picks its regular expression engine by default, and Python's own (``re``)
    backtracks: ``*a*a*a*a*a*a*a*a*b`` took a minute against one 60-character name. RE2 is
    asked for by name, so matching stays linear in the name. What pathspec and RE2 raise for
    a pattern they refuse (an invalid range ``[z-a]``, a lone ``!``, a POSIX class RE2 does
    not take, a set past RE2's memory budget) is each its own type: all become ``ValueError``.
    pathspec also compiles each pattern with ``re``, which warns (``FutureWarning``) about a
    set such as ``[[`` that a later Python may read otherwise: matching is RE2's, so the
    warning would only print a library's line on a command's stderr.
    """
    import re
    import warnings

    import pathspec
    import re2

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            return pathspec.GitIgnoreSpec.from_lines(patterns, backend="re2")
    except (ValueError, re.error, re2.error) as exc:
        raise ValueError(f"a pattern cannot be compiled ({exc})") from exc


def _invalid(pyproject: Path, problem: str) -> ProjectError:
    return ProjectError(ErrorCode.INVALID_CONFIG, f"{pyproject} is invalid: {problem}")


# editing ------------------------------------------------------------------------------------
def member_pattern(root: Path, directory: Path) -> str:
    """``directory`` as a pattern relative to ``root`` that matches that directory and no
    other (``_literal``); ``USAGE`` when it is outside, or no such pattern that
    ``read_config`` reads matches it."""
    relative = _relative(root, directory)
    pattern = _literal(relative) if relative else "."
    if len(pattern) > MAX_PATTERN_CHARS:  # written, every later read was INVALID_CONFIG
        raise UsageError(
            f"{_shown(relative)} cannot be written as a pattern of at most "
            f"{MAX_PATTERN_CHARS} characters (it takes {len(pattern)}); nothing was changed",
            hint=f"list it by a shorter pattern in {PYPROJECT} yourself, or rename it",
        )
    try:  # checked, not assumed: a name ending in a tab or U+3000 has no pattern that works
        matches = _spec((pattern,)).match_file(relative or ".")
    except ValueError:
        matches = False
    if not matches:
        raise UsageError(
            f"{_shown(relative)!r} cannot be written as a pattern that matches it (a name "
            "ending in a white space character); nothing was changed",
            hint="rename the directory",
        )
    return pattern


def _literal(relative: str) -> str:
    """``relative`` as a pattern matching exactly that path (and what lies below it).

    Written as it stands, a name was read as a pattern: removing ``packages/[a]`` excluded
    ``packages/a`` (``[a]`` is a set) and left ``packages/[a]`` a member, ``packages/*``
    excluded every package, and a top-level ``a`` (no slash: matched at any depth, as in
    ``.gitignore``) excluded ``packages/a`` too. Every character outside a plain allow-list
    is escaped with a backslash (``\\x`` matches ``x``), and a single name is anchored with
    a leading ``/``."""
    escaped = "".join(c if c.isalnum() or c in _PLAIN else "\\" + c for c in relative)
    return escaped if "/" in relative else "/" + escaped


_PLAIN = frozenset("._-/+@=,%:")


def _relative(root: Path, directory: Path) -> str:
    """``directory`` relative to ``root`` ("" for the root); ``USAGE`` when it is outside or
    its name is not UTF-8."""
    absolute = Path(os.path.abspath(directory))
    try:
        relative = absolute.relative_to(root).as_posix()
    except ValueError:
        raise UsageError(f"{directory} is not inside the workspace at {root}") from None
    if relative != _matchable(relative):
        raise UsageError(
            f"{_shown(relative)} is not valid UTF-8, so it cannot be written to {PYPROJECT}",
            hint="rename the directory to a UTF-8 name",
        )
    return relative


def add_member(
    root: Path,
    directory: Path,
    *,
    home: Path | None = None,
    on_blocked: Callable[[], None] | None = None,
) -> bool:
    """Add ``directory`` to ``members`` (and drop it from ``exclude``); False if already there.
    ``on_blocked``: called before waiting for the root's lock, which another process holds
    (``_editing``).

    Creates ``pyproject.toml`` or the ``[tool.splice.workspace]`` table when missing, listing
    the projects that were members (``_found_members``) and ``directory``. A
    ``directory`` that does not exist (or is no directory) is refused with ``USAGE`` and
    nothing is written: a typo would otherwise become a member that matches nothing.
    """
    pattern = member_pattern(root, directory)
    _walked_into(root, directory)
    if not directory.is_dir():
        problem = "is not a directory" if directory.exists() else "does not exist"
        raise UsageError(
            f"{directory} {problem}",
            hint=f"Create the project first (`splice init {_relative(root, directory)}`), then add it.",
        )
    with _editing(root, on_blocked):
        found = _found_members(root, home)
        if found is not None and _among(directory, found):
            return False  # written, the table would stop finding the projects made later
        document = _load_document(root)
        table = _workspace_table(document)
        for member in _listed(root, found, adding=True):
            _array(table, "members").append(member)
        # the name as earlier versions wrote it too (unescaped, unanchored), as they dropped it
        changed = _remove_from(table, "exclude", _relative(root, directory) or ".")
        changed = _remove_from(table, "exclude", pattern) or changed
        if pattern not in _array(table, "members"):
            _array(table, "members").append(pattern)
            changed = True
        _still_excluded(root, directory, table)
        if changed or found is not None:
            _save_document(root, document)
    return changed


def _still_excluded(root: Path, directory: Path, table: Any) -> None:
    """``USAGE`` when an ``exclude`` pattern other than the directory's own entry keeps it out
    (``apps/``, ``apps/*``, ``*/web``): ``workspace add apps/web`` printed ``added``, wrote
    the member and left it excluded, never synced. Nothing is written."""
    if directory_is_member(root, directory, table):
        return
    relative = _relative(root, directory) or "."
    pyproject = root / PYPROJECT
    exclude = _patterns(pyproject, table, "exclude")
    keeping = [p for p in exclude if _spec((p,)).match_file(relative)] or exclude
    raise UsageError(
        f"{_shown(relative)} stays excluded by {', '.join(map(repr, keeping))} in "
        f"[tool.splice.workspace] exclude: it would not be a member; nothing was changed",
        hint=f"narrow that exclude pattern in {pyproject}, then add it",
    )


def _walked_into(root: Path, directory: Path) -> None:
    """``USAGE`` when ``directory`` lies in a directory the walk that finds members never
    enters (a hidden one, ``node_modules``; ``_walk``): ``workspace add .tools/x`` printed
    ``added`` and wrote the pattern, and ``.tools/x`` was never a member."""
    relative = _relative(root, directory)
    parts = [] if relative == "." else relative.split("/")
    skipped = next((p for p in parts if _never_walked(p)), None)
    if skipped is not None:
        raise UsageError(
            f"{_shown(relative)} lies in {_shown(skipped)}, which the walk that finds members "
            "never enters (a hidden directory or node_modules): it would never be a member; "
            "nothing was changed",
            hint="move the project out of it, then add it",
        )


def remove_member(
    root: Path,
    directory: Path,
    *,
    home: Path | None = None,
    on_blocked: Callable[[], None] | None = None,
) -> str:
    """Stop syncing ``directory``: ``"removed"`` from ``members`` if listed as written and no
    other pattern matches it, else ``"excluded"`` (added to ``exclude``), or ``"absent"``
    when it was not a member.

    The entry is dropped first and membership judged on what is left: an entry ``add``
    wrote beside a pattern that also matches (``add`` lists a directory it takes out of
    ``exclude``) would otherwise go while the directory stayed a member, reported removed.
    Without a ``[tool.splice.workspace]`` table, the one written lists the other projects
    that were members (``_found_members``). ``on_blocked``: as ``add_member``'s.
    """
    pattern = member_pattern(root, directory)
    with _editing(root, on_blocked):
        found = _found_members(root, home)
        if found is not None and not _among(directory, found):
            return "absent"
        document = _load_document(root)
        table = _workspace_table(document)
        for member in _listed(root, found, adding=False):
            _array(table, "members").append(member)
        listed = _remove_from(table, "members", _relative(root, directory) or ".")
        listed = _remove_from(table, "members", pattern) or listed
        if directory_is_member(root, directory, table) and pattern not in _array(table, "exclude"):
            _array(table, "exclude").append(pattern)
            outcome = "excluded"
        elif listed:
            outcome = "removed"
        else:
            return "absent"
        _save_document(root, document)
    return outcome


def _found_members(root: Path, home: Path | None) -> Workspace | None:
    """The workspace ``find_workspace`` finds at ``root`` without a ``[tool.splice.workspace]``
    table (git's listing or the walk), or None when ``root``'s ``pyproject.toml`` has one.

    Once written, the table's patterns alone say who is a member: created holding only the
    directory added, it silently dropped every other project ``workspace list`` showed, and
    ``remove`` of such a project found no entry, printed ``absent`` and left it synced.
    """
    if read_config(root / PYPROJECT) is not None:
        return None
    try:
        return find_workspace(root, root=root, home=home)
    except ProjectError as exc:
        if exc.code is not ErrorCode.NOT_A_PROJECT:
            raise
        return Workspace(root, "walk", ())  # no member yet: the table starts with the directory


def _kept_by_a_table(root: Path, workspace: Workspace) -> None:
    """``USAGE`` when a member git's listing found is not one of the directories a table's
    patterns are matched against (``_walk``'s: none under a hidden directory or
    ``node_modules``): listed in the table, ``.tools/x`` was silently no member any more."""
    walked = {os.path.abspath(d) for d in _walk(root, GrantedSubtrees(ProjectState(), ()))}
    lost = [m for m in workspace.members if os.path.abspath(m) not in walked]
    if lost:
        shown = workspace.label(lost[0])
        raise UsageError(
            f"{shown} is a member (found by git's listing) that no [tool.splice.workspace] "
            "table can keep: with a table, members are found by a walk that enters no hidden "
            "directory or node_modules; nothing was changed",
            hint=f"move {shown} out of the hidden directory or node_modules, or write the "
            f"table in {PYPROJECT} yourself (it then stops being a member)",
        )


def _among(directory: Path, found: Workspace) -> bool:
    """Whether ``directory`` is one of ``found``'s members (made absolute, as ``_relative``
    does)."""
    return os.path.abspath(directory) in {os.path.abspath(member) for member in found.members}


def _listed(root: Path, found: Workspace | None, *, adding: bool) -> list[str]:
    """The literal patterns of ``found``'s members for the first table (none when there is
    one); ``USAGE`` when they and the change are more than a table may hold, or when one of
    them is none a table can keep (``_kept_by_a_table``), and nothing is written. ``add`` of
    a member and ``remove`` of no member write nothing, so the change is one more or one
    fewer."""
    if found is None:
        return []
    count = len(found.members)
    if count + (1 if adding else -1) > MAX_PATTERNS:
        raise UsageError(
            f"the workspace at {root} has {count} projects, and [tool.splice.workspace] "
            f"would list each of them, where it holds at most {MAX_PATTERNS} patterns; "
            "nothing was changed",
            hint=f"write [tool.splice.workspace] members in {PYPROJECT} as patterns "
            '(members = ["packages/*"]), then add or remove',
        )
    if found.source == "git":
        _kept_by_a_table(root, found)
    return [member_pattern(root, member) for member in found.members]


@contextlib.contextmanager
def _editing(root: Path, on_blocked: Callable[[], None] | None) -> Iterator[None]:
    """Hold the root's ``.splice/state.lock`` around a read-modify-write of its
    ``pyproject.toml``: two ``workspace add`` at once would otherwise each write back what
    it read, and the member the first added would be lost (then never synced or checked).
    ``on_blocked`` is told when another process holds it: a sync of a workspace whose root is
    a member holds it to its end, and ``workspace add`` waited that long without a word."""
    from splice_build.project.layout import ProjectLayout
    from splice_build.project.state_dir import state_lock

    with state_lock(ProjectLayout(root), on_blocked):
        yield


def directory_is_member(root: Path, directory: Path, table: Any) -> bool:
    """Whether ``table``'s patterns make ``directory`` a member; raises ``INVALID_CONFIG``
    for patterns ``read_config`` refuses."""
    relative = _relative(root, directory) or "."
    pyproject = root / PYPROJECT
    members = _spec(_patterns(pyproject, table, "members"))
    exclude = _spec(_patterns(pyproject, table, "exclude"))
    return members.match_file(relative) and not exclude.match_file(relative)


def _load_document(root: Path) -> Any:
    import tomlkit

    path = root / PYPROJECT
    try:
        raw = read_regular_file(path, MAX_PROJECT_STATE_BYTES)
    except FileNotFoundError:
        return tomlkit.document()
    except OSError as exc:
        raise _invalid(path, str(exc)) from exc
    _check_editable(path, raw)
    try:
        return tomlkit.parse(raw.decode("utf-8"))
    except Exception as exc:  # tomlkit's parse errors share no public base class
        raise _invalid(path, str(exc)) from exc


def _check_editable(path: Path, raw: bytes) -> None:
    """Raise ``INVALID_CONFIG`` unless ``raw`` is TOML of at most ``MAX_EDITED_ENTRIES`` keys
    and array items, counted on tomllib's reading, which is linear.

    tomlkit, which keeps the file's layout for the edit, is not: each dotted key under one
    table costs it the keys before it (40,000 ``a.kN = 1`` lines, 509 KB, held ``splice
    workspace remove`` more than 120 s; a file may have 64 MiB)."""
    data = _toml_of(path, raw)
    _config_in(path, data)  # the refusals of reading the workspace: bad patterns
    entries, stack = 0, [data]
    while stack:
        node = stack.pop()
        children = list(node.values()) if isinstance(node, dict) else node
        entries += len(children)
        if entries > MAX_EDITED_ENTRIES:
            raise _invalid(
                path, f"more than {MAX_EDITED_ENTRIES} keys and array items to edit in place"
            )
        stack += [child for child in children if isinstance(child, dict | list)]


def _workspace_table(document: Any) -> Any:
    """The ``[tool.splice.workspace]`` table of ``document``, made where missing: inside an
    inline table (``tool = {ruff = {...}}``) as an inline table, the only kind TOML lets it
    hold (a section there made tomlkit raise ``ValueError``, an ``INTERNAL_ERROR``)."""
    import tomlkit
    from tomlkit.items import InlineTable

    node = document
    for key in ("tool", "splice", "workspace"):
        if key not in node:
            inline = isinstance(node, InlineTable)
            node[key] = (
                tomlkit.inline_table()
                if inline
                else tomlkit.table(is_super_table=key != "workspace")
            )
        node = node[key]
    return node


def _array(table: Any, key: str) -> Any:
    import tomlkit

    if key not in table:
        table[key] = tomlkit.array()
    return table[key]


def _remove_from(table: Any, key: str, pattern: str) -> bool:
    """Remove ``pattern`` from ``table[key]``; drops an ``exclude`` that becomes empty."""
    if key not in table or pattern not in table[key]:
        return False
    array = table[key]
    array.remove(pattern)
    if key == "exclude" and not array:
        del table[key]
    return True


def _save_document(root: Path, document: Any) -> None:
    from splice_build.project.atomic import atomic_write_bytes

    atomic_write_bytes(root / PYPROJECT, document.as_string().encode("utf-8"), keep_mode=True)
