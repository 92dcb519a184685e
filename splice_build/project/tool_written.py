"""Projects a sandboxed tool may have written: a ``splice.json`` inside a write grant.

A tool granted ``fs.write: ["out"]`` may create anything in ``out``, a ``splice.json`` and a
``splice.lock`` included. Workspace discovery (``splice sync``, ``splice workspace list``,
doit's tasks) counts every ``splice.json`` it finds as a project, so the user's next sync
then contacted the registry that file names (a tool with no network sent what it could read
to a server of its choosing, in the URL) and installed what its lock grants without asking:
the lock of a project without an installed copy is taken as reviewed. Such a project is not
the user's: it lies in a place the user handed to a tool.

So a candidate member is dropped when it lies at or below a directory that a write grant
recorded in the ``splice.lock`` of any project found names (the runtime grants a package
what its lock entry records, narrowed by the installed manifest: the lock bounds what any
tool of that project could write). Grants are compared by device and inode, so a grant
reached through a link, or named in another case, still covers what lies in it. A grant
that reaches its own project's root cannot be what a tool ran with (the runtime refuses it,
docs/security.md#grants-and-project-state), so a planted lock cannot drop every project by
granting ``/``; it can still name a sibling, which is then reported as dropped, never
synced silently through.

A lock says only what its packages may write now, so the grants the runtime recorded
before a tool started (project/grant_record.py: the project's ``.splice/``, or SPLICE_HOME's
two, for a run outside any project) count as well: a package run and then removed, or run by
``splice run --dir``, still holds what it wrote. Each holds the directory it recorded and,
as a lock's entry does, its entry joined to the project the record lies in now (a copy of
the project has other inodes).

``enclosing_write_grant`` is the same rule for running: a project whose directory lies in a
write grant of a project above it runs nothing (install/installed.py).

A lock or record another user owns (``/tmp/splice.lock`` on a shared machine) holds only
projects that user can write (project/state_owner.py); for any other it is ignored, and
reported.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from splice_build.file_keys import SameFile, same_file_at
from splice_build.project.grant_record import (
    RECORD_NAME,
    SHARED_RECORD_NAME,
    Recorded,
    read_records_and_stat,
)
from splice_build.project.state_owner import Writers, other_writer
from splice_build.records import dataclass


@dataclass(frozen=True)
class Dropped:
    """A candidate member inside a write grant, and the project whose lock records it."""

    directory: Path
    granted_by: Path
    grant: str  # the lock's entry as written
    writer: int | None = None  # the other user whose state records it (state_owner.py)


# Where a grant came from: the project, its entry as written, and the other user whose
# lock or record it is (None: this user's, root's or the project owner's, state_owner.py).
_Holder = tuple[Path, str, int | None]


def drop_tool_written(
    candidates: Sequence[Path],
    projects: Iterable[Path],
    home: Path,
    state: ProjectState | None = None,
) -> tuple[list[Path], list[Dropped], list[Dropped]]:
    """``candidates`` split into those outside every write grant the locks and grant records
    of ``projects`` (every project found, members or not) and SPLICE_HOME's grant record
    hold, and those inside one (each with the grant that holds it); then the grants of
    another user's state that a kept candidate lies in but that user cannot write.
    ``state``: what the walk read of these projects already (``GrantedSubtrees``)."""
    state = ProjectState() if state is None else state
    ancestry = _Ancestry()
    grants = _write_grants(projects, ancestry, state)
    _add_recorded(grants, _records(projects, home), ancestry)
    if not grants:
        return list(candidates), [], []
    writers = Writers()
    kept, dropped, ignored = [], [], []
    for directory in candidates:
        holders = _holders(ancestry(directory), grants)
        holder = next(
            (h for h in holders if h[2] is None or writers.may_write(h[2], directory)), None
        )
        if holder is None:
            kept.append(directory)
            ignored += [Dropped(directory, *h) for h in dict.fromkeys(holders)]
        else:
            dropped.append(Dropped(directory, *holder))
    return kept, dropped, ignored


def _write_grants(
    projects: Iterable[Path], ancestry: _Ancestry, state: ProjectState
) -> dict[SameFile, list[_Holder]]:
    """Every existing directory a write grant of these projects' locks names, by identity."""
    grants: dict[SameFile, list[_Holder]] = {}
    for project in projects:
        own: set[SameFile] | None = None
        writes, writer = state.lock_writes(project)
        for write in writes:
            # A lock's entry is project-relative (lockfile.py refuses '..' and absolute
            # paths); joined as effective_fs_path joins it (spec/project_state.py).
            identity = same_file_at(os.path.normpath(os.path.join(project, write)))
            if identity is None:  # nothing there, nothing written there
                continue
            own = set(ancestry(project)) if own is None else own
            if identity not in own:
                grants.setdefault(identity, []).append((project, write, writer))
    return grants


def _records(projects: Iterable[Path], home: Path) -> list[tuple[Path, Recorded, int | None]]:
    """Every entry of the grant records of ``projects`` and of SPLICE_HOME, with the
    directory its entry was joined to (project/grant_record.py) and the other user whose
    record it is (None: trusted, state_owner.py)."""
    from splice_build.project.home_owner import home_problem

    found = []
    # The home's owner is trusted as a project's is, unless the home is not the user's alone:
    # then, as everywhere, a record of another user holds only what they may write.
    place = home if home_problem(home) is None else None
    for name in (RECORD_NAME, SHARED_RECORD_NAME):
        entries, writer = _record_of(home / name, place)
        found += [(Path(r.root), r, writer) for r in entries]
    from splice_build.project.layout import STATE_DIR

    for project in projects:
        entries, writer = _record_of(project / STATE_DIR / RECORD_NAME, project)
        found += [(project, r, writer) for r in entries]
    return found


def _record_of(path: Path, place: Path | None) -> tuple[list[Recorded], int | None]:
    """The entries of the record ``path`` and the other user whose file it is (``place``:
    the project, or SPLICE_HOME, it belongs to, whose owner is trusted; None: none is)."""
    entries, info = read_records_and_stat(path)
    if info is None:
        return entries, None
    return entries, other_writer(info, [path, path.parent], place)


class ProjectState:
    """Each project's lock grants, read once per discovery: the walk (``GrantedSubtrees``)
    and ``drop_tool_written`` share them."""

    def __init__(self) -> None:
        self._locks: dict[Path, tuple[list[str], int | None]] = {}

    def lock_writes(self, project: Path) -> tuple[list[str], int | None]:
        if project not in self._locks:
            self._locks[project] = _lock_writes(project)
        return self._locks[project]


class GrantedSubtrees:
    """Directories the workspace walk need not enter: each a write grant of this user's or
    root's lock, lying inside the project whose lock it is (``out``), learned from the
    projects above the root and from each project as the walk finds it. Only locks: a
    grant only a record holds (its package removed) is rare, and reading every record
    during the walk cost a no-op sync more than it saved.

    Every project inside such a directory is dropped by ``drop_tool_written`` whatever else
    holds it, so walking it (a tool's 20,000-file ``out`` on every sync) found nothing to
    sync. What the walk does not see there is not reported either; and the grants of the
    projects inside are not read: a real one stays inside its project (a lock refuses
    ``..``), or, through a link, SPLICE_HOME's record holds it (project/grant_record.py).
    A grant reaching beside its project (a planted lock's link, another user's state) is
    never pruned: what it holds is reported as before."""

    def __init__(self, state: ProjectState, above: Iterable[Path]) -> None:
        self._state = state
        self._held: set[SameFile] = set()
        self._inodes: set[int] = set()
        for project in above:
            self.learn(project)

    def learn(self, project: Path) -> None:
        """Note the write grants of ``project``'s lock that lie inside it."""
        writes, writer = self._state.lock_writes(project)
        places = writes if writer is None else []
        if not places:
            return
        real = os.path.realpath(project)
        for place in places:
            # Joined as ``_write_grants`` joins it: the directory pruned is the one whose
            # projects ``drop_tool_written`` drops. Resolved as it stands, "a/../b" with ``a``
            # a link was another directory, whose projects the walk then hid unreported.
            joined = os.path.normpath(os.path.join(project, place))
            try:
                inside = os.path.realpath(joined)
            except (OSError, ValueError):  # a checkout's lock may name "a\u0000b"
                continue
            if inside == real or os.path.commonpath([real, inside]) != real:
                continue
            identity = same_file_at(inside)
            if identity is not None:
                self._held.add(identity)
                self._inodes.add(identity[1])

    def skips(self, directory: str, inode: int) -> bool:
        """Whether ``directory`` (its ``inode`` as listed: no system call unless it matches)
        is one of these grants."""
        return inode in self._inodes and same_file_at(directory) in self._held


def _add_recorded(
    grants: dict[SameFile, list[_Holder]],
    records: list[tuple[Path, Recorded, int | None]],
    ancestry: _Ancestry,
) -> None:
    """The recorded grants joined to ``grants``; one reaching its own root is ignored (the
    runtime never grants it, so only a planted record names it).

    Each holds what its entry, as written, names below the directory the record lies in
    now, as a lock's does: the real path, device and inode were the runtime's view, and a
    project copied to another disk, or seen from a container, has others (the planted
    project of a copy was a member again once the package was removed)."""
    for root, recorded, writer in records:
        own = set(ancestry(root))
        joined = same_file_at(os.path.normpath(os.path.join(root, recorded.grant)))
        held = recorded.identities() | ({joined} if joined is not None else set())
        for identity in held - own:
            grants.setdefault(identity, []).append((root, recorded.grant, writer))


def _lock_writes(project: Path) -> tuple[list[str], int | None]:
    """Every ``permissions.fs.write`` string of the project's lock (``splice.lock``, else the
    legacy ``splice-lock.json``, as ``load_lockfile`` picks), read without the lock's
    validation: more than the runtime would grant only ever drops more, and a sync reads
    every lock of the workspace here, the no-op fast path included, before anything else
    would. With them, the other user whose lock it is (None: trusted, state_owner.py)."""
    import json

    from splice_build.spec.limits import MAX_PROJECT_STATE_BYTES
    from splice_build.spec.project_state import LEGACY_LOCK_FILE, LOCK_FILE
    from splice_build.spec.regular_file import read_regular_file_and_stat

    for name in (LOCK_FILE, LEGACY_LOCK_FILE):
        path = project / name
        try:
            data, info = read_regular_file_and_stat(path, MAX_PROJECT_STATE_BYTES)
            if _writes_nothing(data):
                return [], None
            document = json.loads(data)
        except FileNotFoundError:
            continue
        except (OSError, ValueError, RecursionError):  # no package of it runs: INVALID_PROJECT
            return [], None
        writes = [w for entry in _members(document, "packages") for w in _fs_writes(entry)]
        return writes, other_writer(info, [path], project) if writes else None
    return [], None


def _writes_nothing(data: bytes) -> bool:
    """Whether every ``"write"`` key of the JSON text ``data`` holds ``[]``, seen from its
    bytes: the answer ``_lock_writes`` would give after parsing it, ``[]``, without the
    parsing (a no-op sync reads every member's lock here; ``json.loads`` of a lock of three
    packages costs more than twice this look). Only for text whose every ``"write"`` is
    followed by ``: []`` as Splice writes it, with no backslash (no escape can spell the key
    another way, nor hide a quote) and no NUL byte (``json.loads`` reads UTF-8 then, not
    UTF-16 or UTF-32); any other text is parsed. Then each ``"write"`` is a whole string
    token, and any key ``write`` is one of them, ``[]``; text that is no JSON at all is
    ``[]`` parsed, too."""
    return (
        b"\\" not in data
        and b"\x00" not in data
        and data.count(b'"write"') == data.count(b'"write": []')
    )


def _fs_writes(entry: object) -> list[str]:
    node: object = entry
    for key in ("permissions", "fs"):
        node = node.get(key) if isinstance(node, dict) else None
    writes = node.get("write") if isinstance(node, dict) else None
    return [w for w in writes if isinstance(w, str)] if isinstance(writes, list) else []


def _members(document: object, key: str) -> list[object]:
    packages = document.get(key) if isinstance(document, dict) else None
    return list(packages.values()) if isinstance(packages, dict) else []


def _holders(ancestry: list[SameFile], grants: dict[SameFile, list[_Holder]]) -> list[_Holder]:
    """The grants (with their projects) holding any of ``ancestry``, nearest first."""
    return [holder for identity in ancestry for holder in grants.get(identity, [])]


class _Ancestry:
    """The identities of a directory's real path and of every directory above it, each
    directory looked up once per call (a workspace's projects share most of their parents)."""

    def __init__(self) -> None:
        self._known: dict[str, SameFile | None] = {}
        self._answers: dict[str, list[SameFile]] = {}

    def __call__(self, directory: Path) -> list[SameFile]:
        key = str(directory)
        if key not in self._answers:
            self._answers[key] = self._look_up(directory)
        return self._answers[key]

    def _look_up(self, directory: Path) -> list[SameFile]:
        real = os.path.realpath(directory)
        places = [real]
        while places[-1] != os.path.dirname(places[-1]):
            places.append(os.path.dirname(places[-1]))
        found = []
        for place in places:
            if place not in self._known:
                self._known[place] = same_file_at(place)
            identity = self._known[place]
            if identity is not None:
                found.append(identity)
        return found


def enclosing_write_grant(root: Path, home: Path) -> tuple[Path, str] | None:
    """A write grant that holds ``root`` (with the project that recorded it), recorded by the
    lock or the grant record of a directory above ``root`` or by SPLICE_HOME's record, or
    None: ``drop_tool_written``'s rule, for ``root`` alone.

    Such a project's ``splice.lock`` and ``.splice/`` are files a tool of the project above
    may rewrite: a tool granted ``fs.write: ["packages"]`` rewrote ``packages/a``'s installed
    package and its lock entry (files digest and grant) to match, and the user's next run in
    ``packages/a`` ran its code with an environment variable it was never granted. Only the
    projects above ``root`` on its real path are known (a grant through a link from a
    project elsewhere is not). A grant of another user's lock or record holds ``root`` only
    when that user can write it (``/tmp/splice.lock`` of another user stopped every project
    under ``/tmp``)."""
    above = Path(os.path.realpath(root)).parents
    _, dropped, _ = drop_tool_written([root], above, home)
    return (dropped[0].granted_by, dropped[0].grant) if dropped else None


def in_write_grant(paths: Sequence[Path], home: Path) -> bool:
    """Whether ``enclosing_write_grant`` finds a grant holding any of ``paths`` (a directory
    and its ``.env`` files, broker/keys.py), the locks and records above them read once for
    the shallowest real path and those whose real paths lie directly in it: the directories
    above any of those are all above each (or the path itself, whose own grants hold
    nothing of its own ancestry, ``_write_grants``), so each answer stays its own. Any
    other path (a link to elsewhere) is asked alone: a project beside it could hold it."""
    reals = {path: Path(os.path.realpath(path)) for path in paths}
    base = min(reals.values(), key=lambda real: len(real.parts))
    near = [p for p, real in reals.items() if base in (real, real.parent)]
    if drop_tool_written(near, [base, *base.parents], home)[1]:
        return True
    return any(enclosing_write_grant(p, home) is not None for p in paths if p not in near)
