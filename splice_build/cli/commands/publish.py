"""`splice publish [dir] [--dry-run]`: validate, pack and upload a package.

The registry's answer must name the integrity computed locally; anything else means the
bytes changed on the way and is reported as ``INTEGRITY_MISMATCH``.
"""

from __future__ import annotations

import argparse
from typing import Any

from splice_build.cli.context import CommandContext

NAME = "publish"
HELP = "publish a package directory to the registry"
NEEDS_PROJECT = False


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dir", nargs="?", default=".", help="package directory (default: .)")
    parser.add_argument(
        "--dry-run", action="store_true", help="validate and pack only; upload nothing"
    )


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    from splice_build.errors import ErrorCode, RegistryError
    from splice_build.project.home import SpliceHome
    from splice_build.registry.client.open import (
        configured_registry,
        open_configured,
        require_login,
    )
    from splice_build.spec.pack import pack_directory

    home = SpliceHome.from_env(ctx.env)
    packed = pack_directory(ctx.cwd / args.dir)
    manifest = packed.manifest
    ident = f"{manifest.id}@{manifest.version}"
    summary = f"{len(packed.files)} files, {packed.size} bytes, {packed.integrity}"
    data: dict[str, Any] = {
        "signedBy": None,
        "name": manifest.id,
        "version": str(manifest.version),
        "integrity": packed.integrity,
        "size": packed.size,
        "files": len(packed.files),
        "dryRun": bool(args.dry_run),
    }
    if args.dry_run:
        url = configured_registry(flag=ctx.registry, env=ctx.env, cwd=ctx.cwd, home=home).url
        ctx.out.result({**data, "registry": url}, f"Dry run: {ident} is valid ({summary})")
        return 0
    opened = open_configured(flag=ctx.registry, env=ctx.env, cwd=ctx.cwd, home=home)
    require_login(opened)
    ctx.out.progress(f"Publishing {ident} to {opened.url}...")
    try:
        answer = opened.client.publish(packed.archive)
    finally:
        opened.client.close()
    if answer.get("integrity") != packed.integrity:
        raise RegistryError(
            ErrorCode.INTEGRITY_MISMATCH,
            f"The registry recorded different bytes for {ident}",
            details=[f"local: {packed.integrity}", f"registry: {answer.get('integrity')}"],
        )
    ctx.out.result(
        {**data, "registry": opened.url}, f"Published {ident} to {opened.url}\n{summary}"
    )
    return 0
