"""The Python SDK: ``Splice(project=...)``, the one code path of the CLI and the MCP server.

::

    from splice_build.sdk import Splice

    splice = Splice.init("/path/to/project")   # Splice(...) opens an existing one
    splice.add(["@splice/example"])
    splice.run("example.hello", {"name": "Dim"}).to_json()

State changes (``add``, ``install``, ``update``, ``remove``) run the doit graph of
``splice_build.tasks`` under the project lock; ``last_tasks`` records which tasks executed.
Everything that loads code re-verifies the installed files **from bytes** first
(``check``): ``INSTALLED_PACKAGE_MODIFIED``, ``PERMISSIONS_NOT_GRANTED`` and ``NOT_INSTALLED``
are raised before any tool code runs. ``run`` is not a doit task: doit's runner is
process-global and the project lock would serialize every tool call (MCP runs them
concurrently); it calls the same check the ``verify:`` task runs.
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, Literal, ParamSpec, TypeVar

from splice_build.errors import ErrorCode, InstallError, RegistryError, SpliceError, UsageError
from splice_build.install.installed import (
    InstalledPackage,
    check_installed,
    grant_memo,
    read_installed_manifest,
)
from splice_build.records import dataclass
from splice_build.runtime.forks import forget_in_children
from splice_build.sdk_args import absolute_arg, env_arg, kind, named, names_arg, working_directory

if TYPE_CHECKING:
    from splice_build.install.consent import Accept
    from splice_build.install.consent_record import ConsentRecord
    from splice_build.install.install_report import InstallReport
    from splice_build.install.installer import InstallOptions
    from splice_build.install.session import RegistrySession
    from splice_build.project.home import SpliceHome
    from splice_build.project.layout import ProjectLayout
    from splice_build.project.lockfile import LockEntry, Lockfile
    from splice_build.project.project_file import ProjectFile
    from splice_build.project.registry_url import RegistrySetting
    from splice_build.registry.client.interface import RegistryClient
    from splice_build.runtime import LoadedPackage, SpliceRuntime, ToolResult
    from splice_build.runtime.pool import WarmPool
    from splice_build.spec.project_state import RunMemo
    from splice_build.spec.reuse import ReusePolicy
    from splice_build.tasks.reporter import TaskRecord
    from splice_build.tasks.request import GraphRequest

    GrantSources = tuple[ProjectFile, ConsentRecord | None]

__all__ = ["InstallReport", "InstalledPackage", "Splice"]

_T = TypeVar("_T")
_P = ParamSpec("_P")


def __getattr__(name: str) -> Any:
    # ``InstallReport`` is re-exported lazily: the installer is not needed to run a tool.
    if name == "InstallReport":
        from splice_build.install.install_report import InstallReport

        return InstallReport
    raise AttributeError(name)


Progress = Callable[[str, str], None]


def _quiet(step: str, message: str) -> None:
    return None


def _hinted(
    method: Callable[Concatenate[Splice, _P], _T],
) -> Callable[Concatenate[Splice, _P], _T]:
    """``method`` of ``Splice``, whose errors leave it with the SDK call beside each command
    their hint names, unless the Splice was made with ``hints="cli"`` (sdk_hints.py). Typed
    with the method's own parameters, so a type checker sees each method's signature."""

    @functools.wraps(method)
    def hinted(self: Splice, /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
        try:
            return method(self, *args, **kwargs)
        except SpliceError as exc:
            _tell(exc, self._hints)
            raise

    return hinted


def _tell(error: SpliceError, hints: str) -> None:
    """``error``'s hint as a Splice made with ``hints`` tells it its caller."""
    if hints == "sdk":
        from splice_build.sdk_hints import said_to_the_sdk

        said_to_the_sdk(error)


class Splice:
    """One project (found by walking up from ``project``, default the current directory)."""

    def __init__(
        self,
        project: str | os.PathLike[str] | None = None,
        *,
        registry: str | None = None,
        env: Mapping[str, str] | None = None,
        home: str | os.PathLike[str] | None = None,
        on_progress: Progress | None = None,
        broker: object | Literal[False] | None = None,
        pool: WarmPool | None = None,
        reuse: ReusePolicy | bool | Literal["project"] = False,
        hints: Literal["sdk", "cli"] = "sdk",
    ) -> None:
        """``broker``: the capability broker (default: the real providers, keys loaded on first
        use); ``False`` runs tools without one (capability calls answer UNAVAILABLE).
        ``pool``: a ``WarmPool`` of sandbox processes started before calls arrive (a long-lived
        caller such as the MCP server); ``close()`` ends them.
        ``reuse``: opt-in process reuse between calls of one package under one grant
        (docs/runtime.md#opt-in-reuse): ``True`` with the default limits, a ``ReusePolicy``,
        or ``"project"`` for the project's ``splice.json`` ``"reuse"`` setting (off when
        absent); ``False`` (default): one fresh process per call.
        ``hints``: what an error's hint names as the next step: ``"sdk"`` (default) the SDK
        call beside each ``splice`` command (``Splice.install()``), ``"cli"`` the command
        alone (the CLI and the MCP server)."""
        from splice_build.project.layout import ProjectLayout
        from splice_build.project.project_file import find_project_root

        start = absolute_arg(project, "project") if project is not None else working_directory()
        checked = _checked_options(
            env=env, home=home, on_progress=on_progress, broker=broker, pool=pool, reuse=reuse,
            hints=hints,
        )  # fmt: skip
        self._hints = hints
        self.env: Mapping[str, str] = checked.env
        self._reuse = checked.reuse
        try:
            self.project_root = find_project_root(start)
        except SpliceError as exc:  # NOT_A_PROJECT: its hint names `splice init`
            _tell(exc, self._hints)
            raise
        self.layout: ProjectLayout = ProjectLayout(self.project_root)
        self.home: SpliceHome = checked.home
        self._registry_flag = registry
        self._progress: Progress = on_progress or _quiet
        self._broker = self._default_broker() if broker is None else broker or None
        self._pool = pool
        self._runtime_instance: SpliceRuntime | None = None
        self._runtime_lock = threading.Lock()
        self._closed = False  # close() was called: a runtime made later keeps no process
        self.last_tasks: TaskRecord | None = None
        forget_in_children(self)

    def forget_after_fork(self) -> None:
        """In a child of ``fork`` (runtime/forks.py): a lock another thread held at the fork
        (making the first runtime, or closing one for a project switched at its path) would
        never be released there; the child's runtime forgets the parent's processes."""
        self._runtime_lock = threading.Lock()

    @classmethod
    def init(
        cls, directory: str | os.PathLike[str], *, registry: str | None = None, **options: Any
    ) -> Splice:
        """Make ``directory`` a project, as ``splice init`` does, and return its SDK.

        Creates the directory if needed and ``splice.json`` (and nothing else) unless one is
        there; ``registry`` is stored in it after it has been validated (``INVALID_CONFIG``).
        ``options`` are the other keyword arguments of ``Splice()``, checked before anything
        is written (an unknown one is ``TypeError``, a bad value ``USAGE``).
        """
        import inspect

        from splice_build.project.directories import usable_directory
        from splice_build.project.project_file import init_project

        given = inspect.signature(cls).bind(directory, registry=registry, **options)
        given.apply_defaults()
        _checked_options(**{name: given.arguments[name] for name in _OPTIONS})
        try:
            target = usable_directory(absolute_arg(directory, "directory"), "project directory")
            root, _created = init_project(target, registry=registry)
        except SpliceError as exc:
            _tell(exc, options.get("hints", "sdk"))
            raise
        return cls(root, **options)

    # plumbing ------------------------------------------------------------------------------
    def _default_broker(self) -> object:
        from splice_build.broker.lazy import LazyDefaultBroker

        return LazyDefaultBroker(project_root=self.project_root, env=self.env, home=self.home.path)

    @property
    @_hinted
    def registry_url(self) -> str:
        from splice_build.project.project_file import load_project_file
        from splice_build.project.registry_url import resolve_registry

        project = load_project_file(self.project_root)
        return resolve_registry(
            flag=self._registry_flag, env=self.env, project=project, home=self.home
        ).url

    def _graph(
        self, request: GraphRequest, options: InstallOptions, *, registry_url: str | None = None
    ) -> dict[str, InstallReport]:
        """Run the graph; one report per package of the run, in run order."""
        from splice_build.tasks.project import run_project

        run = run_project(
            self.layout,
            request,
            registry_url=registry_url or self.registry_url,
            home=self.home,
            env=self.env,
            options=options,
            on_progress=self._progress,
            on_blocked=self._blocked,
            flag=self._registry_flag,
        )
        self.last_tasks = run.record
        reports: dict[str, InstallReport] = {}
        for package_id in run.ids:
            if package_id in run.reports:
                reports[package_id] = run.reports[package_id]
            elif package_id in run.installed:
                pkg = run.installed[package_id]
                target = run.targets.get(package_id)
                reports[package_id] = run.installer.kept_report(
                    package_id,
                    pkg.manifest,
                    pkg.lock_entry,
                    offline=target is not None and target.offline,
                )
        return reports

    def _check_registry_choice(self) -> None:
        """A bad ``registry`` argument or ``SPLICE_REGISTRY`` is ``INVALID_CONFIG`` even when
        no registry is asked: the no-op fast path answered a no-op install with exit 0."""
        from splice_build.project.registry_url import check_named_registry

        check_named_registry(flag=self._registry_flag, env=self.env, home=self.home)

    def _blocked(self) -> None:
        from splice_build.project.locking import WAITING

        self._progress("waiting", WAITING)

    def _unchanged_install(self) -> list[InstallReport] | None:
        """A no-op install's reports without the graph when the project is as the last no-op
        run left it (tasks/noop.py), else None."""
        from splice_build.tasks.noop import unchanged_install

        answer = unchanged_install(
            self.layout,
            self.home,
            on_blocked=self._blocked,
        )
        if answer is None:
            return None
        reports, self.last_tasks = answer
        return reports

    def _recovered(self) -> None:
        """Refuse a project that is gone (its splice.json removed since this object was made:
        every call says so, ``NOT_A_PROJECT``, as ``list`` does, rather than "no installed
        package provides" or an empty list) and links in ``.splice/`` (project/state_dir.py),
        then finish a transaction a crash interrupted before reading state (rare: a file test)."""
        from splice_build.project.state_dir import check_state_dir, project_gone

        if not self.layout.project_file.is_file():
            raise project_gone(self.project_root)
        check_state_dir(self.layout)
        if self.layout.tmp_dir.exists():
            from splice_build.install.transaction import project_lock

            with project_lock(self.layout):
                pass

    # package lifecycle -----------------------------------------------------------------------
    @_hinted
    def add(
        self,
        refs: Sequence[str],
        *,
        accept_permissions: Accept = False,
        require_signed: bool = False,
        allow_signer_change: bool = False,
    ) -> list[InstallReport]:
        """Install each ``@ns/name[@range]`` (newest stable → ``^x.y.z``); raises ``SpliceError``."""
        from splice_build.install.installer import InstallOptions
        from splice_build.spec.names import PackageRef
        from splice_build.spec.semver import RangeKind
        from splice_build.tasks.request import GraphRequest, Resolve

        options = InstallOptions(
            accept_permissions=accept_permissions,
            require_signed=require_signed,
            allow_signer_change=allow_signer_change,
        )
        parsed = [named(PackageRef.parse, ref) for ref in names_arg(refs, "refs")]  # type: ignore[arg-type]
        if not parsed:
            raise InstallError(ErrorCode.USAGE, "add needs at least one package")
        ranges: dict[str, set[str]] = {}
        for ref in parsed:
            ranges.setdefault(ref.package.id, set()).add(ref.range.text)
        twice = sorted(package_id for package_id, texts in ranges.items() if len(texts) > 1)
        if twice:  # one of them would silently win: the caller meant something else
            raise InstallError(
                ErrorCode.USAGE,
                f"{twice[0]} is named with different ranges",
                details=[f"{i}: {', '.join(sorted(ranges[i]))}" for i in twice],
            )
        # A given range keeps a locked version it accepts; a bare id (or ``@latest``) asks for
        # the newest stable version, as TS's ``addPackage`` takes it (never older than the lock:
        # install/resolve.py wanted_version).
        resolve = {
            ref.package.id: Resolve(
                ref.range, prefer_locked=ref.range.kind is not RangeKind.LATEST, offline_locked=True
            )
            for ref in parsed
        }
        request = GraphRequest(ids=tuple(resolve), resolve=resolve)
        reports = self._graph(request, options)
        if not all(report.offline for report in reports.values()):
            self._remember_registry()  # a registry that never answered gave the project nothing
        return list(reports.values())

    def _remember_registry(self) -> None:
        """A ``registry`` given to ``add`` in a project whose splice.json names none is kept
        there (as given), so ``outdated``, ``update`` and a fresh clone ask the registry the
        packages came from. A project that names one keeps it: the flag was a one-off. Called
        only when the registry answered: a mistyped URL that ``add`` fell back from to the
        locked versions (offline) is not written."""
        if self._registry_flag is None:
            return
        from splice_build.install.transaction import project_lock
        from splice_build.project.project_file import load_project_file, save_project_file
        from splice_build.records import replace

        with project_lock(self.layout):
            project = load_project_file(self.project_root)
            if project.registry is None:
                remembered = replace(project, registry=self._registry_flag)
                save_project_file(self.project_root, remembered)

    @_hinted
    def install(
        self,
        *,
        accept_permissions: Accept = False,
        require_signed: bool = False,
        allow_signer_change: bool = False,
        frozen: bool = False,
    ) -> list[InstallReport]:
        """Make ``.splice/packages`` exactly what splice.json and splice.lock say (repairs too).

        ``frozen`` refuses to resolve anything: every package must already be locked.
        """
        from splice_build.install.installer import InstallOptions
        from splice_build.project.lockfile import load_lockfile
        from splice_build.project.project_file import load_project_file
        from splice_build.tasks.request import GraphRequest

        options = InstallOptions(
            accept_permissions=accept_permissions,
            require_signed=require_signed,
            allow_signer_change=allow_signer_change,
        )
        if not isinstance(frozen, bool):  # a truthy "no" must not mean frozen
            raise UsageError(f"frozen must be True or False, not {kind(frozen)}")
        if frozen:
            lock = load_lockfile(self.project_root)
            unlocked = [
                p for p in load_project_file(self.project_root).packages if lock.get(p) is None
            ]
            if unlocked:
                raise InstallError(
                    ErrorCode.LOCK_MISMATCH,
                    "splice.lock does not cover splice.json",
                    details=unlocked,
                    hint="Lock them where they may be resolved: `splice install` (without "
                    "--frozen), then commit splice.lock.",
                )
        # The no-op fast path reports without the graph, so without a one-off requirement
        # the last no-op run did not check (splice.json's own policy is in its state).
        self._check_registry_choice()
        unchanged = None if require_signed else self._unchanged_install()
        if unchanged is not None:
            return unchanged
        reports = self._graph(GraphRequest(), options)
        return list(reports.values())

    @_hinted
    def remove(self, ids: Sequence[str]) -> list[dict[str, Any]]:
        """Remove packages (files, lock entries, ranges); ``NOT_INSTALLED`` for unknown ids."""
        from splice_build.install.removal import remove_packages
        from splice_build.install.transaction import project_lock
        from splice_build.spec.names import PackageId

        canonical = [named(PackageId.parse, i).id for i in names_arg(ids, "ids")]  # type: ignore[arg-type]
        with project_lock(self.layout):
            return remove_packages(self.layout, canonical)

    # ``list`` names this method in the rest of the class body: a type checker read each later
    # ``list[...]`` annotation as it (no valid type, so those methods returned ``Any``), hence
    # ``builtins.list`` below.
    @_hinted
    def list(self) -> list[dict[str, Any]]:
        """``[{name, version, range, status, code?, hint?}]``: status ``ok`` / ``missing`` /
        ``invalid``; a package that is not ok carries the refusal's code and hint (for
        example ``LOCK_INCOMPLETE``, hint ``splice install``)."""
        from splice_build.install.derived import require_derived
        from splice_build.project.lockfile import load_lockfile
        from splice_build.project.project_file import sorted_by_id

        self._recovered()
        grants = self._grant_sources()
        project = grants[0]
        lock = load_lockfile(self.project_root)
        rows = []
        for package_id in sorted_by_id({**project.packages, **lock.packages}):
            entry = lock.get(package_id)
            problem: dict[str, Any] = {}
            try:
                memo = grant_memo(self.layout)
                installed = check_installed(
                    self.layout, package_id, entry, home=self.home.path, memo=memo
                )
                require_derived(self.home.path, installed)
                self._require_listed(installed, grants, memo)
                status = "ok"
            except SpliceError as exc:
                if exc.code is ErrorCode.INVALID_CONFIG:
                    raise  # the home, not the package: no row can be trusted
                status = "missing" if exc.code is ErrorCode.NOT_INSTALLED else "invalid"
                _tell(exc, self._hints)
                problem = {"code": str(exc.code), "hint": exc.hint}
            rows.append(
                {
                    "name": package_id,
                    "version": entry.version if entry else None,
                    "range": project.packages.get(package_id),
                    "status": status,
                    **problem,
                }
            )
        return rows

    @_hinted
    def outdated(self, ids: Sequence[str] = ()) -> builtins.list[dict[str, Any]]:
        """Per splice.json package: ``{id, range, current, wanted, latest, status}``.

        Each package is looked up in its registry: the one ``registry_url`` names, except that
        a locked package of a project whose splice.json names none (and with no ``--registry``
        or ``SPLICE_REGISTRY``) is looked up where its lock entry came from.
        """
        return [row for row, _url in self._outdated(ids)]

    def _registry_for(self, project: ProjectFile, entry: LockEntry | None) -> RegistrySetting:
        return _registry_setting(self._registry_flag, self.env, project, self.home, entry)

    def _outdated(self, ids: Sequence[str]) -> builtins.list[tuple[dict[str, Any], str]]:
        """``outdated``'s rows, each with the registry URL it was looked up in."""
        from splice_build.install.resolve import published_versions, wanted_version
        from splice_build.install.session import RegistrySession
        from splice_build.project.lockfile import load_lockfile
        from splice_build.project.project_file import load_project_file
        from splice_build.spec.semver import Range

        project = load_project_file(self.project_root)
        lock = load_lockfile(self.project_root)
        selected = self._selected(project.packages, ids)
        sessions: dict[str, RegistrySession] = {}
        rows = []
        try:
            for package_id in selected:
                entry = lock.get(package_id)
                setting = self._registry_for(project, entry)
                url = setting.url
                if url not in sessions:
                    sessions[url] = RegistrySession(url, home=self.home, env=self.env)
                try:
                    versions, latest = published_versions(sessions[url].client, package_id)
                except RegistryError as exc:
                    raise _asked_for(exc, package_id, setting) from exc
                rng = Range.parse(project.packages[package_id])
                current = entry.version if entry else None
                wanted = wanted_version(versions, rng, current)
                if wanted is None:
                    status = "no-match"
                elif current is None:
                    status = "not-installed"
                elif str(wanted) != current:
                    status = "update-available"
                else:
                    status = "up-to-date"
                row = {
                    "id": package_id,
                    "range": rng.text,
                    "current": current,
                    "wanted": None if wanted is None else str(wanted),
                    "latest": latest,
                    "status": status,
                }
                rows.append((row, url))
        finally:
            for session in sessions.values():
                session.close()
        return rows

    @_hinted
    def update(
        self,
        ids: Sequence[str] = (),
        *,
        accept_permissions: Accept = False,
        require_signed: bool = False,
        allow_signer_change: bool = False,
    ) -> builtins.list[dict[str, Any]]:
        """Install each package's ``wanted`` version, from the registry ``outdated`` found it
        in; ranges never change. The options are ``add``'s (an unknown keyword is Python's
        ``TypeError`` naming ``Splice.update``, as for every method's signature; a wrong
        value is ``USAGE``).

        Returns ``{id, range, from, to, latest, status}`` with status ``updated`` /
        ``up-to-date`` / ``no-match``; unknown ids raise ``NOT_INSTALLED``. ``up-to-date``
        means nothing was installed: a locked version reinstalled because its installed copy
        did not match the lock is ``updated`` (``from`` equal to ``to``), as in TS.
        """
        from splice_build.install.installer import InstallOptions
        from splice_build.spec.semver import Range
        from splice_build.tasks.request import GraphRequest, Resolve

        checked = InstallOptions(
            accept_permissions=accept_permissions,
            require_signed=require_signed,
            allow_signer_change=allow_signer_change,
        )
        looked_up = self._outdated(ids)
        # One run for every registry: each package is checked before any is swapped in, so a
        # refusal among one registry's packages leaves the other registries' as they were.
        todo = {
            row["id"]: Resolve(
                Range.parse(row["range"]), prefer_locked=False, save_range=False, registry=url
            )
            for row, url in looked_up
            if row["wanted"]
        }
        reports: dict[str, InstallReport] = {}
        if todo:
            request = GraphRequest(ids=tuple(todo), resolve=todo)
            reports = self._graph(request, checked)
        results = []
        for row, _url in looked_up:
            report = reports.get(row["id"])
            if row["wanted"] is None or report is None:
                status, to = "no-match", row["current"]
            else:
                to = report.version
                status = "up-to-date" if report.already_installed else "updated"
            results.append(
                {
                    "id": row["id"],
                    "range": row["range"],
                    "from": row["current"],
                    "to": to,
                    "latest": row["latest"],
                    "status": status,
                }
            )
        return results

    def _selected(self, packages: Mapping[str, str], ids: Sequence[str]) -> builtins.list[str]:
        from splice_build.spec.names import PackageId, did_you_mean

        # Each package once, in the order given: a package named twice was looked up twice
        # and got two rows (``splice outdated @a/b @a/b`` printed it twice).
        given = dict.fromkeys(named(PackageId.parse, i).id for i in names_arg(ids, "ids"))  # type: ignore[arg-type]
        chosen = list(given) or list(packages)
        unknown = [i for i in chosen if i not in packages]
        if unknown:
            raise InstallError(
                ErrorCode.NOT_INSTALLED,
                f"{unknown[0]} is not in splice.json",
                details=unknown if len(unknown) > 1 else (),
                hint=f"{did_you_mean(unknown[0], packages)}Run `splice list` to see the "
                "project's packages.",
            )
        return chosen

    @_hinted
    def verify(self, ref: str) -> dict[str, Any]:
        """The verification report of docs/compatibility.md#verification-pipeline for ``@ns/name[@version]``.

        Without a version: the locked one if the project has it, else the registry's latest.
        The registry asked is the package's, as for ``outdated`` and ``update``: a locked
        package of a project whose splice.json names none (and with no ``--registry`` or
        ``SPLICE_REGISTRY``) is asked of the registry its lock entry came from.
        """
        return verify_package(
            ref, self.layout, registry=self._registry_flag, env=self.env, home=self.home
        )

    # installed code ---------------------------------------------------------------------------
    @_hinted
    def check(self, package_id: str) -> InstalledPackage:
        """Re-verify ``package_id`` (``@ns/name``, or the short name of exactly one, as
        ``tools`` and ``load`` take it) from bytes; raises ``INSTALLED_PACKAGE_MODIFIED`` /
        ``PERMISSIONS_NOT_GRANTED`` / ``NOT_INSTALLED`` (also for a tree this machine never
        checked against the artifact its lock pins: install/derived.py)."""
        from splice_build.project.lockfile import load_lockfile

        self._recovered()
        canonical = self._package_id(package_id)
        return self._check_in(load_lockfile(self.project_root), canonical)

    def _check_in(
        self, lock: Lockfile, package_id: str, grants: GrantSources | None = None
    ) -> InstalledPackage:
        """``check`` against a lock already read (one read of it per call of the caller), and
        ``grants`` (:meth:`_grant_sources`, else read now).

        An install or removal in another process (``splice add`` while ``splice mcp``
        serves) can be halfway through its swap when the files are hashed, or commit just
        after the lock was read: the copy is then missing or does not match that lock for an
        instant, or its grant not recorded yet. So a failed check is made once more after any
        transaction in progress has finished (``_recovered`` waits for the project lock while
        ``.splice/tmp`` exists, and the record is written before it goes:
        install/transaction.py ``apply``), against the lock and grants as they are then; a
        package really modified fails both times."""
        try:
            return self._checked(lock.get(package_id), package_id, grants)
        except SpliceError:
            self._recovered()
            from splice_build.project.lockfile import load_lockfile

            return self._checked(load_lockfile(self.project_root).get(package_id), package_id)

    def _checked(
        self, entry: LockEntry | None, package_id: str, grants: GrantSources | None = None
    ) -> InstalledPackage:
        from splice_build.install.derived import require_derived
        from splice_build.records import replace

        memo = grant_memo(self.layout)
        installed = check_installed(self.layout, package_id, entry, home=self.home.path, memo=memo)
        require_derived(self.home.path, installed)
        links = self._require_listed(installed, grants, memo)
        return replace(installed, accepted_links=tuple(links.items())) if links else installed

    def _grant_sources(self) -> GrantSources:
        """``splice.json`` and this machine's consent record of the project
        (install/consent_record.py): what :meth:`_require_listed` checks a package against,
        read once by a caller that checks many."""
        from splice_build.install.consent_record import read_record
        from splice_build.project.project_file import load_project_file

        return load_project_file(self.project_root), read_record(self.home.path, self.project_root)

    def _require_listed(
        self,
        installed: InstalledPackage,
        grants: GrantSources | None = None,
        memo: RunMemo | None = None,
    ) -> Mapping[str, str]:
        """The checks of this machine's consent (install/consent.py ``require_consented``);
        ``grants``: ``splice.json`` and the record as :meth:`_grant_sources` reads them, else
        read now; ``memo``: the real paths ``check_installed`` took of the copy's grants.
        Returns the links the record accepted, which the runtime checks again at each
        call."""
        from splice_build.install.consent import require_consented

        project, record = self._grant_sources() if grants is None else grants
        return require_consented(
            installed.id,
            installed.version,
            installed.manifest.permissions,
            self.project_root,
            installed.id in project.packages,
            record,
            memo,
        )

    @_hinted
    def installed(self) -> builtins.list[InstalledPackage]:
        """Packages passing the files-digest and grant checks (others are silently skipped)."""
        from splice_build.project.lockfile import load_lockfile

        self._recovered()
        lock = load_lockfile(self.project_root)
        try:
            grants = self._grant_sources()
        except SpliceError:
            return []  # an invalid splice.json, or a home not this user's: none passes
        intact = []
        for package_id in lock.packages:
            try:
                intact.append(self._check_in(lock, package_id, grants))
            except SpliceError:
                continue
        return intact

    @_hinted
    def tools(self, ref: str | None = None) -> builtins.list[dict[str, Any]]:
        """Tool descriptors of intact installed packages (one package if ``ref`` names it)."""
        from splice_build.spec.tools import describe_tools

        if ref is not None:
            return describe_tools(self.check(ref).manifest)
        return [d for pkg in self.installed() for d in describe_tools(pkg.manifest)]

    def _package_id(self, ref: str) -> str:
        """``@ns/name``, or the short ``name`` of exactly one locked package (as the
        TypeScript SDK's ``tools`` and ``load`` take it): ``NOT_INSTALLED`` naming the
        closest when none has it, ``AMBIGUOUS_TOOL`` (details: the ids) when several do."""
        from splice_build.project.lockfile import load_lockfile
        from splice_build.spec.names import PackageId, did_you_mean, is_valid_name

        if not isinstance(ref, str) or ref.startswith("@") or not is_valid_name(ref):
            return named(PackageId.parse, ref).id  # type: ignore[arg-type]
        ref = str.__str__(ref)  # a subclass's own __str__ or __format__ never runs in a message
        ids = list(load_lockfile(self.project_root).packages)
        found = [i for i in ids if i.rsplit("/", 1)[-1] == ref]
        if len(found) > 1:
            raise InstallError(
                ErrorCode.AMBIGUOUS_TOOL,
                f"{ref} names several installed packages; use the full @ns/name",
                details=found,
            )
        if not found:
            short = [i.rsplit("/", 1)[-1] for i in ids]
            raise InstallError(
                ErrorCode.NOT_INSTALLED,
                f"No installed package is named {ref}",
                hint=f"{did_you_mean(ref, short)}Run `splice list` to see installed packages.",
            )
        return found[0]

    @_hinted
    def resolve_tool(self, ref: str) -> tuple[InstalledPackage, str]:
        """``hello``, ``example.hello``, ``@splice/example.hello`` or ``splice_example_hello``.

        Raises ``NOT_INSTALLED`` when no installed package matches, ``AMBIGUOUS_TOOL`` (details:
        the candidate ids) when several do, and the ``check`` errors for the one that matches.
        """
        from splice_build.project.lockfile import load_lockfile
        from splice_build.spec.names import ToolRef, is_valid_tool_name
        from splice_build.spec.tools import split_mcp_tool_name

        if not isinstance(ref, str):
            raise _no_package_provides(f"a {kind(ref)}")
        ref = str.__str__(ref)  # a subclass's own __str__ or __format__ never runs in a message
        self._recovered()
        lock = load_lockfile(self.project_root)  # read once: resolved and checked against it
        lock_ids = list(lock.packages)
        if "." in ref:
            tool_ref = ToolRef.parse(ref)
            if tool_ref.qualified:
                candidates = [i for i in lock_ids if i == tool_ref.package]
            else:
                candidates = [i for i in lock_ids if i.rsplit("/", 1)[-1] == tool_ref.package_name]
            tool = tool_ref.tool
            pairs = [(i, tool) for i in candidates]
        elif (named := split_mcp_tool_name(ref)) is not None:
            # An MCP name says its package: no other package's manifest is read.
            package_id, tool = named
            if package_id in lock.packages:
                pkg = self._check_in(lock, package_id)
                if pkg.manifest.tool(tool) is not None:
                    return pkg, tool
            raise _no_package_provides(ref)
        else:  # a bare tool name: every installed manifest says whether it has it
            valid = is_valid_tool_name(ref)
            pairs = [(i, ref) for i in lock_ids if valid and ref in self._tool_names(i)]
            tool = ref
        if not pairs:
            meant: builtins.list[str] = []
            if "." in ref:  # a mistyped package's closest, the tool as given: no manifest read
                qualified = tool_ref.qualified
                meant = [f"{i if qualified else i.rsplit('/', 1)[-1]}.{tool}" for i in lock_ids]
            elif tools := [  # a package named without its tool: the tools it has
                f"{ref}.{name}"
                for i in lock_ids
                if ref in (i, i.rsplit("/", 1)[-1])
                for name in self._tool_names(i)
            ]:
                raise InstallError(
                    ErrorCode.NOT_INSTALLED,
                    f"No installed package provides {ref}",
                    hint=f"{ref} is a package: name one of its tools, {', '.join(tools)}.",
                )
            raise _no_package_provides(ref, meant)
        if len({i for i, _ in pairs}) > 1:
            raise InstallError(
                ErrorCode.AMBIGUOUS_TOOL,
                f"{ref} matches several installed packages; use the full @ns/name.tool",
                details=sorted({i for i, _ in pairs}),
            )
        package_id, tool = pairs[0]
        return self._check_in(lock, package_id), tool

    def _tool_names(self, package_id: str) -> builtins.list[str]:
        """Tool names from the installed manifest (only to match a name; ``check`` follows)."""
        try:
            return [
                t.name for t in read_installed_manifest(self.layout.package_dir(package_id)).tools
            ]
        except SpliceError:
            return []

    @_hinted
    def load(self, ref: str) -> LoadedPackage:
        """The runtime's view of a verified installed package (``@ns/name``, or the short
        name of exactly one)."""
        pkg = self.check(ref)
        files = pkg.lock_entry.known(pkg.id).files
        real = Path(os.path.realpath(pkg.directory))
        return self._runtime(real).load_verified(
            real, files, pkg.manifest, accepted_links=pkg.accepted_links
        )

    def _runtime(self, package_dir: Path) -> SpliceRuntime:
        """The runtime of the project ``package_dir`` (a real path, as the package was just
        checked) is installed in: one per SDK object, which owns the warm pool (if any).

        Made under a lock: threads making their first calls at once would otherwise each
        make one, and ``close()`` would end the processes of the last one only. The project's
        path may name another directory by now (a ``current`` link switched to a new release
        of the project): the package checked is the new project's, so a runtime rooted at
        the old one would resolve its grants (``workspace``) in the old directory. That
        runtime is closed and one made for the project the package belongs to."""
        root = package_dir.parents[3]  # <root>/.splice/packages/@ns/name
        with self._runtime_lock:
            current = self._runtime_instance
            if current is not None and current.project_root == root:
                return current
            if current is not None:
                current.close()  # calls in flight keep their processes; no new one is kept
                if self._pool is not None:  # the caller's pool ended with it: one like it
                    from splice_build.runtime.pool import WarmPool

                    old = self._pool
                    self._pool = WarmPool(max_size=old.max_size, idle_seconds=old.idle_seconds)
            return self._new_runtime(root)

    def _new_runtime(self, root: Path) -> SpliceRuntime:
        """A runtime for ``root`` (under ``_runtime_lock``); closed at once when this object
        was: a call made after ``close()`` runs in a process of its own and keeps none, also
        when ``close()`` came before the first call made a runtime to close."""
        from splice_build.runtime import SpliceRuntime

        runtime = SpliceRuntime(
            project_root=root,
            env=self.env,
            broker=self._broker,  # type: ignore[arg-type]
            pool=self._pool,
            home=self.home.path,
            reuse=self._reuse_policy(),
        )
        if self._closed:
            runtime.close()
        self._runtime_instance = runtime
        return runtime

    def _reuse_policy(self) -> ReusePolicy | None:
        if self._reuse == "project":
            from splice_build.project.project_file import load_project_file

            return load_project_file(self.project_root).reuse_policy()
        if self._reuse is True:
            from splice_build.spec.reuse import ReusePolicy

            return ReusePolicy()
        return self._reuse or None

    def close(self) -> None:
        """End the sandbox processes this object keeps (a pool's, reuse's) and their threads;
        a later call runs in a process of its own (docs/sdk.md#resources)."""
        with self._runtime_lock:  # a first call making the runtime now sees it closed
            self._closed = True
            runtime = self._runtime_instance
        if runtime is not None:
            runtime.close()

    def __enter__(self) -> Splice:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        """The project alone: ``env`` (keys, tokens) and the registry (a URL may carry a
        user's name) are never shown, so a logged ``Splice`` leaks neither."""
        return f"Splice(project={str(self.project_root)!r})"

    @_hinted
    def run(self, ref: str, input: Mapping[str, object]) -> ToolResult:
        """Re-verify the package from bytes, then run the tool in the sandbox.

        Raises the ``resolve_tool`` errors before any code runs; tool failures are results.
        """
        pkg, tool = self.resolve_tool(ref)
        result = self.run_resolved(pkg, tool, input)
        if self._replaced_during(pkg, result):
            pkg, tool = self.resolve_tool(ref)
            result = self.run_resolved(pkg, tool, input)
        return result

    def _replaced_during(self, pkg: InstalledPackage, result: ToolResult) -> bool:
        """Whether ``result`` failed because another process replaced ``pkg`` after its
        check (``splice update`` while ``splice mcp`` serves): its process found other files
        than those checked (``INSTALLED_PACKAGE_MODIFIED``, no job sent) or the old copy's
        files gone as it loaded them (``TOOL_LOAD_FAILED``), and the lock, read once that
        change has finished, pins another copy. The call is then made again, checked anew
        against the new copy and its grant."""
        if result.ok or result.error is None:
            return False
        if result.error.code not in (
            ErrorCode.INSTALLED_PACKAGE_MODIFIED,
            ErrorCode.TOOL_LOAD_FAILED,
        ):
            return False
        from splice_build.project.lockfile import load_lockfile

        self._recovered()
        return load_lockfile(self.project_root).get(pkg.id) != pkg.lock_entry

    async def run_async(self, ref: str, input: Mapping[str, object]) -> ToolResult:
        """``run`` for asyncio: in a worker thread (the event loop goes on), and cancelling
        the awaiting task ends the tool's sandbox process (SIGKILL, splice_build/cancel.py) before
        ``CancelledError`` goes on.

        ``await asyncio.to_thread(splice.run, ...)`` cannot: a task cancelled (a user's stop,
        ``asyncio.wait_for``'s timeout) leaves its thread, and the untrusted tool with its
        grants, network and capability calls, running to the tool's own timeout (up to a
        minute), unseen by the program, which also waited for it at ``asyncio.run``'s end."""
        import asyncio
        import functools

        from splice_build.cancel import Cancellation, cancellable

        token = Cancellation()
        with cancellable(token):  # the task's context, hence its thread's, holds the token
            call = asyncio.ensure_future(asyncio.to_thread(functools.partial(self.run, ref, input)))
        try:
            return await asyncio.shield(call)
        except asyncio.CancelledError:
            token.cancel()
            while not call.done():  # its thread ends the group and reaps it; then we go on
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.wait((call,))
            if not call.cancelled():
                call.exception()  # read: a result or error dropped, never logged as unretrieved
            raise

    @_hinted
    def run_resolved(
        self, pkg: InstalledPackage, tool: str, input: Mapping[str, object]
    ) -> ToolResult:
        """Run ``tool`` of a package that ``resolve_tool`` has just checked (no second hash)."""
        if not isinstance(pkg, InstalledPackage):  # the only proof that it was checked
            raise UsageError(
                f"run_resolved takes the package resolve_tool or check returned, not {kind(pkg)}"
            )
        real = Path(os.path.realpath(pkg.directory))
        runtime = self._runtime(real)
        loaded = runtime.load_verified(
            real,
            pkg.lock_entry.known(pkg.id).files,
            pkg.manifest,
            accepted_links=pkg.accepted_links,
        )
        # A mapping is copied; anything else goes as it is, so the input check refuses it
        # (INVALID_INPUT) instead of dict() turning a list of pairs into an object.
        try:
            value = dict(input) if isinstance(input, Mapping) else input
        except Exception as exc:  # the caller's own mapping code raised while it was read
            return _unreadable_input(pkg.id, tool, input, exc)
        return runtime.execute(loaded, tool, value)


def verify_package(
    ref: str,
    layout: ProjectLayout | None,
    *,
    registry: str | None,
    env: Mapping[str, str],
    home: SpliceHome,
) -> dict[str, Any]:
    """``Splice.verify`` of the project at ``layout``, or with None of no project (``splice
    verify`` run anywhere, as the TypeScript CLI verifies a registry package): the registry
    is then the flag's, ``SPLICE_REGISTRY``'s, the user config's or the embedded one, the
    version the registry's latest, and the report has no ``pinned`` or ``installed`` check."""
    from splice_build.install.report import verification_report
    from splice_build.install.resolve import no_matching_version, published_versions
    from splice_build.install.session import RegistrySession
    from splice_build.project.lockfile import load_lockfile
    from splice_build.project.project_file import load_project_file
    from splice_build.spec.names import PackageRef
    from splice_build.spec.semver import max_satisfying

    parsed = named(PackageRef.parse, ref)
    package_id = parsed.package.id
    entry = load_lockfile(layout.root).get(package_id) if layout is not None else None
    project = load_project_file(layout.root) if layout is not None else None
    url = _registry_setting(registry, env, project, home, entry).url
    session = RegistrySession(url, home=home, env=env)
    try:
        if parsed.range.is_exact:
            version = parsed.range.text
        elif entry is not None and parsed.range.text == "latest":
            version = entry.version
        else:
            versions, _ = published_versions(session.client, package_id)
            best = max_satisfying(versions, parsed.range)
            if best is None:
                raise no_matching_version(package_id, str(parsed.range), versions, "verify")
            version = str(best)
        try:
            return verification_report(session, layout, package_id, version)
        except RegistryError as exc:
            if exc.code is ErrorCode.PACKAGE_NOT_FOUND and parsed.range.is_exact:
                _no_such_version(session.client, package_id, version, exc)
            raise
    finally:
        session.close()


def _asked_for(exc: RegistryError, package_id: str, setting: RegistrySetting) -> RegistryError:
    """``exc`` with the package it was asked for, and that its ``splice.lock`` entry named the
    registry when it did: with one of a project's registries down, ``outdated`` and ``update``
    said only "Cannot reach the registry at URL" (``PACKAGE_NOT_FOUND`` names the package
    already)."""
    if exc.code is ErrorCode.PACKAGE_NOT_FOUND:
        return exc
    asked = f"asked for {package_id}"
    hint = exc.hint
    if setting.source == "lock":
        asked += ": the registry its splice.lock entry names"
        if exc.code is ErrorCode.REGISTRY_UNREACHABLE:  # its hint names the config's URL
            hint = (
                f"Check that this registry is up and your network: it is the one splice.lock "
                f"records for {package_id}, not the one `splice config get registry` names."
            )
    return RegistryError(exc.code, exc.message, details=[*exc.details, asked], hint=hint)


def _registry_setting(
    flag: str | None,
    env: Mapping[str, str],
    project: ProjectFile | None,
    home: SpliceHome,
    entry: LockEntry | None,
) -> RegistrySetting:
    """The registry a package is asked of, and where it comes from: the flag's,
    ``SPLICE_REGISTRY``'s, the project's, where its lock ``entry`` came from, the user
    config's or the embedded one."""
    from splice_build.project.registry_url import resolve_registry

    locked = entry.registry if entry is not None else None
    return resolve_registry(flag=flag, env=env, project=project, home=home, locked=locked)


# The keyword arguments of Splice() that _checked_options reads (the others: project, registry).
_OPTIONS = ("env", "home", "on_progress", "broker", "pool", "reuse", "hints")


@dataclass(frozen=True)
class _CheckedOptions:
    env: Mapping[str, str]
    home: SpliceHome
    reuse: ReusePolicy | bool | Literal["project"]


def _checked_options(
    *,
    env: object,
    home: object,
    on_progress: object,
    broker: object,
    pool: object,
    reuse: object,
    hints: object,
) -> _CheckedOptions:
    """The options of ``Splice()`` that need no project, checked (``USAGE``): by ``Splice()``
    and by ``Splice.init`` before it writes, so a bad one leaves no directory behind."""
    from splice_build.project.home import SpliceHome

    if hints not in ("sdk", "cli"):
        raise UsageError(f'hints must be "sdk" or "cli", not {hints!r}')
    checked_env = env_arg(os.environ if env is None else env)
    if on_progress is not None and not callable(on_progress):
        raise UsageError(f"on_progress must be callable, not {kind(on_progress)}")
    if not (broker is None or broker is False or callable(getattr(type(broker), "call", 0))):
        raise UsageError(
            f"broker must be an object with a call method, None (the default) or False, "
            f"not {kind(broker)}"
        )
    if pool is not None:
        from splice_build.runtime.pool import WarmPool

        if not isinstance(pool, WarmPool):
            raise UsageError(f"pool must be a WarmPool or None, not {kind(pool)}")
    checked_reuse = _reuse_arg(reuse)
    # Absolute now, as SPLICE_HOME is read: a relative home would follow every later
    # os.chdir (caches, credentials and keys read and written elsewhere).
    checked_home = (
        SpliceHome(absolute_arg(home, "home"))
        if home is not None
        else SpliceHome.from_env(checked_env)
    )
    return _CheckedOptions(env=checked_env, home=checked_home, reuse=checked_reuse)


def _reuse_arg(reuse: object) -> ReusePolicy | bool | Literal["project"]:
    """``reuse`` as documented, checked when the SDK is made rather than at the first call
    (the policy's module only for a value that may be one: ``splice run`` passes the
    default)."""
    if isinstance(reuse, bool):
        return reuse
    if isinstance(reuse, str) and str.__str__(reuse) == "project":
        return "project"
    from splice_build.spec.reuse import ReusePolicy

    if isinstance(reuse, ReusePolicy):
        return reuse
    raise UsageError(f'reuse must be True, False, "project" or a ReusePolicy, not {kind(reuse)}')


def _unreadable_input(package: str, tool: str, given: object, exc: Exception) -> ToolResult:
    """The INVALID_INPUT result of a mapping that raised while it was copied (its
    ``__iter__``, ``keys`` or ``__getitem__``), named by types only: no caller's ``__str__``
    runs, and no ``TypeError`` or ``KeyError`` of its code comes out of ``run``."""
    from splice_build.runtime.result import ToolError, ToolResult

    return ToolResult(
        ok=False,
        package=package,
        tool=tool,
        error=ToolError(
            ErrorCode.INVALID_INPUT,
            f"Input could not be read: the {kind(given)} raised {kind(exc)}",
        ),
    )


def _no_such_version(client: RegistryClient, package_id: str, version: str, exc: Exception) -> None:
    """Raise what is missing when ``package_id@version`` was not found: the package (named
    in the registry asked, as ``add`` says it) or the version, with those that exist ("Version
    … not found" said neither, only the detail "registry code: NOT_FOUND")."""
    from splice_build.install.resolve import available_detail, published_versions
    from splice_build.spec.names import clipped

    versions, _ = published_versions(client, package_id)
    if version not in versions:
        raise RegistryError(
            ErrorCode.PACKAGE_NOT_FOUND,
            f"{package_id} has no version {clipped(version)}",
            details=[available_detail(versions)],
            hint=f"`splice info {package_id}` shows its versions.",
        ) from exc


def _no_package_provides(ref: str, known: Iterable[str] = ()) -> InstallError:
    """``known``: the tool references ``ref`` may have meant (the closest is named)."""
    from splice_build.spec.names import clipped, did_you_mean

    return InstallError(
        ErrorCode.NOT_INSTALLED,
        f"No installed package provides {clipped(ref)}",
        hint=f"{did_you_mean(ref, known)}Run `splice list` to see installed packages, "
        "`splice add <pkg>` to install one.",
    )
