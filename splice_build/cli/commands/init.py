"""`splice init [dir]`: create splice.json (nothing else)."""

from __future__ import annotations

import argparse

from splice_build.cli import arg_types
from splice_build.cli.context import CommandContext

NAME = "init"
HELP = "create a Splice project (splice.json) in a directory"
NEEDS_PROJECT = False


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "dir", nargs="?", default=".", type=arg_types.path, help="project directory (default: .)"
    )


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    from splice_build.cli.commands.add import warn_of_project, warn_of_unknown_keys
    from splice_build.project.directories import usable_directory
    from splice_build.project.project_file import init_project

    registry = None
    if ctx.registry is not None:
        from splice_build.project.registry_url import normalize_registry_url

        normalize_registry_url(ctx.registry)
        registry = ctx.registry
    target = usable_directory(ctx.cwd / args.dir, "project directory")
    root, created = init_project(target, registry=registry)
    # Rendered from the one-line copy (cli/output.py): the root may lie in a checkout's
    # directories, and a line break in one of them would draw a line of its own.
    ctx.out.result(
        {"root": str(root), "created": created},
        lambda shown: (
            f"Initialized Splice project in {shown['root']}"
            if created
            else f"Already a Splice project: {shown['root']}"
        ),
    )
    warn_of_project(ctx, root)
    warn_of_unknown_keys(ctx, root)
    return 0
