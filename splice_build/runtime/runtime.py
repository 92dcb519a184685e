"""SpliceRuntime: load, list_tools and execute (docs/compatibility.md#runtime–4.3).

``execute`` never raises for a tool failure: every outcome becomes a ``ToolResult`` whose
messages, details and logs are sanitised (paths → ``<package>``/``<project>``, then secret
redaction including the values of the tool's declared variables).

With a ``WarmPool`` (``pool=``) a call takes a process started before it (runtime/pool.py):
``load`` hashes the package's files *before* it reads its manifest, describes it only from
manifest bytes that hash as they did then, and asks the pool for a process; ``execute``
re-reads the digest after taking one and refuses the call (``INSTALLED_PACKAGE_MODIFIED``)
before sending the job when the files changed since ``load``.
Without a pool every call starts its own process (the one-shot CLI); a package described by
``load_verified`` is re-checked the same way once that process has started (``_check_bound``).

With ``reuse=`` (a ``ReusePolicy``, opt-in; docs/runtime.md#opt-in-reuse) a process that served
a call successfully may serve the next call of the same package under the same grant
(runtime/reuse.py); the digest re-check before each call is the same.

``isolation`` (``auto``, ``require-os``, ``in-process``; None reads the user's config.json)
chooses the OS layer under the in-process guards (runtime/isolation/); every result that
started a process says which layer ran (``ToolResult.isolation``).
"""

from __future__ import annotations

import errno
import os
import time
import weakref
from collections.abc import Callable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from splice_build import cancel
from splice_build.errors import ErrorCode, SandboxError, SpliceError
from splice_build.file_keys import ChangeKey, change_key_at, same_file, same_file_at
from splice_build.records import dataclass, fields, replace
from splice_build.runtime import sandbox
from splice_build.runtime.capabilities import CapabilityBroker, CapabilityChannel, CapabilityReply
from splice_build.runtime.fetch_channel import FetchChannel, TableResolver
from splice_build.runtime.host_files import host_dir
from splice_build.runtime.input_checks import input_as_sent
from splice_build.runtime.limits import (
    DEFAULT_TIMEOUT_MS,
    MAX_JOB_FRAME_BYTES,
    MAX_LOG_BYTES,
    MAX_OUTPUT_BYTES,
    MAX_TIMEOUT_MS,
    REDACTION_GRACE_S,
)
from splice_build.runtime.loader import LoadedPackage, describe_package, load_package
from splice_build.runtime.node import NodeBinary, find_node
from splice_build.runtime.outcome import outcome_to_error, output_error
from splice_build.runtime.protocol import Job, ResultOk
from splice_build.runtime.result import ToolError, ToolResult
from splice_build.runtime.session import Session
from splice_build.security.redact import PathSanitizer, redact

if TYPE_CHECKING:
    from splice_build.runtime.isolation.fileview import FileView, OutOfFiles, SourceChanged
    from splice_build.runtime.isolation.plan import IsolationPlan
    from splice_build.runtime.isolation.support import IsolationSupport
    from splice_build.runtime.pool import PoolKey, WarmPool
    from splice_build.runtime.reuse import Lease, ReusePool
    from splice_build.spec.manifest import Manifest, Tool
    from splice_build.spec.project_state import RunMemo
    from splice_build.spec.reuse import ReusePolicy


@dataclass(frozen=True)
class PinnedPackage(LoadedPackage):
    """A package loaded by a pooled runtime, or verified by the caller (``load_verified``):
    ``files_digest`` was read before its manifest (None when the tree cannot have one:
    links, special files, too many files)."""

    files_digest: str | None
    # (entry, real path) of each file grant leading out of the project the caller's consent
    # record accepted (``load_verified``); None: a package the caller loaded from its own
    # directory (``load``), which no record covers, so none of its grants may leave the
    # project (``accepted_outside``).
    accepted_links: tuple[tuple[str, str], ...] | None = None


class SpliceRuntime:
    """Runs tools of loaded packages in the sandbox; one process per call unless ``reuse``.

    ``pool``: a ``WarmPool`` this runtime owns from now on (``close`` closes it).
    ``reuse``: keep processes between calls of one package under one grant (a pool is
    created when none is given: reused processes are started by its long-lived thread).
    """

    def __init__(
        self,
        *,
        project_root: str | os.PathLike[str],
        env: Mapping[str, str] | None = None,
        broker: CapabilityBroker | None = None,
        max_log_bytes: int = MAX_LOG_BYTES,
        max_output_bytes: int = MAX_OUTPUT_BYTES,
        pool: WarmPool | None = None,
        isolation: str | None = None,
        home: str | os.PathLike[str] | None = None,
        reuse: ReusePolicy | None = None,
        _unsafe_test_resolver: Mapping[str, list[list[str]]] | None = None,
        _unsafe_in_process_guards_off: bool = False,
    ) -> None:
        self.project_root = Path(os.path.realpath(project_root))
        self._env: Mapping[str, str] = os.environ if env is None else env
        # SPLICE_HOME, which no grant may reach (None: from ``env``, as the CLI reads it).
        self._home = Path(os.path.abspath(home)) if home is not None else None
        self._broker = broker
        self._max_log_bytes = max_log_bytes
        self._max_output_bytes = max_output_bytes
        self._reuse: ReusePool | None = None
        made: WarmPool | None = None  # a pool this runtime made for itself (reuse)
        self._verified: dict[tuple[str, str], LoadedPackage] = {}  # load_verified's
        # The write grants of every package this runtime ran (``_shared_writes``).
        self._ran_writes: dict[Path, None] = {}
        # The write grants this runtime recorded, by record file (``_record_grants``), and
        # each record file's stat as this runtime last left it (``_forget_if_changed``).
        self._recorded: set[tuple[Path, Path]] = set()
        self._record_stats: dict[Path, ChangeKey | None] = {}
        if reuse is not None:
            from splice_build.runtime.pool import WarmPool
            from splice_build.runtime.reuse import ReusePool

            self._reuse = ReusePool(reuse)
            made = None if pool is not None else WarmPool()
            pool = pool if pool is not None else made
        self._pool = pool
        # The pools' threads hold the pools, never this runtime: a runtime (or a ``Splice``)
        # dropped without ``close()`` ends the pools it made when it is collected, instead of
        # keeping their processes and threads until the interpreter exits. A pool the caller
        # gave may serve other runtimes too: only ``close()`` ends it.
        self._closer = weakref.finalize(self, _close_pools, self._reuse, made)
        # How many times ``close()`` was called: a call that saw it change ended by it.
        self._closes = 0
        self._given = None if made is not None else pool
        # Tests only: fake DNS answers for the parent's fetch (docs/network-security.md).
        self._test_resolver = None if _unsafe_test_resolver is None else dict(_unsafe_test_resolver)
        # Tests only: no permission model, module guard, fetch guard or process locks in the
        # tool's process, to prove what the OS layer alone stops (tests/runtime/test_isolation*).
        self._guards_off = _unsafe_in_process_guards_off
        from splice_build.runtime.isolation.plan import ConfiguredMode, check_mode

        # ``isolation=``, else the user's setting, read again at a call once it changed
        if isolation is None:
            self._mode_now: Callable[[], str] = ConfiguredMode(self._env, self._home).current
        else:
            given = check_mode(isolation, source="SpliceRuntime(isolation=...)")
            self._mode_now = lambda: given
        mode = self.isolation_mode
        if mode == "require-os":
            self._isolation_support(mode)  # refuse now, not at the first call

    @property
    def isolation_mode(self) -> str:
        """The isolation asked for now: ``isolation=``, else ``config.json``'s as it is."""
        return self._mode_now()

    def _isolation_support(self, mode: str) -> IsolationSupport:
        """The machine's support; ISOLATION_UNAVAILABLE here under ``require-os`` when any
        layer it requires is missing."""
        from splice_build.runtime.isolation.plan import unavailable_error
        from splice_build.runtime.isolation.support import detect

        support = detect()
        if mode == "require-os" and support.missing_required():
            raise unavailable_error(support)
        return support

    def load(self, path: str | os.PathLike[str]) -> LoadedPackage:
        """Load and validate a package directory; raises SandboxError(INVALID_PACKAGE).

        With a pool the result is a ``PinnedPackage`` and a warm process is requested for it.
        """
        if self._pool is None:
            return load_package(path)
        from splice_build.spec.digests import files_digest_from_hashes
        from splice_build.spec.manifest import MANIFEST_FILE
        from splice_build.spec.tree_digest import tree_hashes

        real = Path(os.path.realpath(path))
        hashes = tree_hashes(real)
        if hashes is None:  # links, special files, too many files: no process is warmed
            return self._pinned(load_package(real), None)
        described = load_package(real, manifest_sha256=hashes.get(MANIFEST_FILE, ""))
        return self._pinned(described, files_digest_from_hashes(hashes))

    def load_verified(
        self,
        path: str | os.PathLike[str],
        files_digest: str,
        manifest: Manifest,
        *,
        accepted_links: tuple[tuple[str, str], ...] = (),
    ) -> LoadedPackage:
        """``load`` of an installed package the caller has just verified from its bytes
        (``Splice.run``: ``files_digest`` checked against the lock, ``manifest`` parsed from
        bytes that hash to what that digest covers, install/installed.py): neither hashed
        nor read again here.

        The description is kept per directory and digest, and reused only for the very
        manifest object it was built from. ``execute`` recomputes the digest from the bytes
        after starting or taking the process, through the directory its file view bound,
        and refuses the call when it differs (``INSTALLED_PACKAGE_MODIFIED``, ``_check_bound``).
        ``accepted_links``: the file grants the caller's consent record accepted leading out
        of the project, with where (spec/outside_grants.py); every call refuses any other
        such grant as its paths are resolved (``_granted_paths``), so a link swapped in after
        the caller's check runs nothing.
        """
        real = os.path.realpath(path)
        loaded = self._verified.get((real, files_digest))
        if (
            not isinstance(loaded, PinnedPackage)
            or loaded.manifest is not manifest
            or loaded.accepted_links != accepted_links
        ):
            loaded = self._pinned(
                describe_package(Path(real), manifest), files_digest, accepted_links
            )
            if len(self._verified) >= _VERIFIED_MAX:
                self._verified.clear()
            self._verified[(real, files_digest)] = loaded
        elif self._pool is not None:
            self.prewarm(loaded)
        return loaded

    def _pinned(
        self,
        pkg: LoadedPackage,
        digest: str | None,
        accepted_links: tuple[tuple[str, str], ...] | None = None,
    ) -> PinnedPackage:
        """``pkg`` keyed by ``digest`` (of the bytes its manifest was read from), with a warm
        process requested for it."""
        pinned = PinnedPackage(
            **{f: getattr(pkg, f) for f in _LOADED_FIELDS},
            files_digest=digest,
            accepted_links=accepted_links,
        )
        self.prewarm(pinned)
        return pinned

    def prewarm(self, pkg: LoadedPackage, *, wait: bool = False) -> None:
        """Have a warm process ready for ``pkg`` (no-op without a pool or a files digest).

        The write grants are created first, as a call creates them (pipeline step 5): the
        process's file view is planned from the paths that exist when it starts, so a write
        directory made only by the call would be missing from the view of a process started
        before it, or (made between the plan and the mounts) make the start fail and the
        call start a process of its own."""
        if self._pool is None:
            return
        self._grant(pkg)
        try:
            key = self._pool_key(pkg)
        except OSError:
            return  # the call starts its process itself and reports why it cannot
        if key is not None:
            self._record_grants(pkg, key.spec.write_paths)  # before any process of it starts
            self._pool.prewarm(key, wait=wait)

    def close(self) -> None:
        """End the pool's processes (a runtime without a pool holds none); a pool this runtime
        made ends also when the runtime is collected without it."""
        self._closes += 1  # before the processes end: their calls read it as they answer
        self._closer()
        if self._given is not None:
            self._given.close()

    def __enter__(self) -> SpliceRuntime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @staticmethod
    def list_tools(pkg: LoadedPackage) -> list[dict[str, Any]]:
        """``[{name, description, input, output?}]`` in manifest order."""
        out = []
        for tool in pkg.manifest.tools:
            item: dict[str, Any] = {
                "name": tool.name,
                "description": tool.description,
                "input": tool.input,
            }
            if tool.output is not None:
                item["output"] = tool.output
            out.append(item)
        return out

    def node(self) -> NodeBinary:
        return find_node(self._env)

    def execute(self, pkg: LoadedPackage, tool_name: str, input: Any) -> ToolResult:
        """Run one tool; every failure is a ``ToolResult`` with ``ok=False``."""
        started = time.monotonic()
        unreachable = _non_utf8_path(pkg.dir, self.project_root)
        if unreachable is not None:
            return ToolResult(
                ok=False,
                package=pkg.id,
                tool=tool_name,
                output=None,
                error=unreachable,
                logs="",
                duration_ms=round((time.monotonic() - started) * 1000),
            )
        # Read once: the values redacted are the values the process is given (and, with reuse,
        # the values its lease is kept under), even when the environment changes meanwhile.
        env = self._job_env(pkg)
        secrets = list(env.values())
        paths = _path_sanitizer(pkg.dir, self.project_root)
        isolation: IsolationPlan | None = None  # set once a process is started
        budget = _RedactionBudget(None)  # the call's deadline, once the job has one
        closes = self._closes

        def clean(text: str) -> str:
            text = text.encode("utf-8", "replace").decode("utf-8")
            return redact(paths(text), secrets, deadline=budget.deadline)

        def finish(
            output: Any = None, error: ToolError | None = None, logs: str = ""
        ) -> ToolResult:
            if error is not None and self._closed_under(error, closes):
                error = _CLOSED_DURING_CALL
            if error is not None:
                error = ToolError(
                    error.code,
                    clean(error.message),
                    tuple(clean(d) for d in error.details),
                    None if error.hint is None else clean(error.hint),
                )
            return ToolResult(
                ok=error is None,
                package=pkg.id,
                tool=tool_name,
                output=output if error is None else None,
                error=error,
                logs=clean(logs),
                duration_ms=round((time.monotonic() - started) * 1000),
                isolation=isolation,
            )

        cancellation = cancel.current()  # an MCP client's notifications/cancelled ends it
        try:
            tool, job, frame = self._prepare(pkg, tool_name, input, env)
            process, lease = self._start(pkg, env)
        except SpliceError as exc:
            return finish(error=ToolError(exc.code, exc.message, exc.details, exc.hint))
        try:  # from the first statement after the start: a ^C lands between any two
            isolation = process.isolation
            cancellation.watch(process)
            return self._run(
                pkg, tool, job, frame, process, lease, clean, finish, budget, cancellation
            )
        except BaseException:
            cancellation.unwatch()
            process.close()  # never leave a started process behind (close is idempotent)
            raise

    def _closed_under(self, error: ToolError, closes: int) -> bool:
        """True when ``close()`` ended the process of a call that started before it: a kept
        or warm process dies with the pool's thread that ``close()`` ends, and the call would
        otherwise report the tool as crashed."""
        return (
            error.code is ErrorCode.TOOL_CRASHED
            and self._pool is not None
            and self._closes != closes
        )

    def _prepare(
        self, pkg: LoadedPackage, tool_name: str, value: Any, env: dict[str, str]
    ) -> tuple[Tool, Job, bytes]:
        """Steps 1–7 of docs/compatibility.md#runtime, and the job with its frame; raises
        SandboxError, never starts a process."""
        from splice_build.spec.schema_subset import validate_value
        from splice_build.spec.semver import Version

        tools = {t.name: t for t in pkg.manifest.tools}
        tool = tools.get(tool_name)
        if tool is None:  # (1)
            from splice_build.spec.names import closest

            close = closest(tool_name, tools)  # as a mistyped package is answered
            raise SandboxError(
                ErrorCode.TOOL_NOT_FOUND,
                f'Tool "{tool_name}" not found in {pkg.id}. Available: {", ".join(tools) or "none"}',
                hint=f"Did you mean {pkg.id}.{close}?" if close is not None else None,
            )
        minimum = (pkg.manifest.runtime or {}).get("minNodeVersion")  # (2)
        if minimum:
            node = self.node()
            if Version.parse(minimum) > Version.parse(node.version_text):
                raise SandboxError(
                    ErrorCode.RUNTIME_UNSUPPORTED,
                    f"{pkg.id} needs Node.js {minimum}; the sandbox has {node.version_text}",
                )
        value, problem = input_as_sent(value)  # (3)–(5)
        if problem is not None:
            raise SandboxError(problem.code, problem.message)
        errors = validate_value(tool.input, value, "input")  # (6): what the tool receives
        if errors:
            raise SandboxError(
                ErrorCode.INVALID_INPUT, f"Invalid input for {pkg.id}.{tool.name}", details=errors
            )
        job = self._job(pkg, tool, value, env)
        frame = job.encode()
        _refuse_large_job(pkg, frame, env)
        self._grant(pkg)  # (7)
        return tool, job, frame

    def _job(self, pkg: LoadedPackage, tool: Tool, value: Any, env: dict[str, str]) -> Job:
        return Job(
            # Lexical: a package tree holds no link (loader.py), and resolving the path again
            # here could follow a link swapped in at the package's path since its process
            # bound the package directory (the bound one is at ``pkg.dir``).
            entry_url=Path(os.path.normpath(pkg.dir / tool.entry)).as_uri(),
            input=value,
            context={
                "package": {"id": pkg.id, "version": pkg.version},
                "tool": tool.name,
                "paths": {"project": str(self.project_root), "package": str(pkg.dir)},
                "permissions": pkg.manifest.permissions.to_json(),
            },
            env=env,
            unsafe_in_process_guards_off=self._guards_off,
        )

    def _grant(self, pkg: LoadedPackage) -> None:
        """Check the grants and mkdir -p each write path (PERMISSIONS_NOT_GRANTED first),
        except one inside another write path: the tool shapes what lies there, links
        included, and may create it itself (``fileview.shaped_by_tool``). The records the
        grants go to are checked for room first: one full of live entries refuses the run
        with nothing made (``_check_record_room``).

        When every write path is a directory already, nothing is created and this check
        would be the earlier of two with nothing of the runtime's between them: ``_spec``
        checks the grants again, against the state at the start, before any process is
        started or taken. It is then left to that one (a grant of a project walked below
        costs a ``stat`` of every directory the walk listed, each check)."""
        from splice_build.project.atomic import fsync_all, make_dirs_through_no_link
        from splice_build.runtime.isolation.fileview import (
            canonical,
            resolve,
            roots,
            shaped_by_tool,
        )
        from splice_build.spec.project_state import effective_fs_path

        named = [effective_fs_path(self.project_root, p) for p in pkg.manifest.permissions.fs_write]
        if all(os.path.isdir(path) for path in named):
            return  # a directory gone since is created by no one: the check at the start sees it
        write = self._granted_paths(pkg)[1]
        self._check_record_room(pkg, write)  # before any directory is made
        self._ran_writes.update(dict.fromkeys(write))
        writable = roots(canonical(write))
        shared = roots(canonical(self._shared_writes()) if write else [])
        made_in: set[str] = set()
        for path in write:
            if shaped_by_tool(str(path), writable, shared):
                continue
            try:
                # resolved once more, held to the consent as the view's plan is, and made
                # following no link: one renamed in since the check creates nothing elsewhere
                real = resolve(str(path))[0]
                if not _held(pkg, self.project_root, real):
                    raise SandboxError(
                        ErrorCode.PERMISSIONS_NOT_GRANTED,
                        f"{pkg.id}: a granted path changed while it was checked (a symbolic "
                        "link or another directory in its place); nothing was run",
                        details=[f"{path} -> {real}"],
                        hint="run the tool again once the files stay in place",
                    )
                # project/creation_modes.py's modes, as everything Splice makes in a project
                make_dirs_through_no_link(real, made_in)
            except OSError as exc:  # a file there or on the way, a refused mkdir, a long name
                raise _not_creatable(pkg, path, exc) from exc
        try:  # each once, before the tool starts
            fsync_all(made_in)
        except OSError as exc:
            raise SandboxError(
                ErrorCode.NOT_WRITABLE,
                f"{pkg.id}'s write grants were made, but not durably in {exc.filename}: "
                f"{exc.strerror or exc}; nothing was run",
            ) from exc

    def _record_grants(self, pkg: LoadedPackage, write: tuple[Path, ...]) -> None:
        """Record the write grants before the tool starts (project/grant_record.py), once
        per directory and runtime: workspace discovery must know where a tool may have
        written after its lock entry is gone, or when it ran from ``splice run --dir``."""
        for record, granted in self._grant_records(pkg, write):
            self._record_in(pkg, record, granted)

    def _check_record_room(self, pkg: LoadedPackage, write: tuple[Path, ...]) -> None:
        """NOT_WRITABLE when a record the grants go to could not take them, told before
        ``_grant`` creates any directory (project/grant_record.py ``check_room``)."""
        from splice_build.project.grant_record import check_room

        for record, granted in self._grant_records(pkg, write):
            try:
                check_room(record, self.project_root, granted)
            except OverflowError as exc:
                raise _unrecordable(pkg, record, exc) from exc

    def _grant_records(
        self, pkg: LoadedPackage, write: tuple[Path, ...]
    ) -> list[tuple[Path, list[tuple[str, Path]]]]:
        """Each record ``write`` goes to, with the ``(entry, directory)`` grants it takes
        that this runtime did not record there yet, the home's first. A grant whose real
        path leaves the project (through a link) goes to SPLICE_HOME's record too: a
        workspace elsewhere reads that one, never this project's; and so does every grant
        of a project whose record another user may replace (``_shared``), to the home's
        record of such places, kept apart (project/grant_record.py)."""
        from splice_build.project.grant_record import home_record, record_file
        from splice_build.project.home import SpliceHome

        if not write:
            return []
        home = self._home if self._home is not None else SpliceHome.from_env(self._env).path
        shared = _shared(self.project_root)  # two stats: a chmod may change it
        record = record_file(self.project_root, home, shared)
        in_home = home_record(home, shared)
        self._forget_if_changed(record)
        self._forget_if_changed(in_home)
        granted = [
            (entry, path)
            for entry, path in zip(pkg.manifest.permissions.fs_write, write, strict=True)
            if (record, path) not in self._recorded  # the home's first, so both are done
        ]
        records = []
        if granted and record != in_home:
            inside = str(self.project_root).rstrip(os.sep) + os.sep
            away = [g for g in granted if not os.path.realpath(g[1]).startswith(inside)]
            records.append((in_home, granted if shared else away))
        records.append((record, granted))
        return [
            (
                where,
                [(entry, path) for entry, path in grants if (where, path) not in self._recorded],
            )
            for where, grants in records
        ]

    def _record_in(self, pkg: LoadedPackage, record: Path, granted: list[tuple[str, Path]]) -> None:
        """``granted`` added to ``record``."""
        from splice_build.project.grant_record import remember

        if not granted:
            return
        from splice_build.project.layout import STATE_DIR, ProjectLayout

        if record.parent == self.project_root / STATE_DIR:  # never through a checkout's link
            from splice_build.project.state_dir import check_state_dir

            check_state_dir(ProjectLayout(self.project_root))
        else:  # SPLICE_HOME's: made 0700 if need be, and never another user's
            from splice_build.project.home import SpliceHome

            SpliceHome(record.parent).ensure()
        try:
            remember(record, self.project_root, granted)
        except (OSError, OverflowError) as exc:
            raise _unrecordable(pkg, record, exc) from exc
        self._recorded.update((record, path) for _, path in granted)
        self._record_stats[record] = change_key_at(record)

    def _forget_if_changed(self, record: Path) -> None:
        """Forget what this runtime recorded in ``record`` when the file is no longer as it
        left it (one ``stat`` a call). The user deletes it once what tools wrote is checked
        (docs/monorepo.md): a long-lived runtime (``splice mcp``, one ``Splice``) that only
        remembered having recorded a grant then let its tool write there with no record
        left, and a project it planted was synced once the package was removed. Another
        run's write changes it too: ``remember`` then finds these grants held and writes
        nothing."""
        if record in self._record_stats and self._record_stats[record] != change_key_at(record):
            self._recorded = {(r, p) for r, p in self._recorded if r != record}
            del self._record_stats[record]

    def _shared_writes(self) -> tuple[Path, ...]:
        """The write grants of the project's packages (``splice.lock``) and of every package
        this runtime ran: the places where a tool, this package's or another's, may have
        left a link on the way to a grant (``fileview.shaped_by_tool``). Read only for a
        package with file grants: without one, nothing of the lock matters to its run."""
        from splice_build.project.lockfile import UNKNOWN, load_lockfile
        from splice_build.spec.project_state import effective_fs_path

        found = dict(self._ran_writes)
        try:
            entries = load_lockfile(self.project_root).packages.values()
        except SpliceError:  # no package of such a lock runs through Splice (INVALID_PROJECT)
            entries = ()
        for entry in entries:
            if entry.permissions is not UNKNOWN:
                for write in entry.permissions.fs_write:
                    found[Path(effective_fs_path(self.project_root, write))] = None
        return tuple(found)

    def _granted_paths(self, pkg: LoadedPackage) -> tuple[tuple[Path, ...], tuple[Path, ...]]:
        """The read and write paths handed to Node, each the effective path of its entry;
        PERMISSIONS_NOT_GRANTED when one reaches the project's state or SPLICE_HOME (also
        through a link), so no such grant is ever given, whatever the lock says."""
        from splice_build.project.home import SpliceHome
        from splice_build.project.walk_record import recorded_walks
        from splice_build.spec.project_state import (
            RunMemo,
            effective_fs_path,
            grant_unresolved,
            project_state_problems,
        )

        perms = pkg.manifest.permissions
        home = self._home if self._home is not None else SpliceHome.from_env(self._env).path
        memo = RunMemo(recorded_walks(self.project_root))
        try:
            problems = project_state_problems(
                perms, root=self.project_root, home=home, env=self._env, memo=memo
            )
        except OSError as exc:  # a grant's path swapped mid-resolution (realpath's readlink)
            raise grant_unresolved(
                SandboxError, ErrorCode.PERMISSIONS_NOT_GRANTED, pkg.id, exc, "nothing was run"
            ) from exc
        if problems:
            raise SandboxError(
                ErrorCode.PERMISSIONS_NOT_GRANTED,
                f"{pkg.id} asks for access to a project's state; nothing was run",
                details=problems,
                hint="Install a version of the package that does not ask for it, or move out of "
                "the grant what a line says it holds.",
            )
        _refuse_unaccepted_links(pkg, self.project_root, memo)
        read = tuple(Path(effective_fs_path(self.project_root, p)) for p in perms.fs_read)
        write = tuple(Path(effective_fs_path(self.project_root, p)) for p in perms.fs_write)
        _refuse_wildcards(pkg, [host_dir(), pkg.dir, *read, *write])
        self._refuse_long_command_line(pkg, read, write)
        return read, write

    def _refuse_long_command_line(
        self, pkg: LoadedPackage, read: tuple[Path, ...], write: tuple[Path, ...]
    ) -> None:
        """RUNTIME_UNSUPPORTED when Node's command line, one ``--allow-fs-*`` flag a grant
        (runtime/sandbox.py), would not fit in what this system starts a program with: the
        lists the manifest may hold (1,000 entries each) of long paths in a project at a
        long path took more, and the start failed (``Argument list too long``) after the
        grants' directories were made. Told before anything is made."""
        spec = sandbox.SandboxSpec(
            node=self.node(), package_dir=pkg.dir, read_paths=read, write_paths=write
        )
        need, room = spec.command_line_bytes(), sandbox.command_line_room()
        if need > room:
            raise SandboxError(
                ErrorCode.RUNTIME_UNSUPPORTED,
                f"{pkg.id}'s file grants make a Node command line of {need} bytes, over the "
                f"{room} this system starts a program with; nothing was run",
                hint="grant a directory holding those paths rather than each of them, or "
                "keep the project at a shorter path",
            )

    def _spec(self, pkg: LoadedPackage) -> sandbox.SandboxSpec:
        from splice_build.runtime.isolation.plan import plan_for

        read_paths, write_paths = self._granted_paths(pkg)
        self._ran_writes.update(dict.fromkeys(write_paths))
        mode = self.isolation_mode
        spec = sandbox.SandboxSpec(
            node=self.node(),
            package_dir=pkg.dir,
            read_paths=read_paths,
            write_paths=write_paths,
            isolation=plan_for(mode, self._isolation_support(mode)),
            fetch=bool(pkg.manifest.permissions.network),
            unsafe_in_process_guards_off=self._guards_off,
            reuse=self._reuse is not None,
            shared_writes=self._shared_writes() if read_paths or write_paths else (),
        ).planned()
        if spec.view is not None:
            _refuse_planned_links(pkg, self.project_root, spec.view)
        return spec

    def _pool_key(self, pkg: LoadedPackage) -> PoolKey | None:
        from splice_build.runtime.pool import PoolKey

        digest = pkg.files_digest if isinstance(pkg, PinnedPackage) else _digest(pkg.dir)
        if digest is None:
            return None
        spec = self._spec(pkg)
        if not spec.reuse:  # a one-job process has run no tool code when it is taken
            return PoolKey(spec, digest, self.project_root)
        from splice_build.runtime.isolation.fileview import grants_named

        granted = grants_named([*spec.write_paths, *spec.read_paths])
        return PoolKey(spec, digest, self.project_root, granted)

    def _job_env(self, pkg: LoadedPackage) -> dict[str, str]:
        """The declared variables present in the runtime's environment (the job's ``env``)."""
        return {name: self._env[name] for name in pkg.manifest.permissions.env if name in self._env}

    def _start(
        self, pkg: LoadedPackage, env: dict[str, str]
    ) -> tuple[sandbox.SandboxProcess, Lease | None]:
        """The call's process, and its lease (under the job's ``env``) when it may be kept for
        the next call."""
        from splice_build.runtime.isolation.fileview import OutOfFiles, SourceChanged

        lease = None
        try:
            key = self._pool_key(pkg) if self._pool is not None else None
            if self._pool is None or key is None:
                spec = self._spec(pkg)
                self._record_grants(pkg, spec.write_paths)
                process = sandbox.start(spec)
                try:
                    expected = pkg.files_digest if isinstance(pkg, PinnedPackage) else None
                    if expected is not None:
                        _check_bound(pkg, spec, expected, process)
                except BaseException:  # a ^C (KeyboardInterrupt) as much as a refusal
                    process.close()
                    raise
                return process, None
            self._record_grants(pkg, key.spec.write_paths)
            if self._reuse is not None:
                from splice_build.runtime.reuse import Lease

                directory = key.spec.package_dir

                lease = self._reuse.take(key, env)
                if lease is None:
                    # Only a process the pool's thread started is kept for later calls: one
                    # started in this thread dies with it (PR_SET_PDEATHSIG), maybe while
                    # serving another thread's call. Without one (another caller took it, or
                    # the pool could not start one) this call runs in a process of its own,
                    # whose host exits after its result like any one-job host (a reuse host
                    # would wait for a job that never comes, holding the call for the
                    # session's exit grace).
                    self._pool.prewarm(key, wait=True)
                    warm = self._pool.acquire_warm(key)
                    if warm is not None:
                        lease = Lease(key, warm, env, directory=same_file_at(directory))
                process = (
                    lease.process if lease is not None else self._pool.start_cold(_one_job(key))
                )
            else:
                process = self._pool.acquire(key)
        except SourceChanged as exc:
            raise _view_changed(pkg, exc) from exc
        except OutOfFiles as exc:
            raise _view_out_of_files(pkg, exc) from exc
        except OSError as exc:
            raise SandboxError(
                ErrorCode.TOOL_CRASHED, f"Could not start the tool process: {exc}"
            ) from exc
        try:
            _check_bound(pkg, key.spec, key.files_digest, process)
            if lease is not None:
                from splice_build.runtime.reuse import resume

                if not resume(process):  # a kept process waits stopped: continued for this job
                    raise SandboxError(
                        ErrorCode.TOOL_CRASHED, "The kept tool process could not be continued"
                    )
        except BaseException:  # a ^C (KeyboardInterrupt) as much as a refusal
            process.close()
            raise
        return process, lease

    def _run(
        self,
        pkg: LoadedPackage,
        tool: Tool,
        job: Job,
        frame: bytes,
        process: sandbox.SandboxProcess,
        lease: Lease | None,
        clean: Callable[[str], str],
        finish: Callable[..., ToolResult],
        budget: _RedactionBudget,
        cancellation: cancel.Cancellation,
    ) -> ToolResult:
        perms = pkg.manifest.permissions
        timeout_ms = min(
            getattr(tool, "effective_timeout_ms", None) or DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS
        )
        deadline = time.monotonic() + timeout_ms / 1000
        budget.deadline = deadline + REDACTION_GRACE_S
        resolver = None if self._test_resolver is None else TableResolver(self._test_resolver)

        def make_channel(on_reply: Callable[[CapabilityReply], None]) -> CapabilityChannel:
            return CapabilityChannel(
                package=pkg.id,
                tool=tool.name,
                declared=perms.capabilities,
                broker=self._broker,
                sanitize=clean,
                on_reply=on_reply,
            )

        def make_fetch(post: Callable[[bytes], None]) -> FetchChannel:
            return FetchChannel(
                patterns=perms.network, post=post, deadline=deadline, resolver=resolver
            )

        kept = False
        try:
            outcome = Session(
                process,
                job=job,
                frame=frame,
                timeout_s=timeout_ms / 1000,
                make_channel=make_channel,
                make_fetch=make_fetch,
                log_limit=self._max_log_bytes,
                keep=lease is not None,
            ).run()
            error = outcome_to_error(
                outcome, timeout_ms=timeout_ms, max_output=self._max_output_bytes
            )
            if error is None:
                assert isinstance(outcome.message, ResultOk), "BUG: success without a result"
                error = output_error(
                    pkg.id, tool, outcome.message.output, max_output=self._max_output_bytes
                )
            # Only a clean success is served again: any failure, the output's included.
            kept = outcome.kept and error is None
        finally:
            # From here no cancel reaches the process; one that came is why it is not kept.
            if cancellation.unwatch():
                kept = False
            if kept and lease is not None and self._reuse is not None:
                self._reuse.give_back(lease)
            else:
                process.close()
        logs = outcome.logs.text()
        if error is not None:
            return finish(error=error, logs=logs)
        assert isinstance(outcome.message, ResultOk), "BUG: success without a result"
        return finish(output=outcome.message.output, logs=logs)


def _refuse_large_job(pkg: LoadedPackage, frame: bytes, env: Mapping[str, str]) -> None:
    """INPUT_TOO_LARGE for a job the host would not read (``MAX_JOB_FRAME_BYTES``): the input
    is at most 4 MiB, but the values of the variables the package declares are the caller's
    (an SDK ``env`` of 9 MB was ``TOOL_CRASHED``, "the sandbox host failed before running
    the tool"). Told before any directory is made or process started."""
    if len(frame) <= MAX_JOB_FRAME_BYTES:
        return
    held = sum(
        len(name.encode()) + len(value.encode("utf-8", "surrogatepass"))
        for name, value in env.items()
    )
    raise SandboxError(
        ErrorCode.INPUT_TOO_LARGE,
        f"The call's job for {pkg.id} is {len(frame)} bytes, over the {MAX_JOB_FRAME_BYTES} "
        "the sandbox host reads; nothing was run",
        details=[f"the variables {pkg.id} declares hold {held} bytes of it"] if env else [],
        hint="give the tool a smaller input, or smaller values of the variables it declares",
    )


_CLOSED_DURING_CALL = ToolError(
    ErrorCode.INTERRUPTED,
    "close() ended the tool's process during the call",
    hint="close the Splice or runtime once its calls have returned",
)


def _close_pools(reuse: ReusePool | None, pool: WarmPool | None) -> None:
    if reuse is not None:
        reuse.close()
    if pool is not None:
        pool.close()


@dataclass
class _RedactionBudget:
    """When redaction of one call's texts must be done (``time.monotonic()``; None: no job
    started, only our own short messages to clean)."""

    deadline: float | None


_LOADED_FIELDS = tuple(f.name for f in fields(LoadedPackage))
_VERIFIED_MAX = 256  # packages described by ``load_verified`` kept per runtime


@lru_cache(maxsize=64)
def _path_sanitizer(package_dir: Path, project_root: Path) -> PathSanitizer:
    """The placeholders of a call's texts, built once per package and project (each call of
    ``splice mcp`` would otherwise build its path forms and their pattern again)."""
    return PathSanitizer.for_paths({package_dir: "<package>", project_root: "<project>"})


def accepted_outside(pkg: LoadedPackage) -> dict[str, str] | None:
    """The file grants of ``pkg`` this machine accepted leading out of the project, entry:
    real path (``load_verified``); None for a package loaded from its own directory
    (``load``, ``splice run --dir``), which no consent record covers: none of its grants
    may leave the project, as a grant of an installed package may not before it is asked
    for (docs/security.md#consent-on-this-machine)."""
    accepted = pkg.accepted_links if isinstance(pkg, PinnedPackage) else None
    return None if accepted is None else dict(accepted)


def _refuse_unaccepted_links(pkg: LoadedPackage, root: Path, memo: RunMemo) -> None:
    """PERMISSIONS_NOT_GRANTED when a file grant of ``pkg`` leads out of the project at
    ``root`` where this machine did not accept it leading (spec/outside_grants.py); ``memo``:
    the real paths the call's other grant checks took a moment before."""
    from splice_build.spec.outside_grants import outside_links, unaccepted_links

    accepted = accepted_outside(pkg)
    permissions = pkg.manifest.permissions
    found = outside_links(root, permissions, memo)
    away = unaccepted_links(root, permissions, accepted, found)
    if not away:
        return
    details = [f"{entry} -> {real or '(unresolved)'}" for entry, real in away.items()]
    if accepted is None:
        raise SandboxError(
            ErrorCode.PERMISSIONS_NOT_GRANTED,
            f"{pkg.id}: a file grant leads out of the project through a symbolic link, and a "
            "package run from its own directory has no consent for that; nothing was run",
            details=details,
            hint="Grant a directory inside the project, or install the package: "
            "`splice install` asks for such a grant.",
        )
    raise SandboxError(
        ErrorCode.PERMISSIONS_NOT_GRANTED,
        f"{pkg.id}: a file grant leads out of the project where this machine did not "
        "accept it leading; nothing was run",
        details=details,
        hint="Run `splice install`: it asks for them.",
    )


def _refuse_planned_links(pkg: LoadedPackage, root: Path, view: FileView) -> None:
    """SourceChanged (a grant) when ``view`` binds a grant of ``pkg`` out of the project at
    ``root`` where this machine did not accept one of its entries leading, for that access:
    ``_granted_paths`` resolved the grants before the view was planned, and a link swapped
    in between (a directory of the project renamed for one, at any moment) was bound and
    read. What ``build`` mounts is what the plan names (device and inode), so the plan is
    the resolution that holds."""
    from splice_build.runtime.isolation.fileview import MOUNT_ATTR_RDONLY, SourceChanged

    for bind in view.grants_outside(os.path.realpath(root)):
        if not _held(pkg, root, bind.source, write=not bind.attrs & MOUNT_ATTR_RDONLY):
            raise SourceChanged(
                errno.ESTALE, bind.source, "left the project after it was checked", "grant"
            )


def _not_creatable(pkg: LoadedPackage, path: Path, exc: OSError) -> SandboxError:
    """NOT_WRITABLE: ``pkg``'s write grant ``path`` (or a directory made on its way) could
    not be made, so nothing runs."""
    return SandboxError(
        ErrorCode.NOT_WRITABLE,
        f"{pkg.id}'s write grant {path} cannot be created as a directory: "
        f"{exc.strerror or exc}; nothing was run",
        hint="a write grant is a directory: move what is there, or make it writable",
    )


def _unrecordable(pkg: LoadedPackage, record: Path, exc: OSError | OverflowError) -> SandboxError:
    """NOT_WRITABLE: ``pkg``'s write grants cannot be recorded in ``record`` (full, or not
    writable), so nothing runs."""
    return SandboxError(
        ErrorCode.NOT_WRITABLE,
        f"{pkg.id}'s write grants cannot be recorded in {record}: "
        f"{getattr(exc, 'strerror', None) or exc}; nothing was run",
        hint="make it writable, or delete it once what tools wrote is checked",
    )


def _held(pkg: LoadedPackage, root: Path, real: str, *, write: bool = True) -> bool:
    """Whether ``pkg`` may reach the canonical path ``real`` (for writing, or only reading):
    inside the project at ``root``, or where this machine accepted one of its entries of
    that access leading (``accepted_outside``)."""
    from splice_build.spec.outside_grants import in_project

    if in_project(os.path.realpath(root), real):
        return True
    accepted = accepted_outside(pkg) or {}
    perms = pkg.manifest.permissions
    entries = perms.fs_write if write else (*perms.fs_write, *perms.fs_read)
    return real in {accepted[e] for e in entries if e in accepted}


def _one_job(key: PoolKey) -> PoolKey:
    """``key`` for a process that serves one job and exits (same flags, grant and view)."""
    return replace(key, spec=replace(key.spec, reuse=False))


def _digest(directory: Path | str) -> str | None:
    from splice_build.spec.tree_digest import tree_digest

    return tree_digest(directory)


def _view_changed(pkg: LoadedPackage, exc: SourceChanged) -> SandboxError:
    """The refusal of a start whose file view changed between its plan and its bind: the
    package directory (or a link on its way) is INSTALLED_PACKAGE_MODIFIED, a grant is
    PERMISSIONS_NOT_GRANTED (what it names is not what was planned), Node's own files are
    TOOL_CRASHED (the runtime changed under it). Nothing was run in any case."""
    codes = {
        "package": ErrorCode.INSTALLED_PACKAGE_MODIFIED,
        "grant": ErrorCode.PERMISSIONS_NOT_GRANTED,
    }
    what = {"package": "its package directory", "grant": "a granted path"}.get(exc.kind)
    return SandboxError(
        codes.get(exc.kind, ErrorCode.TOOL_CRASHED),
        f"{pkg.id}: {what or 'a file of the runtime'} changed while its sandbox started "
        "(a symbolic link or another directory in its place); nothing was run",
        hint="run the tool again once the files stay in place",
    )


def _view_out_of_files(pkg: LoadedPackage, exc: OutOfFiles) -> SandboxError:
    """The refusal of a start whose file view ran out of descriptors: the program's hard
    open-file limit (a service's ``LimitNOFILE=64``) is too low for the OS layer on this
    machine, as a layer the kernel refuses is (nothing was run; it was TOOL_CRASHED, "Exception
    occurred in preexec_fn")."""
    return SandboxError(
        ErrorCode.ISOLATION_UNAVAILABLE,
        f"{pkg.id}: its sandbox could not be started: {exc.strerror}; nothing was run",
        # The view needs about 60 beside the CLI's own: 1,024 is a user's usual soft limit.
        hint="raise the hard open-file limit to 1024 or more (ulimit -Hn, or LimitNOFILE= in "
        "a service unit) before starting splice",
    )


def _check_bound(
    pkg: LoadedPackage, spec: sandbox.SandboxSpec, expected: str, process: sandbox.SandboxProcess
) -> None:
    """The re-check between starting (or taking) the process and sending the job, never after:
    INSTALLED_PACKAGE_MODIFIED (the process closed) unless the package's files hash to
    ``expected``.

    With a file view the process has bound the package directory planned in ``spec`` (that
    device and inode at that canonical path, ``FileView.package``, or it did not start:
    fileview.build), so the files hashed are read through a descriptor of that very
    directory, never of the package's path resolved again (a link swapped in at the
    package's path while the view was planned made the plan bind the link's target): a directory renamed into the package's
    place before or after the bind, or swapped in and out while the hash reads it, is never
    what was hashed while another is run. Without a file view Node reads the files by path
    when the job asks for them: the re-check is by path (docs/security.md#installed-code).
    """
    view = spec.view if spec.isolation.file_view else None
    try:
        if view is None:
            actual, why = _digest(pkg.dir), ""
        elif view.package is None or view.package.identity is None:
            actual, why = None, "the package directory was not there when its process started"
        else:
            bound = view.package
            actual, why = _bound_digest(Path(bound.source), bound.identity)
    except OSError as exc:  # a path too long to name, a file swapped for a link mid-read
        actual, why = None, f"the package's files cannot be read: {exc.strerror or exc}"
    except BaseException:
        process.close()
        raise
    if actual != expected:
        process.close()
        raise SandboxError(
            ErrorCode.INSTALLED_PACKAGE_MODIFIED,
            f"{pkg.id} changed after it was loaded; the call was refused",
            details=[why or f"files digest {actual} differs from {expected}"],
            hint="load the package again",
        )


def _bound_digest(directory: Path, bound: tuple[int, int]) -> tuple[str | None, str]:
    """The files digest of the directory ``bound`` (device, inode), read through a descriptor
    opened at ``directory`` (``/proc/self/fd``: a rename cannot change what it names), and
    why there is none."""
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        return None, f"the package directory cannot be opened: {exc.strerror or exc}"
    try:
        found = os.fstat(fd)
        if same_file(found) != bound:
            return None, "the package directory was replaced after the tool's process bound it"
        return _digest(f"/proc/self/fd/{fd}/."), ""
    finally:
        os.close(fd)


def _refuse_wildcards(pkg: LoadedPackage, paths: list[Path]) -> None:
    """PERMISSIONS_NOT_GRANTED when a path handed to Node's permission model holds ``*``.

    Node reads ``*`` in an ``--allow-fs-*`` path as a wildcard that also crosses ``/``, so a
    project at ``/home/me/p*`` would grant ``ws`` as ``/home/me/p<anything>/ws``: other
    projects' files. Manifest entries cannot hold one (spec/project_state.py); the project's,
    the package's and Splice's own directories are checked here."""
    from splice_build.spec.project_state import NODE_WILDCARD

    found = [str(path) for path in paths if NODE_WILDCARD in str(path)]
    if found:
        raise SandboxError(
            ErrorCode.PERMISSIONS_NOT_GRANTED,
            f"{pkg.id} cannot be run from a path that holds {NODE_WILDCARD!r}: Node's "
            "permission model would read it as a wildcard and grant other directories too; "
            "nothing was run",
            details=found,
            hint=f"rename the directory so that its path holds no {NODE_WILDCARD!r}",
        )


def _non_utf8_path(package_dir: str | Path, project_root: str | Path) -> ToolError | None:
    """TOOL_LOAD_FAILED when the package or project path is not valid UTF-8, else None.

    Node.js holds paths as Unicode text: a directory name with a byte such as ``\\xff``
    reaches it as U+FFFD, so the entry file cannot be found and the sandbox's path rules
    would name another directory. Refused before a process is started, naming the first
    offending path component (the absolute path stays private, as in every tool error).
    """
    for what, path in (("package directory", package_dir), ("project directory", project_root)):
        for part in Path(path).parts:
            try:
                part.encode("utf-8")
            except UnicodeEncodeError:
                shown = part.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
                return ToolError(
                    ErrorCode.TOOL_LOAD_FAILED,
                    f"The {what} path is not valid UTF-8, so Node.js cannot load tools from it",
                    (f"directory name: {shown}",),
                    hint="rename the directory to a UTF-8 name",
                )
    return None


def _shared(project_root: Path) -> bool:
    """Whether another user may replace the project's grant record: the project's directory
    or its ``.splice`` is another user's (a team's checkout), or others, a team's group or
    an ACL may write it (project/state_owner.py ``others_may_write``). The record is then
    rewritten by whoever runs a tool there next, owned by them with this user's entries in
    it, and another user's record holds only what they can write. What this user's tool
    wrote there is known for certain only from a record of this user's: SPLICE_HOME's."""
    from splice_build.project.layout import STATE_DIR
    from splice_build.project.state_owner import others_may_write

    return others_may_write(project_root) or others_may_write(project_root / STATE_DIR)
