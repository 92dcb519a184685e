"""Running the graph: project locks, crash recovery, doit through its API, and the result.

doit facts this module is built on (issues #6 and #7):

- ``DoitMain(loader, config_filenames=())``: a user's ``pyproject.toml`` or ``doit.cfg`` cannot
  change Splice's behaviour.
- The ``sqlite3`` backend is pinned (the default ``dbm`` falls back to ``dbm.dumb`` on some
  Pythons) and its folder is created first. doit turns a database it cannot open into a
  traceback and exit code 3, so the file is opened here first: one that is not a database is
  deleted (it only caches file states, every check is recomputed); a full disk or read-only
  directory is raised with its code.
- doit writes its state only at the end of a run and two processes on one database repeat or
  lose work, so an exclusive lock on every project is held for the whole run (which also
  serializes every change to splice.json, splice.lock and .splice/). Locks are taken in path
  order, so two overlapping syncs cannot deadlock.
- ``-n N -P thread`` runs independent tasks on N threads (the tasks are closures, which
  doit's process pool cannot pickle); ``--continue`` is set, though actions keep errors per
  project and never fail doit.
- Runs can leave ``sys.stdout``/``sys.stderr`` redirected (thread-parallel runners swap them);
  both are restored afterwards, and tasks never capture output. ``DoitMain.run`` also resets
  doit's command-line variables, which a user's own ``doit`` run (``splice_tasks``) still
  needs: they are put back.
- doit's runner keeps global state, so runs inside one process are serialized.
- Only doit's own ``run`` command, its built-in reporters and its ``sqlite3`` backend are
  offered: the entry-point scans for plugin commands, reporters and backends (three passes over
  every installed distribution's metadata, ~25 ms of a no-op run, issue #22) are skipped, and
  no package installed next to Splice can replace a part of its graph.
- A ``check`` run takes no lock it would have to create, recovers nothing and keeps its doit
  database in a temporary directory: it changes no byte of the projects.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from splice_build.errors import SpliceError
from splice_build.install.installer import Installer
from splice_build.install.transaction import project_lock
from splice_build.project.creation_modes import beyond_private, dir_mode_in, private_mode_in
from splice_build.project.layout import ProjectLayout
from splice_build.project.lockfile import load_lockfile
from splice_build.project.locking import BlockedOn, blocked_on, lock
from splice_build.project.project_file import load_project_file, sorted_by_id
from splice_build.records import dataclass
from splice_build.tasks.noop import save_stat_caches
from splice_build.tasks.reporter import TaskRecord
from splice_build.tasks.request import GraphRequest, GraphRun, WorkspaceRun

if TYPE_CHECKING:
    import sqlite3

_IN_PROCESS = threading.Lock()
_RUNNING_HERE = threading.local()  # whether this thread is inside run_workspace


def _forget_runs_after_fork() -> None:
    """In a child of ``fork`` (``multiprocessing``'s default start method on Linux): the
    lock a run of another thread of the parent held at the fork would never be released
    there (that thread does not exist in the child), and the child's first ``add`` or
    ``install`` waited for it for ever. The child's runs are serialized among its own."""
    global _IN_PROCESS
    _IN_PROCESS = threading.Lock()


os.register_at_fork(after_in_child=_forget_runs_after_fork)


@dataclass(frozen=True)
class GraphResult:
    run: GraphRun

    @property
    def tasks(self) -> TaskRecord:
        return self.run.record


@dataclass(frozen=True)
class Member:
    """One project of a run: where it is, how it installs, and its name in task names."""

    layout: ProjectLayout
    installer: Installer
    label: str = ""


@contextlib.contextmanager
def _restored_streams() -> Iterator[None]:
    from doit import doit_cmd

    stdout, stderr = sys.stdout, sys.stderr
    variables = doit_cmd._CMDLINE_VARS
    try:
        yield
    finally:
        sys.stdout, sys.stderr = stdout, stderr
        doit_cmd._CMDLINE_VARS = variables


def open_run(member: Member, request: GraphRequest) -> GraphRun:
    """Read the project's files once; a project that cannot be read fails on its own."""
    run = GraphRun(member.layout, member.installer, (), request, label=member.label)
    try:
        run.project = load_project_file(member.layout.root)
        run.lock = load_lockfile(member.layout.root)
    except SpliceError as exc:
        run.error = exc
        return run
    if request.ids is not None:
        run.ids = tuple(request.ids)
    else:
        run.ids = tuple(sorted_by_id({**run.project.packages, **run.lock.packages}))
    return run


def run_graph(
    layout: ProjectLayout,
    installer: Installer,
    request: GraphRequest,
    *,
    on_blocked: Callable[[], None] | None = None,
) -> GraphResult:
    """Run the graph of one project; raises its first ``SpliceError`` (nothing half-done)."""
    waiting = None if on_blocked is None else lambda _project: on_blocked()
    workspace = run_workspace(
        [Member(layout, installer)], request, db=layout.graph_db, on_blocked=waiting
    )
    [run] = workspace.members
    if run.error is not None:
        raise run.error
    return GraphResult(run)


def run_workspace(
    members: Sequence[Member],
    request: GraphRequest,
    *,
    db: Path,
    jobs: int = 1,
    on_blocked: BlockedOn | None = None,
) -> WorkspaceRun:
    """Run one graph over ``members``; each project's error stays in its ``GraphRun``.

    Raises ``STATE_LOCKED`` when this thread is already running one (a progress or consent
    callback asking for another change: ``_IN_PROCESS`` and the project locks would wait for
    this very thread for ever), else only for broken invariants (``AssertionError("BUG: …")``).
    """
    if getattr(_RUNNING_HERE, "active", False):  # _IN_PROCESS would wait for this thread
        raise _graph_in_progress()
    _RUNNING_HERE.active = True
    try:
        return _run_workspace(members, request, db=db, jobs=jobs, on_blocked=on_blocked)
    finally:
        _RUNNING_HERE.active = False


def _graph_in_progress() -> SpliceError:
    from splice_build.errors import ErrorCode

    return SpliceError(
        ErrorCode.STATE_LOCKED,
        "a graph run is in progress in this thread: a change asked from one of its callbacks "
        "(progress, consent) would wait for itself",
        hint="make the change after the call in progress has returned",
    )


def _run_workspace(
    members: Sequence[Member],
    request: GraphRequest,
    *,
    db: Path,
    jobs: int,
    on_blocked: BlockedOn | None,
) -> WorkspaceRun:
    ordered = sorted(members, key=lambda m: str(m.layout.root))
    with _IN_PROCESS, contextlib.ExitStack() as stack:
        for member in ordered:
            waiting = blocked_on(on_blocked, member.layout.root)
            if not request.check:
                stack.enter_context(project_lock(member.layout, waiting))
            elif member.layout.state_lock.exists():
                stack.enter_context(lock(member.layout.state_lock, waiting))
        if request.check:
            db = Path(stack.enter_context(tempfile.TemporaryDirectory())) / "check.sqlite3"
        runs = tuple(open_run(member, request) for member in members)
        workspace = WorkspaceRun(runs, db, jobs=jobs, check=request.check)
        _run_doit(workspace)
        save_stat_caches(workspace)
    for run in runs:
        run.record = workspace.record
        if run.error is not None and not isinstance(run.error, SpliceError):
            raise run.error  # a bug, not a project's failure
    if workspace.record.failed:
        raise AssertionError(f"BUG: graph tasks failed: {workspace.record.failed}")
    return workspace


def _argv(jobs: int) -> list[str]:
    argv = ["run", "--continue"]
    if jobs > 1:
        argv += ["-n", str(jobs), "-P", "thread"]
    return argv


def _doit_main(workspace: WorkspaceRun) -> Any:
    """``DoitMain`` with doit's own ``run`` command and no plugin scan (see the docstring)."""
    from doit import reporter
    from doit.cmd_run import Run
    from doit.doit_cmd import DoitMain
    from doit.plugin import PluginDict

    from splice_build.tasks.loader import BACKEND, SavingSqliteDB, SpliceTaskLoader

    class _Run(Run):  # type: ignore[misc]
        def get_reporters(self) -> dict[str, Any]:
            return {"console": reporter.ConsoleReporter}  # the loader's reporter is a class

        def get_backends(self) -> dict[str, Any]:
            return {BACKEND: SavingSqliteDB}

    class _Main(DoitMain):  # type: ignore[misc]
        def get_cmds(self) -> Any:
            commands = PluginDict()
            commands["run"] = _Run
            return commands

    return _Main(SpliceTaskLoader(workspace), config_filenames=())


def _run_doit(workspace: WorkspaceRun) -> None:
    from splice_build.tasks.loader import IN_FLIGHT, SavingSqliteDB

    db = workspace.db
    db.parent.mkdir(mode=dir_mode_in(db.parent.parent), parents=True, exist_ok=True)
    _usable_database(db)
    SavingSqliteDB.failures.clear()
    IN_FLIGHT.reset()
    with _restored_streams():
        try:
            code = _doit_main(workspace).run(_argv(workspace.jobs))
        except BaseException:  # ^C or SIGTERM: let running installs end, then let go
            IN_FLIGHT.stop_and_wait()
            raise
    if SavingSqliteDB.failures:
        raise _refused(db, SavingSqliteDB.failures.pop())
    if code not in (0, 1):
        raise AssertionError(f"BUG: doit stopped with code {code}")


# SQLite's primary result codes (sqlite3.h): the file system refused, not a broken database.
_SQLITE_READONLY, _SQLITE_FULL, _SQLITE_CANTOPEN = 8, 13, 14
_SQLITE_REFUSED = frozenset({_SQLITE_READONLY, _SQLITE_FULL, _SQLITE_CANTOPEN})


def _sqlite_primary(exc: Exception) -> int:
    return int(getattr(exc, "sqlite_errorcode", 0)) & 0xFF


def _refused(db: Path, exc: Exception) -> SpliceError:
    """DISK_FULL or NOT_WRITABLE for a database write the file system refused."""
    from splice_build.errors import disk_full, not_writable

    if _sqlite_primary(exc) == _SQLITE_FULL:
        return disk_full(db)
    if _sqlite_primary(exc) in _SQLITE_REFUSED:
        return not_writable(db, str(exc))
    raise AssertionError(f"BUG: doit could not save its database {db}: {exc}") from exc


def _usable_database(db: Path) -> None:
    """Make sure doit can open ``db``: a damaged one is deleted, a refused write raised coded.

    doit reports a database it cannot open as a traceback and exit code 3, so it is opened
    here first, the way doit opens it. The file only caches file states (every check is
    recomputed), so one that is not a database, or is corrupt, is replaced by an empty one.
    A full disk or a read-only directory is the user's to fix: ``DISK_FULL`` or
    ``NOT_WRITABLE`` (docs/lifecycle.md#failure-and-recovery). A database holding anything
    but doit's one table is replaced too (``_only_doit_table``).

    A new one is made with the mode project/creation_modes.py gives (SQLite's own is 0644,
    and its journals take the database's), so a teammate's sync in a team's checkout writes
    it too; one this user may not write (a teammate's made before that rule) is replaced the
    same way, when the directory lets this user.
    """
    import sqlite3

    existed = _writable_database(db)
    for attempt in (1, 2):
        try:
            conn = sqlite3.connect(db)
            try:
                if not _only_doit_table(conn):
                    raise sqlite3.DatabaseError("not doit's schema")
                conn.execute(f"create table if not exists doit {_DOIT_COLUMNS}")
                conn.execute("select count(*) from doit").fetchone()
            finally:
                conn.close()
            return
        except sqlite3.DatabaseError as exc:
            if not existed:
                db.unlink(missing_ok=True)  # no empty database left behind
            if _sqlite_primary(exc) in _SQLITE_REFUSED:
                raise _refused(db, exc) from exc
            if attempt == 2:
                raise AssertionError(f"BUG: doit cannot use its database {db}") from exc
            _start_afresh(db)  # not a database, corrupt, or not doit's schema
            existed = _writable_database(db)  # made again with its creation mode


# The one table doit's sqlite3 backend makes (doit/dependency.py SqliteDB), and the index
# SQLite makes for its primary key.
_DOIT_COLUMNS = "(task_id text not null primary key, task_data json)"
_DOIT_SCHEMA = frozenset(
    {
        ("table", "doit", "doit", "".join(f"create table doit {_DOIT_COLUMNS}".split())),
        ("index", "sqlite_autoindex_doit_1", "doit", None),
    }
)


def _only_doit_table(conn: sqlite3.Connection) -> bool:
    """Whether the database holds nothing, or doit's table and its index alone.

    The database is a file in ``.splice/``, which can come with a checkout, and SQLite runs
    what its schema says: a trigger on ``doit`` (or a view named ``doit``) holding a
    recursive query that never ends made ``splice install`` spin at full CPU until it was
    killed with SIGKILL (SIGTERM and ^C wait for SQLite to return). Read before any statement
    touches the table; compared by text, white space and case aside (doit's own script
    writes it over several lines)."""
    rows = conn.execute("select type, name, tbl_name, sql from sqlite_master").fetchall()
    found = {
        (kind, name, table, None if sql is None else "".join(sql.lower().split()))
        for kind, name, table, sql in rows
    }
    return len(found) == len(rows) and found in (frozenset(), _DOIT_SCHEMA)


def _writable_database(db: Path) -> bool:
    """Whether ``db`` exists; one this user may not write, or that users who may not write
    it may open (made 0644 before: project/creation_modes.py ``private_mode_in``), is
    deleted first, and a missing one is made empty with its creation mode. A new file, not
    a ``chmod``: a read transaction another user holds open keeps its inode."""
    if db.exists():
        if os.access(db, os.W_OK) and not beyond_private(db.stat().st_mode, db.parent):
            return True
        try:
            _start_afresh(db)
        except OSError:
            return True  # the directory is not ours to write: SQLite's refusal says so
    with contextlib.suppress(OSError):  # SQLite's own open reports why
        os.close(os.open(db, os.O_WRONLY | os.O_CREAT | os.O_EXCL, private_mode_in(db.parent)))
    return False


def _start_afresh(db: Path) -> None:
    """Delete ``db`` and SQLite's companion files beside it. A checkout ships ``.splice/``
    too: a directory (or garbage) named ``graph.sqlite3-wal`` made every open fail again
    after the database itself was deleted, and the install an ``INTERNAL_ERROR``. The
    database only caches file states, so a hot journal's rollback is nothing to keep."""
    from splice_build.install.transaction import remove_tree

    for path in (db, *(db.with_name(db.name + suffix) for suffix in _COMPANIONS)):
        remove_tree(path)


# The files SQLite keeps beside a database: a rollback journal, a write-ahead log and its index.
_COMPANIONS = ("-journal", "-wal", "-shm")
