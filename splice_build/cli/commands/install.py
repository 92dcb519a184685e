"""`splice install`: make .splice/packages exactly what splice.lock says (and repair it)."""

from __future__ import annotations

import argparse

from splice_build.cli.commands.add import (
    add_install_options,
    install_options,
    open_splice,
    report_lines,
)
from splice_build.cli.context import CommandContext

NAME = "install"
HELP = "install exactly what splice.lock pins (restores modified packages)"
NEEDS_PROJECT = True


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_install_options(parser)
    parser.add_argument(
        "--frozen", action="store_true", help="fail instead of resolving unlocked packages"
    )


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    splice = open_splice(ctx)
    reports = splice.install(frozen=bool(args.frozen), **install_options(args, ctx))

    def text() -> str:
        if not reports:
            return "Nothing to install: splice.json has no packages."
        fresh = [r for r in reports if not r.already_installed]
        lines = report_lines(fresh)
        lines.append(f"{len(reports)} package(s) match splice.lock ({len(fresh)} installed)")
        return "\n".join(lines)

    ctx.out.result([r.to_json() for r in reports], text)
    return 0
