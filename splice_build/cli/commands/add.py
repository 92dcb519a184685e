"""`splice add <pkg>[@range]…`: install packages and record them in splice.json and splice.lock.

Also home of what the package-manager commands share (install, update): the three install
flags, the consent prompt, and the per-package text output (docs/compatibility.md#cli).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from splice_build.cli import arg_types
from splice_build.cli.context import CommandContext

if TYPE_CHECKING:
    import argparse
    from pathlib import Path

    from splice_build.sdk import Splice

NAME = "add"
HELP = "install packages and save them to splice.json and splice.lock"
NEEDS_PROJECT = True


# The value-less options every package-manager command takes, with their help.
_INSTALL_OPTIONS = {
    "--accept-permissions": "grant the permissions the packages declare",
    "--require-signed": "refuse packages without a verified signature",
    "--allow-signer-change": "accept a package whose signer changed",
}
# The same options by the attribute argparse gives each (install.plain_args reads them).
INSTALL_FLAGS = {option: option[2:].replace("-", "_") for option in _INSTALL_OPTIONS}


def add_install_options(parser: argparse.ArgumentParser) -> None:
    for option, help_text in _INSTALL_OPTIONS.items():
        parser.add_argument(option, action="store_true", help=help_text)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "packages",
        nargs="+",
        type=arg_types.package_ref,
        metavar="pkg[@range]",
        help="e.g. @splice/example@^0.1.0",
    )
    add_install_options(parser)


def open_splice(ctx: CommandContext) -> Splice:
    """The SDK for the command's project, printing progress lines on stderr, after a warning
    of each key of its ``splice.json`` this version does not read (:func:`warn_of_unknown_keys`):
    said before the command's work, so a failure it explains has it too."""
    from splice_build.sdk import Splice

    assert ctx.project_root is not None, "BUG: a package command without a project"
    warn_of_unknown_keys(ctx, ctx.project_root)
    return Splice(
        ctx.project_root,
        registry=ctx.registry,
        env=ctx.env,
        home=ctx.home,
        on_progress=lambda step, message: ctx.out.progress(message, step=step),
        hints="cli",
    )


def warn_of_project(ctx: CommandContext, root: Path) -> None:
    """A ``warning:`` line when the project at ``root`` lies in a write grant of a project
    above it: its packages install, but none of its tools runs (``PERMISSIONS_NOT_GRANTED``,
    docs/security.md#grants-and-project-state). The install said nothing of it before, and
    reinstalled every package each time; ``init`` says it before anything is added."""
    from splice_build.install.installed import ENCLOSING_HINT, enclosing_grant

    held = enclosing_grant(root, ctx.home)
    if held is not None:
        ctx.out.warn(f"no tool of this project will run (PERMISSIONS_NOT_GRANTED): {held}. "
                     f"{ENCLOSING_HINT}")  # fmt: skip


def warn_of_unknown_keys(ctx: CommandContext, root: Path) -> None:
    """A ``warning:`` line for each key of the project's ``splice.json`` this version does not
    read (``ProjectFile.unknown_keys``), for every command that reads the project:
    ``"pakages"`` installed nothing, and ``list`` then said "No packages installed", silently.
    A file that cannot be read says nothing here: the command itself reports it."""
    from splice_build.errors import SpliceError
    from splice_build.project.project_file import load_project_file

    with contextlib.suppress(SpliceError):
        for line in load_project_file(root).unknown_keys():
            ctx.out.warn(line)


def install_options(args: argparse.Namespace, ctx: CommandContext) -> dict[str, Any]:
    """Keyword options for ``Splice.add/install/update``; asks on a terminal if not accepted."""
    accept: bool | Callable[[list[str], str], bool] = bool(args.accept_permissions)
    if not accept and ctx.interactive and not ctx.json:
        accept = _prompt(ctx)
    return {
        "accept_permissions": accept,
        "require_signed": bool(args.require_signed),
        "allow_signer_change": bool(args.allow_signer_change),
    }


def _prompt(ctx: CommandContext) -> Callable[[list[str], str], bool]:
    from splice_build.security.terminal import one_line
    from splice_build.spec.permissions import summary

    def ask(lines: list[str], subject: str) -> bool:
        ctx.out.info(f"{one_line(subject)} requests:")
        for line in lines:  # one grant, one line (grants are visible text: spec/permissions.py)
            ctx.out.info(f"  - {one_line(line)}")
        ctx.out.info(f"In all: {summary(lines)}")
        ctx.out.info("Grant these permissions for this project? [y/N] ")
        try:
            answer = input()
        except EOFError:
            return False
        return answer.strip().lower() in ("y", "yes")

    return ask


def report_lines(reports: Sequence[dict[str, Any]]) -> list[str]:
    """The text of install reports (``InstallReport.to_json`` as ``Output.result`` shows it)."""
    lines: list[str] = []
    for report in reports:
        if report["alreadyInstalled"]:
            lines.append(f"{report['name']}@{report['version']} is already installed")
            if report["offline"]:
                lines.append("  offline: the registry is unreachable; the locked version is kept")
            continue
        was = f" (was {report['previousVersion']})" if report["previousVersion"] else ""
        lines.append(f"Installed {report['name']}@{report['version']}{was}")
        if report["offline"]:
            lines.append("  offline: installed from the verified local cache")
        lines.append(f"  signature: {report['signature']}")
        permissions = report["permissions"]
        lines.append(f"  permissions: {'; '.join(permissions) if permissions else 'none'}")
        short = report["name"].rsplit("/", 1)[-1]
        lines.append(f"  tools: {', '.join(f'{short}.{t}' for t in report['tools'])}")
    return lines


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    splice = open_splice(ctx)
    reports = splice.add(args.packages, **install_options(args, ctx))
    ctx.out.result([r.to_json() for r in reports], lambda shown: "\n".join(report_lines(shown)))
    warn_of_project(ctx, splice.project_root)
    return 0
