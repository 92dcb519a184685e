"""`splice verify <pkg>[@version]`: every verification check of an artifact (docs/compatibility.md#verification-pipeline)."""

from __future__ import annotations

import argparse
from typing import Any

from splice_build.cli import arg_types
from splice_build.cli.commands.add import open_splice
from splice_build.cli.context import CommandContext

NAME = "verify"
HELP = "verify a package's artifact, metadata and installed files"
NEEDS_PROJECT = True


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "package",
        type=arg_types.package_ref,
        metavar="pkg[@version]",
        help="e.g. @splice/example (default version: the locked one, else the latest)",
    )


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    report = open_splice(ctx).verify(args.package)

    def text(report: dict[str, Any]) -> str:
        head = f"{report['package']}@{report['version']}: {'verified' if report['verified'] else 'FAILED'}"
        checks = [f"  {c['status']:<7} {c['id']}: {c['message']}" for c in report["checks"]]
        return "\n".join([head, *checks])

    ctx.out.result(report, text)
    return 0 if report["verified"] else 1
