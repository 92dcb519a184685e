"""The doit task loader: tasks built from each project's ``splice.json`` and ``splice.lock``.

Per project (``<p>`` is empty for ``splice install``, ``:<path>`` for a workspace member)::

    splice.json ──▶ lock<p> ─────────┐
                                     ├──▶ fetch:@ns/name (shared) ──▶ install<p>
    .splice/packages ──▶ verify<p> ──┘                                   ▲
                        └────────────────────────────────────────────────┘

- ``lock<p>``: resolves the ranges that need the registry (unlocked packages, or a command's
  ``add``/``update``) and checks the locked ones against their ranges (``LOCK_MISMATCH``). Its
  ``file_dep`` is ``splice.json`` under the SHA-256 checker; it is up to date when every
  package is locked within its range and no command asked for a resolution.
- ``verify<p>``: the files digest and the grant check of every locked package of the
  project; it always runs (no ``file_dep``, no ``uptodate``). A file whose stat matches the
  stat cache's record is not re-read (install/statcache.py, docs/lifecycle.md#the-stat-cache);
  every other file is hashed from bytes. It is the
  tree-digest dependency of ``install<p>`` — a directory is not a valid ``file_dep``. A
  package intact against the lock whose files digest this machine never derived from the
  artifact the lock pins (install/derived.py) is not kept yet: ``install<p>`` checks that
  artifact (fetched like any other) and keeps the tree when it is the artifact's, else
  restores it from the artifact with the lock's digest rewritten.
- ``fetch:<id>``: one task per package id for *all* projects of the run: each distinct
  artifact (registry, id, version, pinned integrity) some project needs is fetched once, then
  shared; up to date when every project has the locked version intact or in the cache.
- ``install<p>``: verify, consent and staged swap of each package that is not kept; up to
  date when every package is the locked version and ``verify<p>`` found it intact.

One task per project rather than per package keeps doit's per-task cost off a no-op run
(issue #7). Task actions never fail doit: a project's first error is kept in its
:class:`GraphRun` and its remaining tasks do nothing, so one project's failure never stops
another's (and a shared ``fetch:`` never fails because one of its users did).
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from doit.cmd_base import TaskLoader2
from doit.dependency import SqliteDB
from doit.task import Task

from splice_build.errors import ErrorCode, InstallError, SpliceError, storage_error
from splice_build.install.consent_record import remove_dead_record_temps
from splice_build.install.derived import derived_here
from splice_build.install.installed import check_installed
from splice_build.install.installer import Checked, Fetched, Target
from splice_build.install.modes import close_modes, open_entries
from splice_build.install.resolve import locked_offline, resolve
from splice_build.install.statcache import StatCache, file_system_now
from splice_build.spec.semver import Range, Version
from splice_build.spec.tree_digest import tree_hashes
from splice_build.tasks.checker import Sha256Checker
from splice_build.tasks.reporter import reporter_class
from splice_build.tasks.reporter import task_name as label_task_name
from splice_build.tasks.request import Change, FetchKey, GraphRun, WorkspaceRun

if TYPE_CHECKING:
    from splice_build.spec.permissions import Permissions


class SavingSqliteDB(SqliteDB):  # type: ignore[misc]
    """doit's sqlite3 backend, but a refused final save is kept, not a traceback and code 3.

    doit saves its database once, after the last task, when every install is already
    committed or undone; the run then raises the kept error coded (tasks/graph.py). Runs are
    serialized in a process, so one list serves.

    The database is a file in ``.splice/``, which can come with a checkout: a task's record
    that is not one a run of these tasks writes (``_written_here``; not JSON, not an object,
    another field) is read as no record, so the task's checks are recomputed, as for a task
    never run.
    """

    failures: ClassVar[list[Exception]] = []

    def _get_task_data(self, task_id: str) -> dict[str, Any]:
        try:
            data = super()._get_task_data(task_id)
        except (ValueError, RecursionError):  # not JSON, or not UTF-8
            return {}
        return data if _written_here(data) else {}

    def dump(self) -> None:
        import sqlite3

        try:
            super().dump()
        except sqlite3.DatabaseError as exc:
            with contextlib.suppress(sqlite3.Error):
                self._conn.close()
            SavingSqliteDB.failures.append(exc)


def _written_here(record: object) -> bool:
    """Whether ``record`` has only the fields doit's ``save_success`` writes for these tasks,
    each of its shape: ``_values_:`` an object, ``checker:`` a name, ``deps:`` a list of file
    names, and a file state under each of those names (its shape the checker's to judge,
    tasks/checker.py). doit reads more: ``"ignore:"`` (what ``doit ignore`` writes, a command
    not offered here) made every task of ``splice install`` and ``splice sync`` skipped, which
    then said "Nothing to install: splice.json has no packages" and left a rewritten package
    in place; ``deps:`` of any other shape (a number, a list holding a list) raised inside
    doit, an ``INTERNAL_ERROR``."""
    if not isinstance(record, dict):
        return False
    deps = record.get("deps:", [])
    if not isinstance(deps, list) or not all(isinstance(dep, str) for dep in deps):
        return False
    shapes = {"_values_:": dict, "checker:": str, "deps:": list}
    names = set(deps)
    return all(
        isinstance(value, shapes[key]) if key in shapes else key in names
        for key, value in record.items()
    )


BACKEND = "splice-sqlite3"

_IO = {"capture": False}  # never swap sys.stdout: MCP speaks JSON-RPC on it


class InFlight:
    """The actions running now, so an interrupted run lets them end before its locks go.

    ^C or SIGTERM reaches the main thread while ``-j N`` workers may be inside an install; the
    run then starts no new action and waits for the running ones (each commits or rolls
    back) before the project locks are released. Runs are serialized in a process, so one
    instance serves.
    """

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._running = 0
        self._stopping = False

    def reset(self) -> None:
        with self._changed:
            self._running, self._stopping = 0, False

    def enter(self) -> bool:
        with self._changed:
            if self._stopping:
                return False
            self._running += 1
            return True

    def leave(self) -> None:
        with self._changed:
            self._running -= 1
            self._changed.notify_all()

    def stop_and_wait(self) -> None:
        with self._changed:
            self._stopping = True
            self._changed.wait_for(lambda: self._running == 0)


IN_FLIGHT = InFlight()


def _new_in_flight() -> None:
    """In a child of ``fork``: the parent's actions are not the child's, and its condition
    may have been held by a thread the child does not have (tasks/graph.py does the same
    for its run lock)."""
    global IN_FLIGHT
    IN_FLIGHT = InFlight()


os.register_at_fork(after_in_child=_new_in_flight)


def _guarded(run: GraphRun, action: Callable[[], None]) -> Callable[[], bool]:
    """Run ``action`` unless the project already failed; keep its exception for the caller."""

    def call() -> bool:
        if run.error is None and IN_FLIGHT.enter():
            try:
                action()
            except OSError as exc:  # a full disk or read-only tree fails this project only
                run.error = storage_error(exc) or exc
            except Exception as exc:
                run.error = exc
            finally:
                IN_FLIGHT.leave()
        return True

    return call


def task_name(step: str, run: GraphRun) -> str:
    return label_task_name(step, run.label)


def is_kept(run: GraphRun, package_id: str) -> bool:
    """The target is the locked version and ``verify`` found it intact."""
    target = run.targets.get(package_id)
    return target is not None and target.pinned is not None and package_id in run.installed


def _granted_now(run: GraphRun, checked: Mapping[str, Checked | None]) -> dict[str, Permissions]:
    """The permissions each copy of the run's packages now runs under, once installed or
    kept (install/consent_record.py records them as what this machine granted)."""
    granted: dict[str, Permissions] = {}
    for package_id, one in checked.items():
        if one is not None:
            granted[package_id] = one.verified.manifest.permissions
        elif run.targets.get(package_id) is not None and package_id in run.installed:
            granted[package_id] = run.installed[package_id].manifest.permissions
    return granted


def fetch_key(run: GraphRun, target: Target) -> FetchKey:
    pinned = None if target.pinned is None else target.pinned.integrity
    url = run.installer.session_for(target.registry).url
    return (url, target.package_id, target.version, pinned)


class SpliceTaskLoader(TaskLoader2):
    """Builds the tasks of one :class:`WorkspaceRun` (doit's documented ``TaskLoader2`` API)."""

    def __init__(self, workspace: WorkspaceRun) -> None:
        super().__init__()
        self.workspace = workspace

    def load_doit_config(self) -> dict[str, Any]:
        return {
            # sqlite3 (the default dbm falls back to dbm.dumb on some Pythons), saving coded
            "backend": BACKEND,
            "dep_file": str(self.workspace.db),
            "check_file_uptodate": Sha256Checker,
            "reporter": reporter_class(self.workspace.record),
            "verbosity": 2,
        }

    def load_tasks(self, cmd: Any, pos_args: Any) -> list[Task]:
        tasks: list[Task] = []
        users: dict[str, list[GraphRun]] = {}
        for run in self.workspace.members:
            tasks.append(self._lock_task(run, self._plan(run)))
            tasks.append(self._verify_task(run))
            tasks.append(self._install_task(run))
            for package_id in run.ids:
                users.setdefault(package_id, []).append(run)
        tasks += [self._fetch_task(package_id, runs) for package_id, runs in users.items()]
        return tasks

    # planning without the registry --------------------------------------------------------
    def _plan(self, run: GraphRun) -> list[SpliceError]:
        """Pinned targets for locked packages; the rest is left to the ``lock`` task."""
        run.targets.clear()
        run.unresolved.clear()
        if run.error is not None or run.project is None or run.lock is None:
            return []
        project, lock, request = run.project, run.lock, run.request
        problems: list[SpliceError] = []
        for package_id in run.ids:
            entry = lock.get(package_id)
            range_text = project.packages.get(package_id)
            if request.frozen and (entry is None or range_text is None):
                problems.append(_frozen_mismatch(package_id, entry is None))
                continue
            if package_id in request.resolve or entry is None:
                run.unresolved.append(package_id)
                continue
            if range_text is not None and not Range.parse(range_text).satisfies(
                Version.parse(entry.version)
            ):
                if request.follow_ranges and not request.frozen:
                    run.unresolved.append(package_id)
                    continue
                problems.append(
                    InstallError(
                        ErrorCode.LOCK_MISMATCH,
                        f"splice.lock has {package_id}@{entry.version}, which does not satisfy"
                        f' "{range_text}" in splice.json',
                        hint=f"Run `splice update {package_id}`.",
                    )
                )
                continue
            try:
                registry = run.installer.locked_registry(project, entry)
            except SpliceError as exc:
                problems.append(exc)
                continue
            run.targets[package_id] = Target(package_id, entry.version, None, entry, registry)
        return problems

    def _resolve_pending(self, run: GraphRun, problems: list[SpliceError]) -> None:
        if problems:
            raise problems[0]
        if not run.unresolved:
            return
        assert run.project is not None and run.lock is not None
        if self.workspace.check:
            for package_id in run.unresolved:
                wanted = run.project.packages.get(package_id, "latest")
                entry = run.lock.get(package_id)
                reason = f"locked {entry.version} is outside {wanted}" if entry else "not locked"
                run.changes.append(Change(package_id, "resolve", wanted, reason))
            return
        for package_id in run.unresolved:
            request = run.request.resolve.get(package_id)
            registry = request.registry if request else None
            session = run.installer.session_for(registry)
            rng = (
                request.range
                if request
                else Range.parse(run.project.packages.get(package_id, "latest"))
            )
            run.installer.progress("resolving", f"Resolving {package_id}@{rng.text}...")
            entry = run.lock.get(package_id)
            kept = None  # the locked version, kept because the registry cannot be asked
            with self.workspace.registry_lock(session.url):
                try:
                    found = resolve(
                        session.client,
                        package_id,
                        rng,
                        entry,
                        prefer_locked=request.prefer_locked if request else True,
                    )
                except SpliceError as exc:
                    if request is not None and request.offline_locked:
                        kept = locked_offline(
                            exc, package_id, rng, entry, run.project.packages.get(package_id)
                        )
                    if kept is None:
                        raise
                    found = kept
            pinned = entry if entry is not None and entry.version == found.version else None
            save = request is None or request.save_range
            run.targets[package_id] = Target(
                package_id,
                found.version,
                found.range_text if save else None,
                pinned,
                registry,
                offline=kept is not None,
            )

    def _lock_task(self, run: GraphRun, problems: list[SpliceError]) -> Task:
        return Task(
            task_name("lock", run),
            [_guarded(run, lambda: self._resolve_pending(run, problems))],
            # A project that could not be read has no file state worth keeping.
            file_dep=[str(run.layout.project_file)] if run.project is not None else [],
            uptodate=[not (run.unresolved or problems or run.error)],
            io=_IO,
        )

    # per project ----------------------------------------------------------------------------
    def _verify_task(self, run: GraphRun) -> Task:
        def verify() -> None:
            assert run.lock is not None
            cache = StatCache.load(run.layout.stat_cache) if run.request.stat_cache else None
            before = None if self.workspace.check or cache is None else _file_system_now(run)
            for package_id in run.ids:
                entry = run.lock.get(package_id)
                if entry is None:
                    continue
                home = run.installer.session.home.path  # no grant may reach it, as in `run`
                try:
                    # Others' write access to .splice is taken first; a package whose own
                    # tree another user may write is installed again (install/modes.py).
                    left = (open_entries if self.workspace.check else close_modes)(
                        run.layout, package_id
                    )
                    inside = run.layout.package_dir(package_id)
                    left = [(p, why) for p, why in left if Path(p).is_relative_to(inside)]
                    # A project in another's write grant: intact files are kept (the CLI says
                    # why its tools will not run), not reinstalled on every install.
                    if cache is None:
                        checked = check_installed(  # modes judged above
                            run.layout,
                            package_id,
                            entry,
                            home=home,
                            hashes_of=tree_hashes,
                            enclosing=False,
                        )
                    else:
                        hashes_of = functools.partial(cache.package_hashes, package_id)
                        checked = check_installed(
                            run.layout,
                            package_id,
                            entry,
                            home=home,
                            hashes_of=hashes_of,
                            enclosing=False,
                        )
                    if left:
                        run.installed.pop(package_id, None)
                        run.damaged[package_id] = f"{left[0][0]}: {left[0][1]}"
                        continue
                    if self.workspace.check or derived_here(
                        run.installer.cache.directory, package_id, entry
                    ):
                        run.installed[package_id] = checked
                    else:  # checked against its artifact before it is kept (_check_one)
                        run.installed.pop(package_id, None)
                        run.underived[package_id] = checked
                except SpliceError as exc:
                    run.installed.pop(package_id, None)  # install restores it
                    if exc.code is not ErrorCode.NOT_INSTALLED:
                        run.damaged[package_id] = "; ".join((exc.message, *exc.details))
            if before is not None:
                run.stat_cache, run.stat_before = cache, before  # saved after the run (noop.py)

        return Task(task_name("verify", run), [_guarded(run, verify)], io=_IO)

    def _install_task(self, run: GraphRun) -> Task:
        def up_to_date() -> bool:
            if run.error is not None or run.project is None:
                return False
            for package_id in run.ids:
                target = run.targets.get(package_id)
                if not is_kept(run, package_id) or target is None:
                    return False
                if (
                    target.range_text is not None
                    and run.project.packages.get(package_id) != target.range_text
                ):
                    return False
                if package_id not in run.project.packages:
                    return False  # install() asks for consent to what it declares
                kept = run.installed[package_id]
                try:  # a kept package must meet the signature policy and have been granted
                    # what it asks for here: install() raises why, or records what is accepted
                    if run.installer.kept_consent(package_id, kept.manifest, run.project):
                        return False
                    run.installer.check_kept(package_id, kept.lock_entry, run.project)
                except SpliceError:
                    return False
            try:  # a record of what this machine granted that misses a package gets it now
                record = run.installer.consent_record()
            except SpliceError:
                return False
            if record is None or not all(i in record.grants for i in run.ids):
                return False
            if not self.workspace.check:  # no record is written: nothing else removes them
                remove_dead_record_temps(run.installer.session.home.path)
            return True

        def install() -> None:
            # Every package is checked (verified, its signer trusted, its permissions
            # consented to) before any is swapped in, and all are swapped in by one
            # transaction: a refusal or a failure of one changes nothing.
            checked = {package_id: self._check_one(run, package_id) for package_id in run.ids}
            if self.workspace.check:
                return
            new = [one for one in checked.values() if one is not None]
            granted = _granted_now(run, checked)
            if new:  # recorded as the new copies commit
                run.reports.update(run.installer.swap_in(new, granted))
            for package_id in run.ids:
                if checked[package_id] is None:
                    self._keep_one(run, package_id)
            if not new:
                run.installer.record_consent(granted)

        deps = [task_name("lock", run), task_name("verify", run)]
        deps += [f"fetch:{package_id}" for package_id in run.ids]
        return Task(
            task_name("install", run),
            [_guarded(run, install)],
            task_dep=deps,
            uptodate=[up_to_date],
            io=_IO,
        )

    def _check_one(self, run: GraphRun, package_id: str) -> Checked | None:
        """What installing ``package_id`` needs checked before anything is swapped in: the
        signature policy of a kept copy, or the checks and consent of a new one (``None``:
        nothing to swap in). A check run only records what it would do."""
        target = run.targets.get(package_id)
        if target is None:
            return None  # a check run that would resolve it first
        installed = run.installed.get(package_id)
        if self.workspace.check:
            if not is_kept(run, package_id):
                damaged = run.damaged.get(package_id)
                action = "restore" if damaged else "install"
                reason = damaged or ("not installed" if target.pinned else "newly resolved")
                consent = run.installer.consent_needed(target)
                run.changes.append(Change(package_id, action, target.version, reason, consent))
                return None
            if run.project is None:
                return None
            kept = run.installed[package_id]
            # the signature policy a writing run's keep() holds a kept copy to (Installer.keep)
            run.installer.check_kept(package_id, kept.lock_entry, run.project)
            if consent := run.installer.kept_consent(package_id, kept.manifest, run.project):
                # a copy that came with the checkout asks beyond what this machine granted
                reason = "it asks for more than this machine granted it"
                run.changes.append(Change(package_id, "keep", target.version, reason, consent))
            return None
        if target.pinned is not None and installed is not None:
            assert run.project is not None
            run.installer.check_kept(package_id, installed.lock_entry, run.project)
            run.installer.consent_kept(
                package_id, installed.manifest, installed.lock_entry, run.project
            )
            return None
        underived = run.underived.get(package_id)
        if underived is not None:  # the policy a kept copy meets, before any registry is asked
            assert run.project is not None
            run.installer.check_kept(package_id, underived.lock_entry, run.project)
        try:
            shared = self.workspace.fetches.get(fetch_key(run, target))
            if isinstance(shared, BaseException):
                raise shared
            fetched = shared or run.installer.fetch(target)
        except SpliceError as exc:
            if underived is None or exc.code is not ErrorCode.REGISTRY_UNREACHABLE:
                raise
            raise _underived_unreachable(package_id, exc) from exc
        checked = run.installer.check(target, fetched)  # records what the artifact extracts to
        if underived is None:
            return checked
        locked = underived.lock_entry.known(package_id).files
        if checked.entry.files == locked:
            run.installed[package_id] = underived  # the artifact's tree: kept
            return None
        why = (
            f"its files and splice.lock's files digest ({locked}) are not the artifact's"
            f" ({checked.entry.files}); restored from the artifact, splice.lock's digest rewritten"
        )
        run.damaged[package_id] = why
        run.installer.progress("verifying", f"{package_id}@{target.version}: {why}")
        return checked

    def _keep_one(self, run: GraphRun, package_id: str) -> None:
        """The report of a package kept as installed (``_check_one`` returned None for it)."""
        target = run.targets.get(package_id)
        if target is None:
            return
        installed = run.installed[package_id]
        run.reports[package_id] = run.installer.keep(
            target, installed.manifest, installed.lock_entry
        )

    # shared between projects ------------------------------------------------------------------
    def _fetch_task(self, package_id: str, runs: list[GraphRun]) -> Task:
        workspace = self.workspace

        def needs(run: GraphRun) -> Target | None:
            target = run.targets.get(package_id)
            if run.error is not None or target is None or is_kept(run, package_id):
                return None
            pinned = target.pinned
            if pinned is not None and run.installer.cache.path_for(pinned.integrity).exists():
                return None  # re-hashed when the install reads it
            return target

        def up_to_date() -> bool:
            return workspace.check or not any(needs(run) for run in runs)

        def fetch() -> None:
            for run in runs:
                target = needs(run)
                if target is None:
                    continue
                try:
                    key = fetch_key(run, target)  # the project's registry, decided now
                except SpliceError as exc:
                    run.error = exc
                    continue
                if key in workspace.fetches:
                    continue
                with workspace.registry_lock(key[0]):
                    try:
                        result: Fetched | BaseException = run.installer.fetch(target)
                    except (SpliceError, OSError) as exc:
                        # Raised by the install of every project that needs it, which codes an
                        # OSError (SPLICE_HOME/cache a file: it ended doit itself, an
                        # INTERNAL_ERROR 'doit stopped with code 2').
                        result = exc
                workspace.fetches[key] = result

        deps = [task_name(step, run) for run in runs for step in ("lock", "verify")]
        return Task(f"fetch:{package_id}", [fetch], task_dep=deps, uptodate=[up_to_date], io=_IO)


def _file_system_now(run: GraphRun) -> int | None:
    """The file system's clock before any installed file is read (install/statcache.py);
    None (record nothing) when the project's lock file, which this run holds, cannot tell."""
    try:
        return file_system_now(run.layout.state_lock)
    except OSError:
        return None


def _underived_unreachable(package_id: str, exc: SpliceError) -> SpliceError:
    """The artifact an underived package must be checked against could not be had: its
    tree is neither kept as checked nor run (install/derived.py)."""
    return type(exc)(
        exc.code,
        f"{package_id} cannot be checked against the artifact splice.lock pins: {exc.message}",
        details=[*exc.details, "its files digest was never derived on this machine"],
        hint="Run `splice install` again where the registry can be reached; until then its "
        "tools do not run here.",
    )


def _frozen_mismatch(package_id: str, unlocked: bool) -> InstallError:
    where = "splice.lock has no entry for it" if unlocked else "splice.json does not list it"
    return InstallError(
        ErrorCode.LOCK_MISMATCH,
        f"splice.lock is out of date for {package_id} (--frozen)",
        details=[where],
        hint="Run `splice install` (or `splice sync` without --frozen) and commit splice.lock.",
    )
