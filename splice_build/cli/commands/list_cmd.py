"""`splice list`: installed packages with status ok / missing / invalid (checked from bytes)."""

from __future__ import annotations

import argparse

from splice_build.cli.commands.add import open_splice
from splice_build.cli.context import CommandContext

NAME = "list"
HELP = "list the project's packages and whether they are intact"
NEEDS_PROJECT = True

_NOTES = {"missing": "  (missing - run splice add)", "invalid": "  (invalid - reinstall)"}
_CODE_NOTES = {
    "LOCK_INCOMPLETE": "  (LOCK_INCOMPLETE: splice.lock entry incomplete - run splice install)"
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    return None


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    rows = open_splice(ctx).list()

    def text() -> str:
        if not rows:
            return "No packages installed. Add one with `splice add <pkg>`."
        width = max(len(r["name"]) for r in rows)
        return "\n".join(
            f"{r['name']:<{width}}  {r['version'] or '-'}"
            f"{_CODE_NOTES.get(r.get('code', ''), _NOTES.get(r['status'], ''))}"
            for r in rows
        )

    ctx.out.result(rows, text)
    return 0
