"""What one graph run is asked to do, and the state its tasks share while it runs.

A run covers one or more projects (``splice install`` one, ``splice sync`` every member of a
workspace). Each project has its own mutable :class:`GraphRun`; the :class:`WorkspaceRun`
holds what they share: the artifacts fetched once for all of them and the task record.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING

from splice_build.records import dataclass, field
from splice_build.tasks.reporter import TaskRecord

if TYPE_CHECKING:
    from pathlib import Path

    from splice_build.install.install_report import InstallReport
    from splice_build.install.installed import InstalledPackage
    from splice_build.install.installer import Fetched, Installer, Target
    from splice_build.install.statcache import StatCache
    from splice_build.project.layout import ProjectLayout
    from splice_build.project.lockfile import Lockfile
    from splice_build.project.project_file import ProjectFile
    from splice_build.spec.semver import Range


@dataclass(frozen=True)
class Resolve:
    """A command asks for ``range`` to be resolved against the registry (``add``, ``update``).

    ``prefer_locked`` keeps a locked version that still satisfies the range (``add`` with a
    range); ``update``, and ``add`` of a bare id or ``@latest``, take the highest match.
    ``registry``: the registry URL to resolve and fetch it in when it is not the run's own
    (``update``, from the registry ``outdated`` found it in), so one run, checked whole
    before anything is swapped in, covers every registry.
    ``offline_locked`` (``add``): a registry that cannot be asked (``install/session.py``
    ``is_offline``) leaves the locked version when the range accepts it, installed as
    ``install`` restores it, from the verified cache, as TS's ``addPackage`` falls back.
    """

    range: Range
    prefer_locked: bool = True
    save_range: bool = True
    registry: str | None = None
    offline_locked: bool = False


@dataclass(frozen=True)
class GraphRequest:
    """The packages a run covers (``None``: every package of splice.json and splice.lock).

    ``frozen``: nothing is resolved; a package of splice.json without a lock entry, or a lock
    entry splice.json does not list, is a ``LOCK_MISMATCH``. ``check``: nothing is written
    (no download, no install, no graph database); the run lists what it would change.
    ``follow_ranges``: a locked version outside its edited range is resolved again (``sync``)
    instead of being a ``LOCK_MISMATCH`` (``install``, whose hint is ``splice update``).
    ``stat_cache``: the ``verify`` step may reuse the hash of a file whose stat is unchanged
    (install/statcache.py); False hashes every file from bytes (doit's ``splice:verify``).
    """

    ids: tuple[str, ...] | None = None
    resolve: Mapping[str, Resolve] = field(default_factory=dict)
    frozen: bool = False
    check: bool = False
    follow_ranges: bool = False
    stat_cache: bool = True


@dataclass(frozen=True)
class Change:
    """What a ``check`` run would do to one package: ``install``, ``restore`` or ``resolve``,
    or ``keep`` an intact copy that asks for permissions (``consent``) the install asks for.

    ``version`` is the version it would install, or the range it would resolve.
    ``consent``: the lines of what the locked grant gives beyond what this machine granted
    (docs/security.md#consent-on-this-machine): the install would ask for them.
    """

    package_id: str
    action: str
    version: str | None
    reason: str
    consent: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "name": self.package_id,
            "action": self.action,
            "version": self.version,
            "reason": self.reason,
        }
        if self.consent:
            out["consent"] = list(self.consent)
        return out


@dataclass
class GraphRun:
    """Mutable state of one project during a run, shared by that project's task actions.

    ``project`` and ``lock`` are read once when the tasks are built; ``damaged`` holds the
    packages whose installed copy exists but failed verification (they are *restored*).
    """

    layout: ProjectLayout
    installer: Installer
    ids: tuple[str, ...]
    request: GraphRequest
    label: str = ""
    project: ProjectFile | None = None
    lock: Lockfile | None = None
    targets: dict[str, Target] = field(default_factory=dict)
    unresolved: list[str] = field(default_factory=list)
    installed: dict[str, InstalledPackage] = field(default_factory=dict)
    damaged: dict[str, str] = field(default_factory=dict)
    # Intact against splice.lock, but its files digest was never derived here from the
    # artifact the lock pins (install/derived.py): checked against that artifact first.
    underived: dict[str, InstalledPackage] = field(default_factory=dict)
    reports: dict[str, InstallReport] = field(default_factory=dict)
    changes: list[Change] = field(default_factory=list)
    record: TaskRecord = field(default_factory=TaskRecord)
    error: BaseException | None = None
    # The verify step's stat cache and the file-system time taken before it read any file;
    # saved once the graph has run (tasks/noop.py). None in a check run.
    stat_cache: StatCache | None = None
    stat_before: int | None = None


FetchKey = tuple[str, str, str, str | None]  # registry URL, id, version, pinned integrity


@dataclass
class WorkspaceRun:
    """The projects of one run and what they share (see the module docstring).

    ``fetches`` maps a :data:`FetchKey` to the artifact (or the error) fetched once for every
    project that needs it; ``registry_locks`` serialize calls to one registry client, which
    is not shared between threads (``-j``).
    """

    members: tuple[GraphRun, ...]
    db: Path
    jobs: int = 1
    check: bool = False
    fetches: dict[FetchKey, Fetched | BaseException] = field(default_factory=dict)
    registry_locks: dict[str, threading.Lock] = field(default_factory=dict)
    record: TaskRecord = field(default_factory=TaskRecord)

    def registry_lock(self, url: str) -> threading.Lock:
        return self.registry_locks.setdefault(url, threading.Lock())
