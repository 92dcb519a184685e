"""`splice pack [dir] [--out FILE]`: the deterministic artifact of a package directory.

The archive is never written where the next pack would pick it up: by default it goes to
the current directory, or, when that is inside the package (``splice pack`` run in the
package), next to the package directory; an ``--out`` inside the package is ``USAGE``. An
archive already there from an earlier pack is refused by the walk itself (``spec/pack.py``).
"""

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
        help="output file outside the package (default: <ns>-<name>-<version>.tar.gz here, "
        "or next to the package directory when here is inside it)",
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


def _packed_with(path: Path, package: Path) -> bool:
    """Whether the pack walk of ``package`` would read a file at ``path`` (it skips only
    names starting with ``.`` and ``node_modules``, spec/pack.py)."""
    try:
        inside = path.resolve().relative_to(package.resolve())
    except ValueError:
        return False
    return not any(part.startswith(".") or part == "node_modules" for part in inside.parts)


def _outside(path: Path, package: Path) -> Path:
    from splice_build.errors import UsageError

    if _packed_with(path, package):
        raise UsageError(
            f"--out {path} is inside the package directory {package}: the next pack would "
            "include it",
            hint="write the archive outside the package directory",
        )
    return path


def _default_out(cwd: Path, package: Path, name: str) -> Path:
    """``name`` in the current directory, or next to the package when that is inside it."""
    here = _out_path(cwd, name)
    if not _packed_with(here, package):
        return here
    return _outside(_out_path(package.resolve().parent, name), package)


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    from splice_build.project.atomic import atomic_write_bytes
    from splice_build.spec.pack import pack_directory

    package = ctx.cwd / args.dir
    chosen = _outside(_out_path(ctx.cwd, args.out), package) if args.out else None
    result = pack_directory(package)
    manifest = result.manifest
    default_name = f"{manifest.namespace}-{manifest.name}-{manifest.version}.tar.gz"
    out_path = chosen or _default_out(ctx.cwd, package, default_name)
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
