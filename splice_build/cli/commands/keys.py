"""`splice keys generate [name] | list [@ns] | register @ns | revoke @ns <keyId>`.

``generate`` writes ``SPLICE_HOME/keys/<name>.key`` (never overwriting one: ``KEY_EXISTS``);
``list`` shows the local keys, or with ``@ns`` the keys a registry has for a namespace;
``register`` adds a local key's public half to a namespace you own (``--key``, default
``default``); ``revoke`` marks a namespace key revoked, after which its signatures are ignored.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from splice_build.cli.context import CommandContext
from splice_build.errors import UsageError

if TYPE_CHECKING:
    from splice_build.registry.client.open import Opened

NAME = "keys"
HELP = "generate, list, register or revoke publisher signing keys"
NEEDS_PROJECT = False
# action -> (least, most) positional arguments after it
ARITY = {"generate": (0, 1), "list": (0, 1), "register": (1, 1), "revoke": (2, 2)}
USAGE = {
    "generate": "keys generate [name]",
    "list": "keys list [@namespace]",
    "register": "keys register @namespace [--key name]",
    "revoke": "keys revoke @namespace <keyId>",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # One flat parser (no nested sub-parsers) so the global options work after any word.
    parser.add_argument("action", choices=tuple(ARITY), help="what to do with keys")
    parser.add_argument("words", nargs="*", metavar="arg", help="name, @namespace or key id")
    parser.add_argument("--key", metavar="NAME", help="register: the local key (default: default)")


def _check(args: argparse.Namespace) -> None:
    least, most = ARITY[args.action]
    if not least <= len(args.words) <= most:
        raise UsageError(f"usage: splice {USAGE[args.action]}")
    if args.key is not None and args.action != "register":
        raise UsageError("--key is an option of `keys register`")


def _namespace(text: str) -> str:
    from splice_build.errors import ErrorCode, SpecError
    from splice_build.spec.names import is_valid_name

    name = text.removeprefix("@")
    if not is_valid_name(name):
        raise SpecError(ErrorCode.INVALID_NAME, f"Invalid namespace {text!r}")
    return name


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
        f"Generated key {key.name} ({key.key_id})\npublic key: {key.public_key}\n"
        f"next: splice keys register @<namespace>"
        + ("" if name == DEFAULT_KEY_NAME else f" --key {name}"),
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
        ctx.out.result(response, lambda: _registry_text(response))
        return
    from splice_build.project.home import SpliceHome
    from splice_build.project.keys import list_keys

    home = SpliceHome.from_env(ctx.env)
    keys = [{"name": k.name, "keyId": k.key_id, "path": str(k.path)} for k in list_keys(home)]
    ctx.out.result({"keys": keys}, lambda: _local_text(keys))


def _register(args: argparse.Namespace, ctx: CommandContext) -> None:
    from splice_build.project.home import SpliceHome
    from splice_build.project.keys import DEFAULT_KEY_NAME, load_key

    namespace = _namespace(args.words[0])
    key = load_key(SpliceHome.from_env(ctx.env), args.key or DEFAULT_KEY_NAME)
    opened = _open(ctx, login=True)
    try:
        info = opened.client.add_key(namespace, key.public_key)
    finally:
        opened.client.close()
    ctx.out.result(
        info, f"Registered {info['keyId']} ({key.name}) for @{namespace} on {opened.url}"
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


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    _check(args)
    {"generate": _generate, "list": _list, "register": _register, "revoke": _revoke}[args.action](
        args, ctx
    )
    return 0
