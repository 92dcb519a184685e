"""Running the graph: one project lock, crash recovery, doit through its API, and the result.

doit facts this module is built on (issue #6):

- ``DoitMain(loader, config_filenames=())``: a user's ``pyproject.toml`` or ``doit.cfg`` cannot
  change Splice's behaviour.
- The ``sqlite3`` backend is pinned (the default ``dbm`` falls back to ``dbm.dumb`` on some
  Pythons) and its folder is created first. A database doit cannot read is deleted and the run
  repeated: it only caches file states, every check is recomputed.
- doit writes its state only at the end of a run and two processes on one database repeat or
  lose work, so an exclusive lock on the project is held for the whole run (which also
  serializes every change to splice.json, splice.lock and .splice/).
- Runs can leave ``sys.stdout``/``sys.stderr`` redirected (thread-parallel runners swap them);
  both are restored afterwards, and tasks never capture output.
- doit's runner keeps global state, so runs inside one process are serialized too.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from splice_build.install import transaction
from splice_build.install.installer import Installer
from splice_build.project.layout import ProjectLayout
from splice_build.project.lockfile import load_lockfile
from splice_build.project.locking import lock
from splice_build.project.project_file import load_project_file
from splice_build.tasks.reporter import TaskRecord
from splice_build.tasks.request import GraphRequest, GraphRun

_IN_PROCESS = threading.Lock()


@dataclass(frozen=True)
class GraphResult:
    run: GraphRun

    @property
    def tasks(self) -> TaskRecord:
        return self.run.record


@contextlib.contextmanager
def project_lock(
    layout: ProjectLayout, on_blocked: Callable[[], None] | None = None
) -> Iterator[None]:
    """Hold the project's lock and finish any transaction a crash interrupted."""
    with lock(layout.state_lock, on_blocked):
        transaction.recover(layout)
        yield


@contextlib.contextmanager
def _restored_streams() -> Iterator[None]:
    stdout, stderr = sys.stdout, sys.stderr
    try:
        yield
    finally:
        sys.stdout, sys.stderr = stdout, stderr


def scope_ids(layout: ProjectLayout, request: GraphRequest) -> tuple[str, ...]:
    """The packages a run covers: the request's, else splice.json ∪ splice.lock (sorted)."""
    if request.ids is not None:
        return tuple(request.ids)
    from splice_build.project.project_file import sorted_by_id

    ids = {**load_project_file(layout.root).packages, **load_lockfile(layout.root).packages}
    return tuple(sorted_by_id(ids))


def run_graph(
    layout: ProjectLayout,
    installer: Installer,
    request: GraphRequest,
    *,
    on_blocked: Callable[[], None] | None = None,
) -> GraphResult:
    """Run the graph for ``request``; raises the first task's ``SpliceError`` (nothing half-done)."""
    with _IN_PROCESS, project_lock(layout, on_blocked):
        run = GraphRun(layout, installer, scope_ids(layout, request), request)
        _run_doit(run)
        if run.error is not None:
            raise run.error
        if run.record.failed:
            raise AssertionError(f"BUG: graph tasks failed without an error: {run.record.failed}")
        return GraphResult(run)


def _run_doit(run: GraphRun) -> None:
    from doit.dependency import DatabaseException
    from doit.doit_cmd import DoitMain

    from splice_build.tasks.loader import SpliceTaskLoader

    db = run.layout.graph_db
    db.parent.mkdir(parents=True, exist_ok=True)
    for attempt in (1, 2):
        with _restored_streams():
            try:
                code = DoitMain(SpliceTaskLoader(run), config_filenames=()).run(["run"])
            except DatabaseException:
                code = None
        if code is not None or attempt == 2:
            break
        db.unlink(missing_ok=True)  # an unreadable cache of file states: start afresh
        run.record = TaskRecord()
    if code is None:
        raise AssertionError(f"BUG: doit cannot use its database {db}")
    if code not in (0, 1) and run.error is None:
        raise AssertionError(f"BUG: doit stopped with code {code}")
