"""`splice sync`: install every project of a workspace in one graph (docs/monorepo.md)."""

from __future__ import annotations

import argparse
from pathlib import Path

from splice_build.cli.context import CommandContext

NAME = "sync"
HELP = "install every project of the workspace (monorepo) in one graph"
NEEDS_PROJECT = False


def _jobs(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 1 <= value <= 64:
        raise argparse.ArgumentTypeError("must be between 1 and 64")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from splice_build.cli.commands.add import add_install_options

    parser.add_argument("--root", type=Path, help="the workspace root (default: found upwards)")
    parser.add_argument(
        "-j", "--jobs", type=_jobs, default=1, metavar="N", help="run N tasks at once"
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--frozen", action="store_true", help="install exactly the locks; fail on a stale lock"
    )
    mode.add_argument(
        "--check", action="store_true", help="change nothing; exit 1 listing what would change"
    )
    add_install_options(parser)


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    from splice_build.project.home import SpliceHome
    from splice_build.project.workspace import find_workspace
    from splice_build.tasks.sync import SyncOptions, sync_workspace

    workspace = find_workspace(ctx.cwd, root=args.root, remember=not args.check)
    options = SyncOptions(
        jobs=args.jobs,
        frozen=bool(args.frozen),
        check=bool(args.check),
        accept_permissions=bool(args.accept_permissions),
        require_signed=bool(args.require_signed),
        allow_signer_change=bool(args.allow_signer_change),
    )
    ctx.out.progress(f"Syncing {len(workspace.members)} project(s) in {workspace.root}...")
    result = sync_workspace(
        workspace,
        home=SpliceHome(ctx.home),
        env=ctx.env,
        registry=ctx.registry,
        options=options,
        on_progress=lambda path, step, message: ctx.out.progress(f"[{path}] {message}"),
    )

    def text() -> str:
        lines = [outcome.line() for outcome in result.projects]
        failed = sum(1 for p in result.projects if p.status == "failed")
        changed = sum(1 for p in result.projects if p.status == "changes")
        summary = f"{len(result.projects)} project(s): {failed} failed"
        if result.check:
            summary += f", {changed} would change"
        return "\n".join([*lines, summary])

    ctx.out.result(result.to_json(), text)
    return 0 if result.ok else 1
