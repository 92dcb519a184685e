"""`splice sign <@ns/name@version> [--key name] [--dir path]`: sign a published version.

A signature vouches for bytes, so the command signs only bytes the signer built: the package
directory (``--dir``, default the current directory, as for ``pack`` and ``publish``) is
packed; it must be that package and version, and its integrity must equal the registry's, or
nothing is signed (the local source and the published artifact differ).

There is no way to sign what the registry serves without that comparison. A download can
only be checked against the registry's own metadata, which says nothing about who built it:
a version published with a leaked publish-only token (or by a maintainer, or served by a
compromised registry) passes those checks, and signing it would turn it into a release the
owner vouches for, which signer pinning then installs (docs/signing.md).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from splice_build.cli import arg_types
from splice_build.cli.context import CommandContext
from splice_build.errors import ErrorCode, InstallError, UsageError

NAME = "sign"
HELP = "sign a published package version with your key"
NEEDS_PROJECT = False


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("package", metavar="@ns/name@version", help="an exact published version")
    parser.add_argument("--key", metavar="NAME", help="the local key (default: default)")
    parser.add_argument(
        "--dir",
        metavar="PATH",
        type=arg_types.path,
        default=".",
        help="the package source whose packed bytes must be the published ones (default: .)",
    )


def _exact(text: str) -> tuple[str, str]:
    from splice_build.spec.names import PackageRef

    ref = PackageRef.parse(text)
    if not ref.range.is_exact:
        raise UsageError(f"sign needs an exact version, e.g. {ref.package.id}@1.0.0")
    return ref.package.id, str(ref.range)


def _refuse(subject: str, message: str, details: list[str]) -> InstallError:
    return InstallError(
        ErrorCode.INTEGRITY_MISMATCH,
        f"Refusing to sign {subject}: {message}",
        details=details,
        hint="Sign only bytes you built: check out the released source and try again.",
    )


def _local_integrity(directory: Path, package_id: str, version: str, registry: str) -> str:
    """The integrity of the packed source, which must be that version on the registry."""
    from splice_build.spec.pack import pack_directory

    subject = f"{package_id}@{version}"
    if not (directory / "manifest.json").is_file():
        raise UsageError(
            f"{directory} is not a package directory: sign compares {subject} with its source",
            hint="Run `splice sign` in the package's source directory or pass --dir PATH: "
            "only bytes you built are signed (docs/signing.md).",
        )
    packed = pack_directory(directory)
    found = f"{packed.manifest.id}@{packed.manifest.version}"
    if found != subject:
        raise _refuse(subject, f"{directory} contains {found}", [f"directory: {directory}"])
    if packed.integrity != registry:
        raise _refuse(
            subject,
            "the local source differs from the published artifact",
            [f"local: {packed.integrity}", f"registry: {registry}"],
        )
    return packed.integrity


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    from splice_build.project.home import SpliceHome
    from splice_build.project.keys import DEFAULT_KEY_NAME, load_key
    from splice_build.registry.client.open import open_configured, require_login
    from splice_build.registry.client.signing import upload_signature

    package_id, version = _exact(args.package)
    home = SpliceHome.from_env(ctx.env)
    key = load_key(home, args.key or DEFAULT_KEY_NAME)
    opened = open_configured(flag=ctx.registry, env=ctx.env, cwd=ctx.cwd, home=home)
    require_login(opened)
    client = opened.client
    try:
        meta = client.version(package_id, version)
        registry_integrity = str(meta.get("integrity"))
        ctx.out.progress(f"Packing {args.dir}...")
        integrity = _local_integrity(ctx.cwd / args.dir, package_id, version, registry_integrity)
        signature = upload_signature(client, key, package_id, version, integrity)
    finally:
        client.close()
    # What was signed is Splice's own word; the registry's answer adds its fields around it.
    data = {**signature, "name": package_id, "version": version, "integrity": integrity}
    ctx.out.result(data, f"Signed {package_id}@{version} ({integrity}) with {key.key_id}")
    return 0
