"""`splice secret-scan [paths…]`: look for provider key values and known key formats.

Exit 0 when nothing is found, 1 with one ``path:line: kind`` line per finding (never the
secret) and a summary: how many secrets, in how many of the files scanned (``--json``:
``files`` scanned, ``filesWithSecrets``, ``findings``). Paths default to ``.``; see ``security/secret_scan.py`` for what each kind of path
means (a git checkout, a build output directory, a packed ``.tar.gz``).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from splice_build.cli import arg_types
from splice_build.errors import UsageError

if TYPE_CHECKING:
    from splice_build.cli.context import CommandContext

NAME = "secret-scan"
HELP = "find provider keys and known key formats in a repository, build output or package"
NEEDS_PROJECT = False


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "paths",
        nargs="*",
        type=arg_types.path,
        default=["."],
        help="git checkouts (tracked files), directories (every file), files or .tar.gz packages"
        " (default: .)",
    )


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    from splice_build.broker.keys import load_keys
    from splice_build.security.secret_scan import Finding, scan_paths

    targets = []
    for name in args.paths:
        path = ctx.cwd / name
        if not path.exists():
            raise UsageError(f"No such file or directory: {name}")
        targets.append((path, name))
    keys = load_keys(env=ctx.env, project_root=ctx.project_root or ctx.cwd, home=ctx.home)
    report = scan_paths(targets, keys.named_values())
    for where, why in report.skipped:
        ctx.out.warn(f"{where}: skipped ({why})")
    data = {
        "ok": not report.findings,
        "files": report.files,
        "filesWithSecrets": report.files_with_secrets,
        "findings": [finding.to_json() for finding in report.findings],
    }
    if report.findings:
        # A path is the checkout's file name: rendered from the one-line copy of the data
        # (Output.result), so a name holding a line break cannot draw a finding of its own.
        ctx.out.result(data, lambda shown: "\n".join(str(Finding(**f)) for f in shown["findings"]))
        ctx.out.info(report.summary())
        return 1
    ctx.out.result(data, report.summary())
    return 0
