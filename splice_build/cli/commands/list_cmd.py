"""`splice list`: installed packages with status ok / missing / invalid (checked from bytes).

Exit 1 when any package is not ``ok``, so scripts and CI can rely on it. The text gives each
refusal's own hint once: most are repaired by ``splice install`` (it restores the verified
copy, or installs what is missing, asking consent where a grant is missing), but not all (a
directory above the project that another user may write is the user's to close).
"""

from __future__ import annotations

import argparse
from typing import Any

from splice_build.cli.commands.add import open_splice
from splice_build.cli.context import CommandContext

NAME = "list"
HELP = "list the project's packages and whether they are intact"
NEEDS_PROJECT = True

_NOTES = {"missing": "  (missing)", "invalid": "  (invalid: modified or not granted)"}
_CODE_NOTES = {
    "LOCK_INCOMPLETE": "  (LOCK_INCOMPLETE: splice.lock entry incomplete - run splice install)"
}
_HINT = "run `splice install` to install missing packages and restore invalid ones"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    return None


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    rows = open_splice(ctx).list()

    def text(rows: list[dict[str, Any]]) -> str:
        if not rows:
            return "No packages installed. Add one with `splice add <pkg>`."
        width = max(len(r["name"]) for r in rows)
        return "\n".join(
            f"{r['name']:<{width}}  {r['version'] or '-'}"
            f"{_CODE_NOTES.get(r.get('code', ''), _NOTES.get(r['status'], ''))}"
            for r in rows
        )

    ctx.out.result(rows, text)
    refused = [row for row in rows if row["status"] != "ok"]
    if not ctx.json:
        for hint in dict.fromkeys(row.get("hint") or _HINT for row in refused):
            ctx.out.info(f"hint: {hint}")
    return 1 if refused else 0
