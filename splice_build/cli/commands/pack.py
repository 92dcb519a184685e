"""`splice pack [dir] [--out FILE]`: the deterministic artifact of a package directory."""

from __future__ import annotations

import argparse
from pathlib import Path

from splice_build.cli.context import CommandContext

NAME = "pack"
HELP = "pack a package directory into its deterministic .tar.gz"
NEEDS_PROJECT = False


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dir", nargs="?", default=".", help="package directory (default: .)")
    parser.add_argument(
        "--out", metavar="FILE", help="output file (default: <ns>-<name>-<version>.tar.gz)"
    )


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    from splice_build.project.atomic import atomic_write_bytes
    from splice_build.spec.pack import pack_directory

    result = pack_directory(ctx.cwd / args.dir)
    manifest = result.manifest
    default_name = f"{manifest.namespace}-{manifest.name}-{manifest.version}.tar.gz"
    out_path = Path(args.out) if args.out else ctx.cwd / default_name
    if not out_path.is_absolute():
        out_path = ctx.cwd / out_path
    atomic_write_bytes(out_path, result.archive)
    data = {
        "name": manifest.id,
        "version": manifest.version,
        "files": len(result.files),
        "size": result.size,
        "integrity": result.integrity,
        "path": str(out_path),
    }
    text = (
        f"Packed {manifest.id}@{manifest.version} → {out_path}\n"
        f"{len(result.files)} files, {result.size} bytes, {result.integrity}"
    )
    ctx.out.result(data, text)
    return 0
