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
for a run outside any project) count as well: a package run and then removed, or run by
``splice run --dir``, still holds what it wrote. Each holds the directory it recorded and,
as a lock's entry does, its entry joined to the project the record lies in now (a copy of
the project has other inodes).

``enclosing_write_grant`` is the same rule for running: a project whose directory lies in a
write grant of a project above it runs nothing (install/installed.py).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from splice_build.project.grant_record import (
    RECORD_NAME,
    Identity,
    Recorded,
    directory_identity,
    read_records,
)
from splice_build.records import dataclass


@dataclass(frozen=True)
class Dropped:
    """A candidate member inside a write grant, and the project whose lock records it."""

    directory: Path
    granted_by: Path
    grant: str  # the lock's entry as written


def drop_tool_written(
    candidates: Sequence[Path], projects: Iterable[Path], home: Path
) -> tuple[list[Path], list[Dropped]]:
    """``candidates`` split into those outside every write grant the locks and grant records
    of ``projects`` (every project found, members or not) and SPLICE_HOME's grant record
    hold, and those inside one (each with the grant that holds it)."""
    ancestry = _Ancestry()
    grants = _write_grants(projects, ancestry)
    _add_recorded(grants, _records(projects, home), ancestry)
    if not grants:
        return list(candidates), []
    kept, dropped = [], []
    for directory in candidates:
        holder = _holder(ancestry(directory), grants)
        if holder is None:
            kept.append(directory)
        else:
            dropped.append(Dropped(directory, *holder))
    return kept, dropped


def _write_grants(
    projects: Iterable[Path], ancestry: _Ancestry
) -> dict[Identity, tuple[Path, str]]:
    """Every existing directory a write grant of these projects' locks names, by identity."""
    grants: dict[Identity, tuple[Path, str]] = {}
    for project in projects:
        own: set[Identity] | None = None
        for write in _lock_writes(project):
            # A lock's entry is project-relative (lockfile.py refuses '..' and absolute
            # paths); joined as effective_fs_path joins it (spec/project_state.py).
            identity = directory_identity(os.path.normpath(os.path.join(project, write)))
            if identity is None:  # nothing there, nothing written there
                continue
            own = set(ancestry(project)) if own is None else own
            if identity not in own:
                grants.setdefault(identity, (project, write))
    return grants


def _records(projects: Iterable[Path], home: Path) -> list[tuple[Path, Recorded]]:
    """Every entry of the grant records of ``projects`` and of SPLICE_HOME, with the
    directory its entry was joined to (project/grant_record.py)."""
    from splice_build.project.layout import STATE_DIR

    found = [(Path(r.root), r) for r in read_records(home / RECORD_NAME)]
    for project in projects:
        found += [(project, r) for r in read_records(project / STATE_DIR / RECORD_NAME)]
    return found


def _add_recorded(
    grants: dict[Identity, tuple[Path, str]],
    records: list[tuple[Path, Recorded]],
    ancestry: _Ancestry,
) -> None:
    """The recorded grants joined to ``grants``; one reaching its own root is ignored (the
    runtime never grants it, so only a planted record names it).

    Each holds what its entry, as written, names below the directory the record lies in
    now, as a lock's does: the real path, device and inode were the runtime's view, and a
    project copied to another disk, or seen from a container, has others (the planted
    project of a copy was a member again once the package was removed)."""
    for root, recorded in records:
        own = set(ancestry(root))
        joined = directory_identity(os.path.normpath(os.path.join(root, recorded.grant)))
        held = recorded.identities() | ({joined} if joined is not None else set())
        for identity in held - own:
            grants.setdefault(identity, (root, recorded.grant))


def _lock_writes(project: Path) -> list[str]:
    """Every ``permissions.fs.write`` string of the project's lock (``splice.lock``, else the
    legacy ``splice-lock.json``, as ``load_lockfile`` picks), read without the lock's
    validation: more than the runtime would grant only ever drops more, and a sync reads
    every lock of the workspace here, the no-op fast path included, before anything else
    would."""
    import json

    from splice_build.project.layout import ProjectLayout
    from splice_build.spec.limits import MAX_PROJECT_STATE_BYTES
    from splice_build.spec.regular_file import read_regular_file

    layout = ProjectLayout(project)
    for path in (layout.lock_file, layout.legacy_lock_file):
        try:
            document = json.loads(read_regular_file(path, MAX_PROJECT_STATE_BYTES))
        except FileNotFoundError:
            continue
        except (OSError, ValueError, RecursionError):  # no package of it runs: INVALID_PROJECT
            return []
        return [w for entry in _members(document, "packages") for w in _fs_writes(entry)]
    return []


def _fs_writes(entry: object) -> list[str]:
    node: object = entry
    for key in ("permissions", "fs"):
        node = node.get(key) if isinstance(node, dict) else None
    writes = node.get("write") if isinstance(node, dict) else None
    return [w for w in writes if isinstance(w, str)] if isinstance(writes, list) else []


def _members(document: object, key: str) -> list[object]:
    packages = document.get(key) if isinstance(document, dict) else None
    return list(packages.values()) if isinstance(packages, dict) else []


def _holder(
    ancestry: list[Identity], grants: dict[Identity, tuple[Path, str]]
) -> tuple[Path, str] | None:
    """The grant (and its project) holding the first of ``ancestry`` that one holds."""
    for identity in ancestry:
        if identity in grants:
            return grants[identity]
    return None


class _Ancestry:
    """The identities of a directory's real path and of every directory above it, each
    directory looked up once per call (a workspace's projects share most of their parents)."""

    def __init__(self) -> None:
        self._known: dict[str, Identity | None] = {}
        self._answers: dict[str, list[Identity]] = {}

    def __call__(self, directory: Path) -> list[Identity]:
        key = str(directory)
        if key not in self._answers:
            self._answers[key] = self._look_up(directory)
        return self._answers[key]

    def _look_up(self, directory: Path) -> list[Identity]:
        real = os.path.realpath(directory)
        places = [real]
        while places[-1] != os.path.dirname(places[-1]):
            places.append(os.path.dirname(places[-1]))
        found = []
        for place in places:
            if place not in self._known:
                self._known[place] = directory_identity(place)
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
    project elsewhere is not)."""
    above = Path(os.path.realpath(root)).parents
    _, dropped = drop_tool_written([root], above, home)
    return (dropped[0].granted_by, dropped[0].grant) if dropped else None
