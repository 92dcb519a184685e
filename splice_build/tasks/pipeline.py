"""Splice as tasks of a user's own ``dodo.py``: ``splice:install``, ``splice:verify``, ``splice:sync``.

::

    from splice_build.tasks import splice_tasks

    def task_splice():
        yield from splice_tasks()

Each task enters through the same graph as the CLI: ``install`` runs the project's graph
(``tasks.project``), ``sync`` the workspace's, ``verify`` the workspace's in check mode
(files digests from bytes, locks against ``splice.json``; nothing is written). All three are
up to date exactly when that check finds nothing to change, so a plain ``doit`` with
everything in place re-hashes the installed files and runs nothing; when the check finds
something, ``install``/``sync`` repair it and ``verify`` fails listing it. Failures are
reported to doit as ``TaskFailed`` with the error code (no traceback). Other tasks can
``task_dep`` on any of them. They are made in the order a plain ``doit`` should run them
(``install``, ``sync``, then ``verify``). Progress is not printed.

The project and the workspace are checked when the tasks are made: a directory that is no
project (or a workspace without one) fails every doit command of that ``dodo.py`` at once,
as doit's own ``ERROR: … (NOT_A_PROJECT)``, instead of when a task first runs. A project
left out of the workspace because it lies in a write grant is named then too, one
``warning:`` line on stderr each, as ``splice sync`` prints it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from splice_build.errors import SpliceError
    from splice_build.tasks.request import GraphRun
    from splice_build.tasks.summary import SyncResult

BASENAME = "splice"


def splice_tasks(
    project: str | Path | None = ".",
    *,
    root: str | Path | None = None,
    registry: str | None = None,
    accept_permissions: bool = False,
) -> Iterator[dict[str, Any]]:
    """Task dicts for doit (see the module docstring).

    ``project`` is the project ``splice:install`` installs (found by walking up, as every
    ``splice`` command does); ``None`` makes no ``splice:install`` (a monorepo's root, which
    is no project itself). ``root`` is the workspace root of ``splice:sync`` and
    ``splice:verify`` (default: found from ``project``, or from the current directory, as
    ``splice sync`` does). ``registry`` overrides the registry as ``--registry`` does.
    Raises doit's ``InvalidTask`` (``NOT_A_PROJECT``) when there is no such project or the
    workspace has none.
    """
    _check_options(registry, accept_permissions)
    here = _project_root(project) if project is not None else None
    workspace = _workspace_root(here or Path.cwd(), root)
    if here is not None:
        yield {
            "basename": f"{BASENAME}:install",
            "doc": "install exactly what splice.lock pins (restores modified packages)",
            "actions": [(_install, (here, registry, accept_permissions))],
            "uptodate": [lambda: _project_check(here, registry)],
            "verbosity": 2,
        }
    yield {
        "basename": f"{BASENAME}:sync",
        "doc": "install every project of the workspace",
        "actions": [(_sync, (workspace, registry, accept_permissions))],
        "uptodate": [lambda: _check(workspace, workspace, registry)],
        "verbosity": 2,
    }
    yield {
        "basename": f"{BASENAME}:verify",
        "doc": "fail unless every lock matches splice.json and every installed file its lock",
        "actions": [(_verify, (workspace, registry))],
        "uptodate": [lambda: _check(workspace, workspace, registry, stat_cache=False)],
        "verbosity": 2,
    }


def _shown(text: str) -> str:
    """``text`` as the CLI shows an error (cli/output.py): doit prints a task's failure as it
    is, and the text holds what a checkout wrote (member paths, ``splice.json`` keys), so
    secrets are redacted and control characters escaped before doit sees it."""
    from splice_build.security.redact import redact
    from splice_build.security.terminal import terminal_safe

    return terminal_safe(redact(text))


def _invalid(exc: SpliceError) -> Exception:
    from doit.exceptions import InvalidTask

    hint = f"\nhint: {exc.hint}" if exc.hint else ""
    return InvalidTask(_shown(f"splice_tasks: {exc.message} ({exc.code}){hint}"))


def _check_options(registry: object, accept_permissions: object) -> None:
    """The two options are given as the CLI's flags are: text, and a yes or no."""
    from splice_build.errors import UsageError
    from splice_build.sdk_args import kind

    if registry is not None and not isinstance(registry, str):
        raise _invalid(UsageError(f"registry must be a URL or an alias, not {kind(registry)}"))
    if not isinstance(accept_permissions, bool):
        raise _invalid(
            UsageError(f"accept_permissions must be True or False, not {kind(accept_permissions)}")
        )


def _project_root(project: object) -> Path:
    from splice_build.errors import SpliceError
    from splice_build.project.project_file import find_project_root
    from splice_build.sdk_args import path_arg

    try:
        return find_project_root(path_arg(project, "project"))
    except SpliceError as exc:
        raise _invalid(exc) from exc


def _workspace_root(start: Path, root: object) -> Path:
    """The workspace's root; one ``warning:`` line on stderr per project found inside a
    write grant (project/tool_written.py), as ``splice sync`` prints them. The tasks are
    made on every doit command, and ``splice:sync``/``splice:verify`` are up to date (their
    action never runs) when the projects left are: a checkout's grant record naming the
    user's project otherwise kept it out of both without a word."""
    import sys

    from splice_build.errors import SpliceError
    from splice_build.project.workspace import find_workspace
    from splice_build.sdk_args import path_arg

    try:
        workspace = find_workspace(start, root=None if root is None else path_arg(root, "root"))
    except SpliceError as exc:
        raise _invalid(exc) from exc
    for line in workspace.dropped_lines():
        print(_shown(f"warning: {line}"), file=sys.stderr)
    return workspace.root


def _run(start: Path, root: Path, registry: str | None, **options: Any) -> SyncResult:
    from splice_build.project.home import SpliceHome
    from splice_build.project.workspace import find_workspace
    from splice_build.tasks.sync import SyncOptions, sync_workspace

    env = dict(os.environ)
    return sync_workspace(
        find_workspace(start, root=root),
        home=SpliceHome.from_env(env),
        env=env,
        registry=registry,
        options=SyncOptions(**options),
    )


def _check(start: Path, root: Path, registry: str | None, *, stat_cache: bool = True) -> bool:
    from splice_build.errors import SpliceError

    try:
        return bool(_run(start, root, registry, check=True, stat_cache=stat_cache).ok)
    except SpliceError:
        return False  # the action runs and reports the error


def _failed(lines: list[str]) -> Any:
    from doit.exceptions import TaskFailed

    return TaskFailed(_shown("\n".join(lines)))


def _error(exc: SpliceError) -> Any:
    return _failed([f"{exc.message} ({exc.code})", *(f"  - {d}" for d in exc.details)])


def _outcome(start: Path, root: Path, registry: str | None, **options: Any) -> Any:
    from splice_build.errors import SpliceError

    try:
        result = _run(start, root, registry, **options)
    except SpliceError as exc:
        return _error(exc)
    if result.ok:
        return None
    return _failed([p.line() for p in result.projects if p.status != "ok"])


def _run_project(
    project: Path, registry: str | None, *, check: bool, accept_permissions: bool = False
) -> GraphRun:
    from splice_build.install.installer import InstallOptions
    from splice_build.project.home import SpliceHome
    from splice_build.project.layout import ProjectLayout
    from splice_build.project.project_file import load_project_file
    from splice_build.project.registry_url import resolve_registry
    from splice_build.tasks.project import run_project
    from splice_build.tasks.request import GraphRequest

    env = dict(os.environ)
    home = SpliceHome.from_env(env)
    url = resolve_registry(flag=registry, env=env, project=load_project_file(project), home=home)
    return run_project(
        ProjectLayout(project),
        GraphRequest(check=check),
        registry_url=url.url,
        home=home,
        env=env,
        options=InstallOptions(accept_permissions=accept_permissions),
        flag=registry,
    )


def _project_check(project: Path, registry: str | None) -> bool:
    """What ``splice install`` of that project alone would change: nothing."""
    from splice_build.errors import SpliceError

    try:
        return not _run_project(project, registry, check=True).changes
    except SpliceError:
        return False  # the action runs and reports the error


def _install(project: Path, registry: str | None, accept_permissions: bool) -> Any:
    from splice_build.errors import SpliceError

    try:
        _run_project(project, registry, check=False, accept_permissions=accept_permissions)
    except SpliceError as exc:
        return _error(exc)
    return None


def _verify(root: Path, registry: str | None) -> Any:
    return _outcome(root, root, registry, check=True, stat_cache=False)  # always from bytes


def _sync(root: Path, registry: str | None, accept_permissions: bool) -> Any:
    return _outcome(root, root, registry, accept_permissions=accept_permissions)
