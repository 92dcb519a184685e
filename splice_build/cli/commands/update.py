"""`splice update [pkg…]`: install the newest version each range allows (ranges never change)."""

from __future__ import annotations

import argparse

from splice_build.cli import arg_types
from splice_build.cli.commands.add import (
    add_install_options,
    install_options,
    open_splice,
    warn_of_project,
)
from splice_build.cli.commands.outdated import NO_PACKAGES, newer_outside
from splice_build.cli.context import CommandContext

NAME = "update"
HELP = "update packages within their ranges"
NEEDS_PROJECT = True


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "packages",
        nargs="*",
        type=arg_types.project_package_id,
        metavar="pkg",
        help="packages to update (default: all of splice.json)",
    )
    add_install_options(parser)


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    splice = open_splice(ctx)
    rows = splice.update(args.packages, **install_options(args, ctx))
    lines = []
    for r in rows:
        if r["status"] == "updated" and r["from"] == r["to"]:
            lines.append(f"Reinstalled {r['id']}@{r['to']}: the installed copy was restored")
        elif r["status"] == "updated":
            outside = newer_outside(r["id"], r["to"], r["latest"])
            lines.append(f"Updated {r['id']} {r['from'] or '-'} -> {r['to']}{outside}")
        elif r["status"] == "up-to-date":
            outside = newer_outside(r["id"], r["to"], r["latest"])
            lines.append(f'{r["id"]}@{r["to"]} is up to date (range "{r["range"]}"){outside}')
        else:
            ctx.out.warn(f'{r["id"]}: no version matches "{r["range"]}"')
    ctx.out.result(rows, "\n".join(lines) if rows else NO_PACKAGES)  # not an empty line
    warn_of_project(ctx, splice.project_root)
    return 1 if any(r["status"] == "no-match" for r in rows) else 0
