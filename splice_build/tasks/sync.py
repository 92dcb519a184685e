"""``splice sync``: one graph over every project of a workspace (issue #7).

Every member gets its own installer (its registry, its consent options) over one shared
artifact cache in ``SPLICE_HOME``; one registry session per registry URL is shared by the
projects using it. The graph runs with doit's thread-parallel runner for ``jobs > 1``, its
state in ``<root>/.splice/sync.sqlite3``. A project that fails (unreadable ``splice.json``,
stale lock, refused consent, …) fails alone; the result lists every project, in the
workspace's order.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from splice_build.records import dataclass
from splice_build.tasks.summary import SyncResult, outcome_of

if TYPE_CHECKING:
    from splice_build.install.cache import ArtifactCache
    from splice_build.install.session import RegistrySessions
    from splice_build.project.home import SpliceHome
    from splice_build.project.workspace import Workspace
    from splice_build.registry.client.interface import RegistryClient
    from splice_build.tasks.graph import Member

ProjectProgress = Callable[[str, str, str], None]  # (project path, step, message)
SYNC_DB = "sync.sqlite3"

# Descriptors a sync wants beside its members' locks (the graph database, registry
# connections, files being hashed or written, the interpreter's own), and the fewest it is
# let start with: a no-op took 5, a sync reinstalling a package 12.
SYNC_HEADROOM = 64
SYNC_MINIMUM_HEADROOM = 16


@dataclass(frozen=True)
class SyncOptions:
    jobs: int = 1
    frozen: bool = False
    check: bool = False
    accept_permissions: bool = False
    require_signed: bool = False
    allow_signer_change: bool = False
    stat_cache: bool = True  # False: every installed file hashed from bytes


def _quiet(path: str, step: str, message: str) -> None:
    return None


class _ProjectSession:
    """A project's registry session, decided only when a task needs the registry.

    A no-op sync never asks, so it never reads the user config or opens a client;
    ``INVALID_CONFIG`` for a bad registry value fails only that project, from its task.
    """

    def __init__(self, sessions: RegistrySessions, flag: str | None, root: Path) -> None:
        self._sessions = sessions
        self._flag = flag  # ``--registry``, with which each member's registry is decided
        self._root = root
        self._url: str | None = None

    @property
    def url(self) -> str:
        if self._url is None:
            from splice_build.project.project_file import load_project_file
            from splice_build.project.registry_url import resolve_registry

            sessions = self._sessions
            project = load_project_file(self._root)
            self._url = resolve_registry(
                flag=self._flag, env=sessions.env, project=project, home=sessions.home
            ).url
        return self._url

    @property
    def home(self) -> SpliceHome:
        """SPLICE_HOME, which consent keeps every grant away from (install/consent.py)."""
        return self._sessions.home

    @property
    def client(self) -> RegistryClient:
        return self._sessions.get(self.url).client


DEFAULT_OPTIONS = SyncOptions()


def room_for_members(members: int) -> None:
    """Make room for a sync holding ``members`` locks at once, raising the soft limit when it
    leaves less than ``SYNC_HEADROOM``; ``INVALID_CONFIG`` before any lock is taken when even
    the hard limit leaves less than ``SYNC_MINIMUM_HEADROOM``.

    A user's soft limit is often 1,024: a larger monorepo ran out of files part-way, and the
    failure surfaced as whichever file could not be opened next (an install journal "cannot
    be read", with the hint to remove it)."""
    needed = members + SYNC_HEADROOM
    # The soft limit without importing ``resource`` or open_files.py (a no-op sync's budget
    # is milliseconds, a module ~0.1 ms); -1 is no limit.
    soft = os.sysconf("SC_OPEN_MAX")
    if soft < 0 or soft >= needed:
        return
    import resource

    from splice_build.open_files import raise_open_file_limit

    soft = raise_open_file_limit()
    if soft == resource.RLIM_INFINITY or soft >= members + SYNC_MINIMUM_HEADROOM:
        return
    from splice_build.errors import ErrorCode, ProjectError

    raise ProjectError(
        ErrorCode.INVALID_CONFIG,
        f"the workspace has {members} member projects and sync holds each one's lock until it "
        f"is done: the open-file limit ({soft}) is too low",
        hint=f"raise it to at least {needed} (ulimit -n {needed}) and sync again",
    )


def sync_workspace(
    workspace: Workspace,
    *,
    home: SpliceHome,
    env: Mapping[str, str],
    registry: str | None = None,
    options: SyncOptions = DEFAULT_OPTIONS,
    on_progress: ProjectProgress = _quiet,
) -> SyncResult:
    """Sync every member of ``workspace``; never raises for one project's failure (a link in
    the root's ``.splice/`` is ``NOT_WRITABLE`` for the whole run, project/state_dir.py).

    A workspace whose every member is as its last no-op run left it is answered without the
    graph (tasks/noop.py)."""
    from splice_build.project.registry_url import check_named_registry
    from splice_build.tasks.noop import unchanged_workspace

    check_named_registry(flag=registry, env=env, home=home)
    room_for_members(len(workspace.members))  # every member's lock is held at once

    def blocked(member: Path) -> None:  # the member whose lock another process holds
        from splice_build.project.locking import WAITING

        on_progress(workspace.label(member), "waiting", WAITING)

    if not options.check:
        from splice_build.project.layout import ProjectLayout
        from splice_build.project.state_dir import check_state_dir

        # The root's .splice/ holds the graph database even when the root is no project.
        check_state_dir(ProjectLayout(workspace.root))
    if options.stat_cache and not options.require_signed:  # a one-off requirement: the graph
        unchanged = unchanged_workspace(
            workspace, home=home.path, check=options.check, on_blocked=blocked
        )
        if unchanged is not None:
            return unchanged

    from splice_build.install.cache import ArtifactCache
    from splice_build.install.session import RegistrySessions  # not for a no-op
    from splice_build.project.layout import STATE_DIR
    from splice_build.tasks.graph import run_workspace
    from splice_build.tasks.request import GraphRequest

    cache = ArtifactCache(home.check().artifacts_dir)
    sessions = RegistrySessions(home=home, env=env)
    members = [
        _member(
            directory, workspace.label(directory), cache, sessions, registry, options, on_progress
        )
        for directory in workspace.members
    ]
    try:
        request = GraphRequest(
            frozen=options.frozen,
            check=options.check,
            follow_ranges=True,
            stat_cache=options.stat_cache,
        )
        ran = run_workspace(
            members,
            request,
            db=workspace.root / STATE_DIR / SYNC_DB,
            jobs=options.jobs,
            on_blocked=blocked,
        )
    finally:
        sessions.close()
    outcomes = tuple(outcome_of(run) for run in ran.members)
    return SyncResult(str(workspace.root), options.check, outcomes, ran.record)


def _member(
    directory: Path,
    label: str,
    cache: ArtifactCache,
    sessions: RegistrySessions,
    registry: str | None,
    options: SyncOptions,
    on_progress: ProjectProgress,
) -> Member:
    from splice_build.install.installer import Installer, InstallOptions
    from splice_build.project.layout import ProjectLayout
    from splice_build.project.project_file import ProjectFile
    from splice_build.project.registry_url import lock_decides as registry_url_lock_decides
    from splice_build.tasks.graph import Member

    layout = ProjectLayout(directory)
    install_options = InstallOptions(
        accept_permissions=options.accept_permissions,
        require_signed=options.require_signed,
        allow_signer_change=options.allow_signer_change,
    )

    def progress(step: str, message: str) -> None:
        on_progress(label, step, message)

    # RegistrySession's url and client
    session: Any = _ProjectSession(sessions, registry, directory)
    others: Any = sessions  # RegistrySessions' get(url)

    def lock_decides(project: ProjectFile) -> bool:
        return registry_url_lock_decides(flag=registry, env=sessions.env, project=project)

    installer = Installer(layout, cache, session, install_options, progress, others, lock_decides)
    return Member(layout, installer, label)
