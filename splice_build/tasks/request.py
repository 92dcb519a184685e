"""What one graph run is asked to do, and the state its tasks share while it runs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from splice_build.tasks.reporter import TaskRecord

if TYPE_CHECKING:
    from splice_build.install.installed import InstalledPackage
    from splice_build.install.installer import Fetched, Installer, InstallReport, Target
    from splice_build.project.layout import ProjectLayout
    from splice_build.spec.semver import Range


@dataclass(frozen=True)
class Resolve:
    """A command asks for ``range`` to be resolved against the registry (``add``, ``update``).

    ``prefer_locked`` keeps a locked version that still satisfies the range (``add``);
    ``update`` takes the highest match.
    """

    range: Range
    prefer_locked: bool = True
    save_range: bool = True


@dataclass(frozen=True)
class GraphRequest:
    """The packages a run covers (``None``: every package of splice.json and splice.lock)."""

    ids: tuple[str, ...] | None = None
    resolve: Mapping[str, Resolve] = field(default_factory=dict)


@dataclass
class GraphRun:
    """Mutable state of one run, shared by the task actions (one process, one thread)."""

    layout: ProjectLayout
    installer: Installer
    ids: tuple[str, ...]
    request: GraphRequest
    targets: dict[str, Target] = field(default_factory=dict)
    unresolved: list[str] = field(default_factory=list)
    installed: dict[str, InstalledPackage] = field(default_factory=dict)
    fetched: dict[str, Fetched] = field(default_factory=dict)
    reports: dict[str, InstallReport] = field(default_factory=dict)
    latest: dict[str, str | None] = field(default_factory=dict)
    record: TaskRecord = field(default_factory=TaskRecord)
    error: BaseException | None = None
