"""`splice publish [dir] [--dry-run] [--sign [--key name]]`: validate, pack and upload a package.

The registry's answer must name the integrity computed locally; anything else means the
bytes changed on the way and is reported as ``INTEGRITY_MISMATCH``. With ``--sign`` the key
is loaded before anything is uploaded, and the *local* integrity is signed once the registry
has confirmed it.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from splice_build.cli import arg_types
from splice_build.cli.context import CommandContext
from splice_build.errors import UsageError

if TYPE_CHECKING:
    from pathlib import Path

    from splice_build.project.home import SpliceHome
    from splice_build.project.keys import SigningKey
    from splice_build.registry.client.open import Opened

NAME = "publish"
HELP = "publish a package directory to the registry"
NEEDS_PROJECT = False


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "dir", nargs="?", default=".", type=arg_types.path, help="package directory (default: .)"
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="validate and pack only; upload nothing"
    )
    parser.add_argument("--sign", action="store_true", help="sign the published version")
    parser.add_argument("--key", metavar="NAME", help="--sign: the local key (default: default)")


# Where a publish with no registry named lands is this machine's alone: a user who followed
# docs/publishing.md (login, then publish) read "to embedded:" as their registry.
_EMBEDDED_NOTE = (
    " (this machine's own registry: `splice publish --registry URL` publishes to a served one)"
)


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    from splice_build.errors import ErrorCode, RegistryError
    from splice_build.project.home import SpliceHome
    from splice_build.registry.client.open import (
        configured_registry,
        open_configured,
        require_login,
    )
    from splice_build.security.terminal import require_visible_paths, require_visible_text
    from splice_build.spec.pack import pack_directory

    if args.key is not None and not args.sign:
        raise UsageError("--key is used with --sign")
    home = SpliceHome.from_env(ctx.env)
    key = _load_key(home, args.key) if args.sign else None
    directory = ctx.cwd / args.dir
    packed = pack_directory(directory, command="publish")
    manifest = packed.manifest
    require_visible_text(manifest)
    require_visible_paths(packed.files)
    ident = f"{manifest.id}@{manifest.version}"
    _refuse_secrets(packed.files, ident, directory, ctx)
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
    from splice_build.project.registry_url import EMBEDDED_REGISTRY

    whose = _EMBEDDED_NOTE if opened.url == EMBEDDED_REGISTRY else ""
    text = f"Published {ident} to {opened.url}{whose}\n{summary}"
    try:
        if key is not None:
            _require_registered(opened, key, manifest.namespace)
        answer = opened.client.publish(packed.archive)
        if answer.get("integrity") != packed.integrity:
            raise RegistryError(
                ErrorCode.INTEGRITY_MISMATCH,
                f"The registry recorded different bytes for {ident}",
                details=[f"local: {packed.integrity}", f"registry: {answer.get('integrity')}"],
            )
        if key is not None:
            ctx.out.progress(f"Signing {ident} with {key.key_id}...")
            data["signedBy"] = _sign(
                opened, key, manifest.id, str(manifest.version), packed.integrity
            )
            text += f"\nsigned by {key.key_id}"
    finally:
        opened.client.close()
    ctx.out.result({**data, "registry": opened.url}, text)
    return 0


MAX_SHOWN_FINDINGS = 20


def _refuse_secrets(
    files: dict[str, bytes], ident: str, directory: Path, ctx: CommandContext
) -> None:
    """Refuse to publish a package that holds a credential (docs/publishing.md#secrets).

    A published version is immutable and public: a private key or token in it is leaked for
    good. The walk skips only names starting with ``.`` and ``node_modules``; a key file
    without a dot, or one a ``.gitignore`` keeps out of git, is packed like any other. The
    scan is ``splice secret-scan``'s (``security/secret_scan.py``): the known key formats and
    the configured provider key values (the environment, ``SPLICE_HOME/.env`` and the nearest
    ``.env`` of the package directory)."""
    from splice_build.broker.keys import load_keys
    from splice_build.errors import ErrorCode, SpecError
    from splice_build.security.secret_scan import scan_files

    keys = load_keys(env=ctx.env, project_root=directory, home=ctx.home)
    findings = scan_files(files, keys.named_values()).findings
    if not findings:
        return
    shown = [str(finding) for finding in findings[:MAX_SHOWN_FINDINGS]]
    more = len(findings) - len(shown)
    raise SpecError(
        ErrorCode.INVALID_PACKAGE,
        f"{ident} holds what looks like a secret; nothing was uploaded",
        details=[*shown, *([f"and {more} more"] if more > 0 else [])],
        hint="Move the file out of the package directory (only names starting with '.' and "
        "node_modules are left out; .gitignore is not read), or mark a sample line "
        "`secret-scan: allow`.",
    )


def _load_key(home: SpliceHome, name: str | None) -> SigningKey:
    from splice_build.project.keys import DEFAULT_KEY_NAME, load_key

    return load_key(home, name or DEFAULT_KEY_NAME)


def _require_registered(opened: Opened, key: SigningKey, namespace: str) -> None:
    """Before uploading: a version published with an unusable key would stay unsigned."""
    from splice_build.errors import ErrorCode, RegistryError

    try:
        keys = opened.client.keys(namespace).get("keys") or []
    except RegistryError as exc:
        if exc.code is not ErrorCode.PACKAGE_NOT_FOUND:  # 404: the namespace does not exist yet
            raise
        keys = []
    active = {k.get("keyId") for k in keys if isinstance(k, dict) and not k.get("revokedAt")}
    if key.key_id not in active:
        raise RegistryError(
            ErrorCode.KEY_NOT_REGISTERED,
            f"Key {key.name} ({key.key_id}) is not an active key of @{namespace} on {opened.url}",
            hint=f"Register it first (`splice keys register @{namespace} --key {key.name}`); "
            "a namespace is created by its first publish, so publish unsigned once, then "
            "register and `splice sign` that version.",
        )


def _sign(opened: Opened, key: SigningKey, package_id: str, version: str, integrity: str) -> str:
    """Sign the published version; a failure here leaves it published but unsigned."""
    from splice_build.errors import SpliceError
    from splice_build.registry.client.signing import upload_signature

    try:
        upload_signature(opened.client, key, package_id, version, integrity)
    except SpliceError as exc:
        exc.hint = (
            f"{package_id}@{version} is published but unsigned; fix the cause and run "
            f"`splice sign {package_id}@{version} --key {key.name}`."
        )
        raise
    return key.key_id
