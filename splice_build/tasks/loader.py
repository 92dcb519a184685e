"""The doit task loader: tasks built from ``splice.json`` and ``splice.lock``.

Per run (interfaces.md 2.5, issue #6)::

    splice.json ──▶ lock ──────────────▶ fetch:@ns/name ──▶ install:@ns/name
                                                             ▲
    .splice/packages/@ns/name ──▶ verify:@ns/name ───────────┘

- ``lock``: resolves the ranges that need the registry (unlocked packages, or a command's
  ``add``/``update``) and checks the locked ones against their ranges (``LOCK_MISMATCH``). Its
  ``file_dep`` is ``splice.json`` under the SHA-256 checker; it is up to date when every
  package is locked within its range and no command asked for a resolution.
- ``verify:<id>``: the files digest **from bytes** and the grant check; it always runs (it
  has neither ``file_dep`` nor ``uptodate``), and it is the tree-digest dependency of
  ``install:`` — a directory is not a valid ``file_dep``.
- ``fetch:<id>``: the verified artifact in the cache; up to date when the locked version is
  installed intact or its cache entry exists (the entry is still re-hashed when read).
- ``install:<id>``: verify, consent, staged swap; up to date when the target is the locked
  version and ``verify:`` found it intact.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from doit.cmd_base import TaskLoader2
from doit.task import Task

from splice_build.errors import ErrorCode, InstallError, SpliceError
from splice_build.install.installed import check_installed
from splice_build.install.installer import Target
from splice_build.install.resolve import resolve
from splice_build.project.lockfile import Lockfile, load_lockfile
from splice_build.project.project_file import ProjectFile, load_project_file
from splice_build.spec.semver import Range, Version
from splice_build.tasks.checker import Sha256Checker
from splice_build.tasks.reporter import reporter_class
from splice_build.tasks.request import GraphRun

_IO = {"capture": False}  # never swap sys.stdout: MCP speaks JSON-RPC on it


def _guarded(run: GraphRun, action: Callable[[], None]) -> Callable[[], bool]:
    """Keep the exception for the caller; doit sees a plain failure (stops the run)."""

    def call() -> bool:
        try:
            action()
        except BaseException as exc:
            run.error = exc
            return False
        return True

    return call


class SpliceTaskLoader(TaskLoader2):
    """Builds the tasks of one :class:`GraphRun` (doit's documented ``TaskLoader2`` API)."""

    def __init__(self, run: GraphRun) -> None:
        super().__init__()
        self.run = run

    def load_doit_config(self) -> dict[str, Any]:
        layout = self.run.layout
        return {
            "backend": "sqlite3",  # the default dbm falls back to dbm.dumb on some Pythons
            "dep_file": str(layout.graph_db),
            "check_file_uptodate": Sha256Checker,
            "reporter": reporter_class(self.run.record),
            "verbosity": 2,
        }

    def load_tasks(self, cmd: Any, pos_args: Any) -> list[Task]:
        run = self.run
        project = load_project_file(run.layout.root)
        lock = load_lockfile(run.layout.root)
        problems = self._plan(project, lock)
        tasks = [self._lock_task(problems)]
        for package_id in run.ids:
            if lock.get(package_id) is not None:
                tasks.append(self._verify_task(package_id, lock))
            tasks.append(self._fetch_task(package_id))
            tasks.append(self._install_task(package_id, lock))
        return tasks

    # planning without the registry --------------------------------------------------------
    def _plan(self, project: ProjectFile, lock: Lockfile) -> list[SpliceError]:
        """Pinned targets for locked packages; the rest is left to the ``lock`` task."""
        run = self.run
        problems: list[SpliceError] = []
        for package_id in run.ids:
            entry = lock.get(package_id)
            if package_id in run.request.resolve or entry is None:
                run.unresolved.append(package_id)
                continue
            range_text = project.packages.get(package_id)
            if range_text is not None and not Range.parse(range_text).satisfies(
                Version.parse(entry.version)
            ):
                problems.append(
                    InstallError(
                        ErrorCode.LOCK_MISMATCH,
                        f"splice.lock has {package_id}@{entry.version}, which does not satisfy"
                        f' "{range_text}" in splice.json',
                        hint=f"Run `splice update {package_id}`.",
                    )
                )
                continue
            run.targets[package_id] = Target(package_id, entry.version, None, pinned=entry)
        return problems

    def _resolve_pending(self, problems: list[SpliceError]) -> None:
        run = self.run
        if problems:
            raise problems[0]
        if not run.unresolved:
            return
        project = load_project_file(run.layout.root)
        lock = load_lockfile(run.layout.root)
        client = run.installer.session.client
        for package_id in run.unresolved:
            request = run.request.resolve.get(package_id)
            rng = (
                request.range
                if request
                else Range.parse(project.packages.get(package_id, "latest"))
            )
            run.installer.progress("resolving", f"Resolving {package_id}@{rng.text}...")
            entry = lock.get(package_id)
            found = resolve(
                client,
                package_id,
                rng,
                entry,
                prefer_locked=request.prefer_locked if request else True,
            )
            run.latest[package_id] = found.latest
            pinned = entry if entry is not None and entry.version == found.version else None
            save = request is None or request.save_range
            run.targets[package_id] = Target(
                package_id, found.version, found.range_text if save else None, pinned
            )

    def _lock_task(self, problems: list[SpliceError]) -> Task:
        run = self.run
        return Task(
            "lock",
            [_guarded(run, lambda: self._resolve_pending(problems))],
            file_dep=[str(run.layout.project_file)],
            uptodate=[not (run.unresolved or problems)],
            io=_IO,
        )

    # per package ----------------------------------------------------------------------------
    def _verify_task(self, package_id: str, lock: Lockfile) -> Task:
        run = self.run

        def verify() -> None:
            try:
                run.installed[package_id] = check_installed(
                    run.layout, package_id, lock.get(package_id)
                )
            except SpliceError:
                run.installed.pop(package_id, None)  # install: restores it

        return Task(f"verify:{package_id}", [_guarded(run, verify)], io=_IO)

    def _is_kept(self, package_id: str) -> bool:
        """The target is the locked version and ``verify:`` found it intact."""
        target = self.run.targets.get(package_id)
        installed = self.run.installed.get(package_id)
        return target is not None and target.pinned is not None and installed is not None

    def _fetch_task(self, package_id: str) -> Task:
        run = self.run

        def up_to_date() -> bool:
            target = run.targets.get(package_id)
            if self._is_kept(package_id):
                return True
            return bool(
                target
                and target.pinned
                and run.installer.cache.path_for(target.pinned.integrity).exists()
            )

        def fetch() -> None:
            run.fetched[package_id] = run.installer.fetch(run.targets[package_id])

        return Task(
            f"fetch:{package_id}",
            [_guarded(run, fetch)],
            task_dep=["lock"],
            uptodate=[up_to_date],
            io=_IO,
        )

    def _install_task(self, package_id: str, lock: Lockfile) -> Task:
        run = self.run

        def up_to_date() -> bool:
            target = run.targets.get(package_id)
            if not self._is_kept(package_id) or target is None:
                return False
            project = load_project_file(run.layout.root)
            return (
                target.range_text is None or project.packages.get(package_id) == target.range_text
            )

        def install() -> None:
            target = run.targets[package_id]
            installed = run.installed.get(package_id)
            if target.pinned is not None and installed is not None:
                run.reports[package_id] = run.installer.keep(
                    target, installed.manifest, installed.lock_entry
                )
                return
            fetched = run.fetched.get(package_id) or run.installer.fetch(target)
            run.reports[package_id] = run.installer.install(target, fetched)

        deps = ["lock", f"fetch:{package_id}"]
        if lock.get(package_id) is not None:
            deps.insert(0, f"verify:{package_id}")
        return Task(
            f"install:{package_id}",
            [_guarded(run, install)],
            task_dep=deps,
            uptodate=[up_to_date],
            io=_IO,
        )
