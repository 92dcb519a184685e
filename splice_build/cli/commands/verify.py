"""`splice verify <pkg>[@version]`: every verification check of an artifact (docs/compatibility.md#verification-pipeline)."""

from __future__ import annotations

import argparse
from typing import Any

from splice_build.cli import arg_types
from splice_build.cli.commands.add import open_splice
from splice_build.cli.context import CommandContext

NAME = "verify"
HELP = "verify a package's artifact, metadata and installed files"
NEEDS_PROJECT = False  # outside a project: the registry's artifact alone (report_anywhere)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "package",
        type=arg_types.package_ref,
        metavar="pkg[@version]",
        help="e.g. @splice/example (default version: the locked one, else the latest)",
    )


def _report_anywhere(args: argparse.Namespace, ctx: CommandContext) -> dict[str, Any]:
    """The project's report, or outside any project that of the registry's artifact alone
    (no ``pinned`` or ``installed`` check), as the TypeScript CLI verifies from anywhere:
    before, a package could not be checked before it was added to a project."""
    from splice_build.errors import ErrorCode, ProjectError
    from splice_build.project.home import SpliceHome
    from splice_build.project.project_file import find_project_root
    from splice_build.records import replace
    from splice_build.sdk import verify_package

    try:
        root = find_project_root(ctx.cwd)
    except ProjectError as exc:
        if exc.code is not ErrorCode.NOT_A_PROJECT:
            raise
        home = SpliceHome(ctx.home)
        return verify_package(args.package, None, registry=ctx.registry, env=ctx.env, home=home)
    return open_splice(replace(ctx, project_root=root)).verify(args.package)


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    report = _report_anywhere(args, ctx)

    def text(report: dict[str, Any]) -> str:
        head = f"{report['package']}@{report['version']}: {'verified' if report['verified'] else 'FAILED'}"
        checks = [f"  {c['status']:<7} {c['id']}: {c['message']}" for c in report["checks"]]
        return "\n".join([head, *checks])

    ctx.out.result(report, text)
    return 0 if report["verified"] else 1
