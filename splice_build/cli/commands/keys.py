"""`splice keys generate [name] | list [@ns] | register @ns | revoke @ns <keyId> | trust @ns <keyId|file>`.

``generate`` writes ``SPLICE_HOME/keys/<name>.key`` (never overwriting one: ``KEY_EXISTS``);
``list`` shows the local keys, or with ``@ns`` the keys a registry has for a namespace;
``register`` adds a local key's public half to a namespace you own (``--key``, default
``default``); ``revoke`` marks a namespace key revoked, after which its signatures are ignored;
``trust`` pins a key for a namespace out of band, in this project's ``splice.json``
(``trustedSigners``, docs/signing.md#trusted-signers): from then on every install of that
namespace's packages must be signed by a trusted key, whatever the registry lists or the lock
pins.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from splice_build.cli.context import CommandContext
from splice_build.errors import UsageError

if TYPE_CHECKING:
    from splice_build.registry.client.open import Opened

NAME = "keys"
HELP = "generate, list, register, revoke or trust publisher signing keys"
NEEDS_PROJECT = False
MAX_PUBLIC_KEY_FILE = 64 * 1024  # bytes; a PEM public key is a few hundred
# action -> (least, most) positional arguments after it
ARITY = {
    "generate": (0, 1),
    "list": (0, 1),
    "register": (1, 1),
    "revoke": (2, 2),
    "trust": (2, 2),
}
USAGE = {
    "generate": "keys generate [name]",
    "list": "keys list [@namespace]",
    "register": "keys register @namespace [--key name]",
    "revoke": "keys revoke @namespace <keyId>",
    "trust": "keys trust @namespace <keyId|public-key-file>",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # One flat parser (no nested sub-parsers) so the global options work after any word.
    parser.add_argument("action", choices=tuple(ARITY), help="what to do with keys")
    operands = "; ".join(usage.removeprefix("keys ") for usage in USAGE.values())
    parser.add_argument("words", nargs="*", metavar="arg", help=f"what each takes: {operands}")
    parser.add_argument("--key", metavar="NAME", help="register: the local key (default: default)")


def _check(args: argparse.Namespace) -> None:
    least, most = ARITY[args.action]
    if not least <= len(args.words) <= most:
        raise UsageError(f"usage: splice {USAGE[args.action]}")
    if args.key is not None and args.action != "register":
        raise UsageError("--key is an option of `keys register`")


def _namespace(text: str) -> str:
    """``acme`` of ``acme`` or ``@acme`` (``INVALID_NAME`` with the rule, as ``namespace``)."""
    from splice_build.cli.arg_types import namespace

    return namespace(text).removeprefix("@")


def _open(ctx: CommandContext, *, login: bool) -> Opened:
    from splice_build.project.home import SpliceHome
    from splice_build.registry.client.open import open_configured, require_login

    opened = open_configured(
        flag=ctx.registry, env=ctx.env, cwd=ctx.cwd, home=SpliceHome.from_env(ctx.env)
    )
    if login:
        require_login(opened)
    return opened


def _generate(args: argparse.Namespace, ctx: CommandContext) -> None:
    from splice_build.project.home import SpliceHome
    from splice_build.project.keys import DEFAULT_KEY_NAME, generate_key

    name = args.words[0] if args.words else DEFAULT_KEY_NAME
    key = generate_key(SpliceHome.from_env(ctx.env), name)
    data = {
        "name": key.name,
        "keyId": key.key_id,
        "publicKey": key.public_key,
        "path": str(key.path),
    }
    ctx.out.info(f"Keep {key.path} private and backed up; it is never overwritten.")
    ctx.out.result(
        data,
        lambda shown: (
            f"Generated key {shown['name']} ({shown['keyId']})\npublic key: {shown['publicKey']}\n"
            f"next: splice keys register @<namespace>"
            + ("" if name == DEFAULT_KEY_NAME else f" --key {name}")
        ),
    )


def _local_text(keys: list[dict[str, Any]]) -> str:
    if not keys:
        return "No signing keys. Create one with `splice keys generate`."
    return "\n".join(f"{k['name']}  {k['keyId'] or 'unreadable'}  {k['path']}" for k in keys)


def _registry_text(response: dict[str, Any]) -> str:
    keys = response.get("keys") or []
    if not keys:
        return f"@{response.get('namespace')} has no signing keys."
    lines = []
    for k in keys:
        state = f"revoked {k['revokedAt']}" if k.get("revokedAt") else "active"
        lines.append(f"{k['keyId']}  {state}  added by {k['addedBy']} {k['addedAt']}")
    return "\n".join(lines)


def _list(args: argparse.Namespace, ctx: CommandContext) -> None:
    if args.words:
        opened = _open(ctx, login=False)
        try:
            response = opened.client.keys(_namespace(args.words[0]))
        finally:
            opened.client.close()
        ctx.out.result(response, _registry_text)
        return
    from splice_build.project.home import SpliceHome
    from splice_build.project.keys import list_keys

    home = SpliceHome.from_env(ctx.env)
    keys = [{"name": k.name, "keyId": k.key_id, "path": str(k.path)} for k in list_keys(home)]
    ctx.out.result({"keys": keys}, lambda shown: _local_text(shown["keys"]))


def _register(args: argparse.Namespace, ctx: CommandContext) -> None:
    from splice_build.errors import ErrorCode, RegistryError
    from splice_build.project.home import SpliceHome
    from splice_build.project.keys import DEFAULT_KEY_NAME, load_key

    namespace = _namespace(args.words[0])
    key = load_key(SpliceHome.from_env(ctx.env), args.key or DEFAULT_KEY_NAME)
    opened = _open(ctx, login=True)
    try:
        info = opened.client.add_key(namespace, key.public_key)
    finally:
        opened.client.close()
    if info["keyId"] != key.key_id:  # the registry registered some other key, or says so
        raise RegistryError(
            ErrorCode.REGISTRY_ERROR,
            f"Registry error: the registry answered the registration of {key.key_id} "
            f"({key.name}) with another key",
            details=[f"registry: {info['keyId']}"],
            hint="The registry may be misbehaving or an impostor; check `splice keys list "
            f"@{namespace}` before signing with this key.",
        )
    ctx.out.result(
        info,
        lambda shown: f"Registered {shown['keyId']} ({key.name}) for @{namespace} on {opened.url}",
    )


def _revoke(args: argparse.Namespace, ctx: CommandContext) -> None:
    from splice_build.spec.signing import is_key_id

    namespace, key_id = _namespace(args.words[0]), args.words[1]
    if not is_key_id(key_id):
        raise UsageError(f"Invalid key id {key_id!r} (expected ed25519:<16 hex digits>)")
    opened = _open(ctx, login=True)
    try:
        info = opened.client.revoke_key(namespace, key_id)
    finally:
        opened.client.close()
    ctx.out.result(
        info, f"Revoked {key_id} of @{namespace}; its signatures are ignored from now on"
    )


def _trusted_key_id(text: str, ctx: CommandContext) -> str:
    """A key id as given, or the id of the public key in a file (base64, as `keys generate`
    prints it, or a PEM public key)."""
    from pathlib import Path

    from splice_build.errors import ErrorCode, SpecError
    from splice_build.spec.regular_file import read_regular_file
    from splice_build.spec.signing import decode_public_key, is_key_id, key_id

    if is_key_id(text):
        return text
    path = Path(ctx.cwd, text)
    try:  # a FIFO or a link to a device is refused, never waited on or read without end
        content = read_regular_file(path, limit=MAX_PUBLIC_KEY_FILE)
    except OSError as exc:
        raise UsageError(
            f"{text!r} is neither a key id (ed25519:<16 hex digits>) nor a readable file",
            details=[exc.strerror or type(exc).__name__],
        ) from exc
    try:
        if content.lstrip().startswith(b"-----BEGIN PUBLIC KEY-----"):
            return key_id(_pem_public_key(content))
        return key_id(decode_public_key(content.decode("ascii").strip()))
    except (SpecError, UnicodeDecodeError, ValueError) as exc:
        raise SpecError(
            ErrorCode.SIGNATURE_INVALID,
            f"{text} holds no Ed25519 public key (base64 of 32 bytes, or a PEM public key)",
        ) from exc


def _pem_public_key(content: bytes) -> bytes:
    """The raw Ed25519 public key of a PEM; ``ValueError`` for any other PEM, whatever
    ``cryptography`` raised for it (``project.keys.key_refusals``)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from splice_build.project.keys import key_refusals

    try:
        public = serialization.load_pem_public_key(content)
    except key_refusals() as exc:
        raise ValueError(str(exc)) from exc
    if not isinstance(public, Ed25519PublicKey):
        raise ValueError("not an Ed25519 key")
    return public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def _trust(args: argparse.Namespace, ctx: CommandContext) -> None:
    from splice_build.project.layout import ProjectLayout
    from splice_build.project.project_file import (
        find_project_root,
        load_project_file,
        save_project_file,
    )
    from splice_build.project.state_dir import state_lock
    from splice_build.security.terminal import one_line

    namespace = _namespace(args.words[0])
    trusted = _trusted_key_id(args.words[1], ctx)
    root = find_project_root(ctx.cwd)
    with state_lock(ProjectLayout(root)):
        project = load_project_file(root)
        updated = project.with_trusted(namespace, trusted)
        if updated is not project:
            save_project_file(root, updated)
    data = {
        "namespace": namespace,
        "keyId": trusted,
        "trusted": list(updated.trusted_signers[namespace]),
    }
    # The project's path is the checkout's own: one line, whatever its directories are named.
    ctx.out.result(
        data,
        f"Trusted {trusted} for @{namespace} in {one_line(str(root / 'splice.json'))}: its "
        "packages must be signed by a trusted key",
    )


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    _check(args)
    actions = {
        "generate": _generate,
        "list": _list,
        "register": _register,
        "revoke": _revoke,
        "trust": _trust,
    }
    actions[args.action](args, ctx)
    return 0
