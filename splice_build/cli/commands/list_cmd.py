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

_CODE_NOTES = {
    "LOCK_INCOMPLETE": "  (LOCK_INCOMPLETE: splice.lock entry incomplete - run splice install)"
}
# What an invalid row's refusal means, in words; any other refusal is shown by its code
# ("modified or not granted" left people to guess which, and hid the rest).
_INVALID = {"INSTALLED_PACKAGE_MODIFIED": "modified", "PERMISSIONS_NOT_GRANTED": "not granted"}


def _note(row: dict[str, Any]) -> str:
    code = row.get("code", "")
    if code in _CODE_NOTES:
        return _CODE_NOTES[code]
    if row["status"] == "invalid":
        return f"  (invalid: {_INVALID.get(code, code)})"
    return "  (missing)" if row["status"] == "missing" else ""


_HINT = "run `splice install` to install missing packages and restore invalid ones"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    return None


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    rows = open_splice(ctx).list()

    def text(rows: list[dict[str, Any]]) -> str:
        if not rows:
            return "No packages installed. Add one with `splice add <pkg>`."
        width = max(len(r["name"]) for r in rows)
        return "\n".join(f"{r['name']:<{width}}  {r['version'] or '-'}{_note(r)}" for r in rows)

    ctx.out.result(rows, text)
    refused = [row for row in rows if row["status"] != "ok"]
    if not ctx.json:
        for hint in dict.fromkeys(row.get("hint") or _HINT for row in refused):
            ctx.out.info(f"hint: {hint}")
    return 1 if refused else 0
