"""Splice as tasks of a user's own ``dodo.py``: ``splice:install``, ``splice:verify``, ``splice:sync``.

::

    from splice_build.tasks import splice_tasks

    def task_splice():
        yield from splice_tasks()

Each task enters through the same graph as the CLI: ``install`` runs the project's graph,
``sync`` the workspace's, ``verify`` the workspace's in check mode (files digests from bytes,
locks against ``splice.json``; nothing is written). ``install`` and ``sync`` are up to date
exactly when that check finds nothing to change, so a ``doit`` run with everything in place
re-hashes the installed files and runs nothing else; ``verify`` always runs. Failures are
reported to doit as ``TaskFailed`` with the error code (no traceback). Other tasks can
``task_dep`` on any of them. Progress is not printed.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

BASENAME = "splice"


def splice_tasks(
    project: str | Path = ".",
    *,
    root: str | Path | None = None,
    registry: str | None = None,
    accept_permissions: bool = False,
) -> Iterator[dict[str, Any]]:
    """Task dicts for doit (see the module docstring).

    ``project`` is the project ``splice:install`` installs; ``root`` the workspace root of
    ``splice:sync`` and ``splice:verify`` (default: found from ``project``, as ``splice sync``
    does); ``registry`` overrides the registry as ``--registry`` does.
    """
    here = Path(os.path.abspath(project))
    yield {
        "basename": f"{BASENAME}:install",
        "doc": "install exactly what splice.lock pins (restores modified packages)",
        "actions": [(_install, (here, registry, accept_permissions))],
        "uptodate": [lambda: _check(here, here, registry)],
        "verbosity": 2,
    }
    yield {
        "basename": f"{BASENAME}:verify",
        "doc": "fail unless every lock matches splice.json and every installed file its lock",
        "actions": [(_verify, (here, root, registry))],
        "uptodate": [False],
        "verbosity": 2,
    }
    yield {
        "basename": f"{BASENAME}:sync",
        "doc": "install every project of the workspace",
        "actions": [(_sync, (here, root, registry, accept_permissions))],
        "uptodate": [lambda: _check(here, root, registry)],
        "verbosity": 2,
    }


def _run(start: Path, root: str | Path | None, registry: str | None, **options: Any) -> Any:
    from splice_build.project.home import SpliceHome
    from splice_build.project.workspace import find_workspace
    from splice_build.tasks.sync import SyncOptions, sync_workspace

    workspace = find_workspace(start, root=None if root is None else Path(root))
    env = dict(os.environ)
    return sync_workspace(
        workspace,
        home=SpliceHome.from_env(env),
        env=env,
        registry=registry,
        options=SyncOptions(**options),
    )


def _check(start: Path, root: str | Path | None, registry: str | None) -> bool:
    from splice_build.errors import SpliceError

    try:
        return bool(_run(start, root, registry, check=True).ok)
    except SpliceError:
        return False


def _failed(lines: list[str]) -> Any:
    from doit.exceptions import TaskFailed

    return TaskFailed("\n".join(lines))


def _outcome(result: Any) -> Any:
    if result.ok:
        return None
    return _failed([p.line() for p in result.projects if p.status != "ok"])


def _install(project: Path, registry: str | None, accept_permissions: bool) -> Any:
    from splice_build.errors import SpliceError
    from splice_build.sdk import Splice

    try:
        Splice(project, registry=registry).install(accept_permissions=accept_permissions)
    except SpliceError as exc:
        return _failed([f"{exc.message} ({exc.code})", *(f"  - {d}" for d in exc.details)])
    return None


def _verify(start: Path, root: str | Path | None, registry: str | None) -> Any:
    return _outcome(_run(start, root, registry, check=True))


def _sync(
    start: Path, root: str | Path | None, registry: str | None, accept_permissions: bool
) -> Any:
    return _outcome(_run(start, root, registry, accept_permissions=accept_permissions))
