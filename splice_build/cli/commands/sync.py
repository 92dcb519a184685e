"""`splice sync`: install every project of a workspace in one graph (docs/monorepo.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from splice_build.cli.plain import VALUELESS_GLOBAL_FLAGS, split_command

if TYPE_CHECKING:
    import argparse

    from splice_build.cli.context import CommandContext
    from splice_build.cli.output import Output
    from splice_build.project.workspace import Workspace
    from splice_build.tasks.sync import SyncOptions

NAME = "sync"
HELP = "install every project of the workspace (monorepo) in one graph"
NEEDS_PROJECT = False


def _jobs(text: str) -> int:
    from splice_build.cli.arg_types import whole_number

    return whole_number(text, "--jobs", 1, 64)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from splice_build.cli.commands.add import add_install_options

    parser.add_argument("--root", type=Path, help="the workspace root (default: found upwards)")
    parser.add_argument(
        "-j",
        "--jobs",
        type=_jobs,
        default=1,
        metavar="N",
        help="run N tasks at once (1..64; default 1)",
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--frozen", action="store_true", help="install exactly the locks; fail on a stale lock"
    )
    mode.add_argument(
        "--check", action="store_true", help="change nothing; exit 1 listing what would change"
    )
    add_install_options(parser)


def _project_left_out(cwd: Path, workspace: Workspace) -> str | None:
    """A warning when the project around ``cwd`` (below the root) is no member: run in
    ``packages/b`` after ``splice workspace remove packages/b``, or in a project the
    ``members`` patterns miss, sync synced the others and said nothing of the one the user
    stood in. Not looked for from the root itself (the usual place: no cost on a no-op),
    nor for a project in a write grant (``dropped_lines`` names it)."""
    import os

    if os.fspath(cwd) == os.fspath(workspace.root):
        return None
    from splice_build.errors import ProjectError
    from splice_build.project.project_file import find_project_root

    try:
        project = Path(os.path.realpath(find_project_root(cwd)))
    except ProjectError:
        return None
    root = Path(os.path.realpath(workspace.root))
    if not project.is_relative_to(root) or project == root:
        return None
    known = {os.path.realpath(d) for d in workspace.members}
    known.update(os.path.realpath(d.directory) for d in workspace.dropped)
    if os.fspath(project) in known:
        return None
    here = os.path.relpath(project, os.path.realpath(cwd))  # workspace add reads it from cwd
    return (
        f"{project.relative_to(root).as_posix()} (the project here) is not a member of the "
        f"workspace at {workspace.root}, so it is not synced: `splice workspace add {here}` "
        "makes it one"
    )


def plain_check(argv: Sequence[str]) -> bool | None:
    """``--check`` when ``argv`` is exactly ``sync`` or ``sync --check`` (with value-less
    global flags, each at most once), so the parser's answer is certain; else None.

    A no-op ``sync`` costs less than importing and building the parser (issue #22)."""
    split = split_command(argv)
    if split is None or split[1] != NAME or len(set(argv)) != len(argv):
        return None
    words = split[2]
    if not set(words) <= {*VALUELESS_GLOBAL_FLAGS, "--check"}:
        return None
    return "--check" in words


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    from splice_build.tasks.sync import SyncOptions

    options = SyncOptions(
        jobs=args.jobs,
        frozen=bool(args.frozen),
        check=bool(args.check),
        accept_permissions=bool(args.accept_permissions),
        require_signed=bool(args.require_signed),
        allow_signer_change=bool(args.allow_signer_change),
    )
    return sync(
        ctx.out, cwd=ctx.cwd, env=ctx.env, home=ctx.home, registry=ctx.registry,
        root=workspace_root(args, ctx), options=options,
    )  # fmt: skip


def workspace_root(args: argparse.Namespace, ctx: CommandContext) -> Path | None:
    """``--root`` (of ``sync`` and ``workspace``), when given: an existing directory, else
    ``USAGE``. A mistyped one was "No project (splice.json) in the workspace at …" (``sync``,
    exit 1; ``workspace list``, exit 0) or a raw "[Errno 20] Not a directory" for a file."""
    if args.root is None:
        return None
    from splice_build.project.directories import existing_directory

    return existing_directory(ctx.cwd / args.root, "--root")


def sync(
    out: Output,
    *,
    cwd: Path,
    env: Mapping[str, str],
    home: Path,
    registry: str | None,
    root: Path | None,
    options: SyncOptions,
) -> int:
    """The command itself, for ``run`` and for the parser-free ``sync`` (cli/main.py)."""
    from splice_build.project.home import SpliceHome
    from splice_build.project.workspace import find_workspace
    from splice_build.tasks.sync import sync_workspace

    workspace = find_workspace(cwd, root=root, remember=not options.check, home=home)
    # The workspace's warnings, on stderr now and in the --json document: read from it alone,
    # the project the sync was run in, left out, was a silent ``"ok": true``.
    warnings = workspace.dropped_lines()
    outside = _project_left_out(cwd, workspace)
    if outside is not None:
        warnings.append(outside)
    for line in warnings:
        out.warn(line)
    out.progress(f"Syncing {len(workspace.members)} project(s) in {workspace.root}...")
    result = sync_workspace(
        workspace,
        home=SpliceHome(home),
        env=env,
        registry=registry,
        options=options,
        on_progress=lambda path, step, message: out.progress(f"[{path}] {message}"),
    )
    # Projects left out for a write grant are named on stderr above, and here for --json.
    # The text is given as text: ``SyncResult.text`` makes each path and registry word one
    # line itself, so a callable would only have Output copy every field of the result
    # through ``one_line_fields`` for nothing (0.16 ms of each no-op sync of 30 projects).
    document = {**result.to_json(), "dropped": workspace.dropped_json(), "warnings": warnings}
    out.result(document, result.text())
    for project in result.projects:
        for line in project.warnings:
            out.warn(f"{project.path}: {line}")
    return 0 if result.ok else 1
