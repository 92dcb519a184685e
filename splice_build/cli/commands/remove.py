"""`splice remove <pkg…>`: delete packages from .splice/packages, splice.lock and splice.json."""

from __future__ import annotations

import argparse

from splice_build.cli import arg_types
from splice_build.cli.commands.add import open_splice
from splice_build.cli.context import CommandContext

NAME = "remove"
HELP = "remove installed packages"
NEEDS_PROJECT = True


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "packages",
        nargs="+",
        type=arg_types.project_package_id,
        metavar="pkg",
        help="package ids, e.g. @splice/example",
    )


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    removed = open_splice(ctx).remove(args.packages)
    lines = [f"Removed {r['name']}" + (f"@{r['version']}" if r["version"] else "") for r in removed]
    ctx.out.result(removed, "\n".join(lines))
    return 0
