"""`splice install`: make .splice/packages exactly what splice.lock says (and repair it)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from splice_build.cli.commands.add import (
    INSTALL_FLAGS,
    add_install_options,
    install_options,
    open_splice,
    report_lines,
    warn_of_project,
)
from splice_build.cli.context import CommandContext
from splice_build.cli.plain import parsed, split_command

if TYPE_CHECKING:
    import argparse
    from types import SimpleNamespace

NAME = "install"
HELP = "install exactly what splice.lock pins (restores modified packages)"
NEEDS_PROJECT = True


def add_arguments(parser: argparse.ArgumentParser) -> None:
    import argparse

    add_install_options(parser)
    parser.add_argument(
        "--frozen", action="store_true", help="fail instead of resolving unlocked packages"
    )
    # Not an operand: read only to answer `splice install @splice/files` (npm's and pip's
    # way to add one) with the command that does, as the TypeScript CLI answers it.
    parser.add_argument("named", nargs="*", type=_no_package, help=argparse.SUPPRESS)


def _no_package(word: str) -> str:
    from splice_build.errors import SpecError, UsageError
    from splice_build.spec.names import PackageRef

    try:
        PackageRef.parse(word)
        adds = f"`splice add {word}` adds it"
    except SpecError:
        adds = "`splice add <pkg>` adds one"
    raise UsageError(
        f"install takes no packages: {word!r}",
        hint=f"{adds}; `splice install` installs what splice.lock pins.",
    )


_FLAGS = {**INSTALL_FLAGS, "--frozen": "frozen"}


def plain_args(argv: Sequence[str]) -> SimpleNamespace | None:
    """What the parser makes of ``[flags] install [--frozen] [--accept-permissions]
    [--require-signed] [--allow-signer-change]`` (each option written out in full, at most
    once) when that is certain (cli/plain.py); else None: the parser answers."""
    split = split_command(argv)
    if split is None or split[1] != NAME:
        return None
    flags, _, words = split
    if len(set(words)) != len(words) or not set(words) <= set(_FLAGS):
        return None
    options = {name: option in words for option, name in _FLAGS.items()}
    return parsed(flags, NAME, **options, named=[])  # no word left for ``named``


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    splice = open_splice(ctx)
    reports = splice.install(frozen=bool(args.frozen), **install_options(args, ctx))

    def text(shown: list[dict[str, Any]]) -> str:
        if not shown:
            return "Nothing to install: splice.json has no packages."
        fresh = [r for r in shown if not r["alreadyInstalled"]]
        lines = report_lines(fresh)
        lines.append(f"{len(shown)} package(s) match splice.lock ({len(fresh)} installed)")
        return "\n".join(lines)

    ctx.out.result([r.to_json() for r in reports], text)
    warn_of_project(ctx, splice.project_root)
    return 0
