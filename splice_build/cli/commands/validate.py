"""`splice validate [dir|archive]`: check a package directory or artifact, listing every problem."""

from __future__ import annotations

import argparse
from pathlib import Path

from splice_build.cli import arg_types
from splice_build.cli.context import CommandContext

NAME = "validate"
HELP = "validate a package directory or a .tar.gz artifact"
NEEDS_PROJECT = False


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "target",
        nargs="?",
        default=".",
        type=arg_types.path,
        help="package directory or archive (default: .)",
    )


_TAKES = (
    "Name a package directory (the one holding manifest.json) or the .tar.gz `splice pack` wrote."
)


def _load_files(target: Path) -> tuple[dict[str, bytes], str]:
    """Files of a directory (pack rules) or of an archive (through the safe reader)."""
    from splice_build.errors import ErrorCode, SpecError
    from splice_build.spec.archive import read_archive
    from splice_build.spec.limits import MAX_ARCHIVE_BYTES
    from splice_build.spec.pack import collect_package

    if target.is_dir():
        return collect_package(target, command="validate"), "directory"
    if not target.is_file():
        raise SpecError(
            ErrorCode.INVALID_PACKAGE, f"No package directory or archive at {target}", hint=_TAKES
        )
    with target.open("rb") as handle:
        data = handle.read(MAX_ARCHIVE_BYTES + 1)
    try:
        return read_archive(data), "archive"
    except SpecError as exc:  # any other file ("Bundle is not valid UTF-8 JSON" said only that)
        exc.hint = exc.hint or _TAKES
        raise


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    from splice_build.security.addresses import grants_connection
    from splice_build.security.terminal import require_visible_paths, require_visible_text
    from splice_build.spec.package import validate_package_files

    target = ctx.cwd / args.target
    files, kind = _load_files(target)
    manifest = validate_package_files(
        files, directory=str(target) if kind == "directory" else None, command="validate"
    )
    require_visible_text(manifest)
    require_visible_paths(files)
    tools = [f"{manifest.name}.{tool.name}" for tool in manifest.tools]
    data = {
        "valid": True,
        "kind": kind,
        "name": manifest.id,
        "version": manifest.version,
        "files": len(files),
        "tools": tools,
        "permissions": manifest.permissions.describe(grants=grants_connection),
    }
    text = (
        f"{manifest.id}@{manifest.version} is valid ({kind}, {len(files)} files)\n"
        f"tools: {', '.join(tools) or '(none)'}\n"
        + "\n".join(
            f"permission: {line}"
            for line in manifest.permissions.describe(grants=grants_connection)
        )
    )
    ctx.out.result(data, text)
    return 0
