"""`splice outdated [pkg…]`: current, wanted and latest versions of splice.json packages."""

from __future__ import annotations

import argparse
from typing import Any

from splice_build.cli import arg_types
from splice_build.cli.commands.add import open_splice
from splice_build.cli.context import CommandContext

NAME = "outdated"
HELP = "show packages with newer versions"
NEEDS_PROJECT = True

_STATUS = {
    "up-to-date": "up to date",
    "update-available": "update available (splice update)",
    "not-installed": "not installed (splice install)",
    "no-match": "no version matches the range",
}


NO_PACKAGES = "No packages: splice.json has none. Add one with `splice add <pkg>`."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "packages",
        nargs="*",
        type=arg_types.project_package_id,
        metavar="pkg",
        help="packages to check (default: all of splice.json)",
    )


def newer_outside(package_id: str, reached: str | None, latest: str | None) -> str:
    """``; 2.0.0 is outside the range (splice add @ns/name)`` when ``latest`` is newer than
    the version the range reaches, else ``""``: ``update`` keeps every range, so "up to date"
    beside a newer latest read as nothing to do. A prerelease ``latest`` (none stable is
    listed) is named in the command: a bare id asks for the newest stable version, and the
    command shown failed with ``NO_MATCHING_VERSION``."""
    from splice_build.spec.semver import Version

    if not (reached and latest):
        return ""
    newest = Version.parse(latest)
    if Version.parse(reached) >= newest:
        return ""
    wanted = f"{package_id}@{latest}" if newest.is_prerelease else package_id
    return f"; {latest} is outside the range (splice add {wanted})"


def _status(row: dict[str, Any]) -> str:
    shown = _STATUS[row["status"]]
    if row["status"] == "up-to-date":
        return shown + newer_outside(row["id"], row["wanted"], row["latest"])
    return shown


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    rows = open_splice(ctx).outdated(args.packages)

    def text(rows: list[dict[str, Any]]) -> str:
        if not rows:  # a header alone read as if the check had found nothing to say
            return NO_PACKAGES
        table = [("Package", "Current", "Wanted", "Latest", "Range", "")]
        table += [
            (
                r["id"],
                r["current"] or "-",
                r["wanted"] or "-",
                r["latest"] or "-",
                r["range"],
                _status(r),
            )
            for r in rows
        ]
        widths = [max(len(row[i]) for row in table) for i in range(5)]
        return "\n".join(
            (
                "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:5])) + "  " + row[5]
            ).rstrip()
            for row in table
        )

    ctx.out.result(rows, text)
    return 0
