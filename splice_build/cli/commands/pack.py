"""`splice pack [dir] [--out FILE]`: the deterministic artifact of a package directory."""

from __future__ import annotations

import argparse
from pathlib import Path

from splice_build.cli import arg_types
from splice_build.cli.context import CommandContext

NAME = "pack"
HELP = "pack a package directory into its deterministic .tar.gz"
NEEDS_PROJECT = False


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "dir", nargs="?", default=".", type=arg_types.path, help="package directory (default: .)"
    )
    parser.add_argument(
        "--out",
        metavar="FILE",
        type=arg_types.path,
        help="output file (default: <ns>-<name>-<version>.tar.gz)",
    )


def _out_path(cwd: Path, text: str) -> Path:
    """Where the archive goes: a file (replaced atomically) in an existing directory."""
    from splice_build.errors import UsageError

    path = Path(text)
    path = path if path.is_absolute() else cwd / path
    if path.is_dir():
        raise UsageError(f"--out {path} is a directory", hint="name the archive file to write")
    if not path.parent.is_dir():
        raise UsageError(f"--out {path}: the directory {path.parent} does not exist")
    return path


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    from splice_build.project.atomic import atomic_write_bytes
    from splice_build.spec.pack import pack_directory

    chosen = _out_path(ctx.cwd, args.out) if args.out else None
    result = pack_directory(ctx.cwd / args.dir)
    manifest = result.manifest
    default_name = f"{manifest.namespace}-{manifest.name}-{manifest.version}.tar.gz"
    out_path = chosen or _out_path(ctx.cwd, default_name)
    atomic_write_bytes(out_path, result.archive)
    data = {
        "name": manifest.id,
        "version": manifest.version,
        "files": len(result.files),
        "size": result.size,
        "integrity": result.integrity,
        "path": str(out_path),
    }
    # Rendered from the one-line copy (cli/output.py): the path names the checkout's own
    # directories, and a line break in one of them would draw a line of its own.
    ctx.out.result(
        data,
        lambda shown: (
            f"Packed {shown['name']}@{shown['version']} → {shown['path']}\n"
            f"{shown['files']} files, {shown['size']} bytes, {shown['integrity']}"
        ),
    )
    return 0
