"""`splice token list | create | revoke <id>`: manage your registry tokens.

``create`` prints the new token once, alone on stdout (scope details go to stderr), so
``T=$(splice token create --namespace acme)`` captures exactly the token.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from splice_build.cli import arg_types
from splice_build.cli.context import CommandContext
from splice_build.errors import UsageError

NAME = "token"
HELP = "list, create or revoke registry tokens"
NEEDS_PROJECT = False
ACTIONS = ("list", "create", "revoke")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # One flat parser (no nested sub-parsers) so the global options work after any word.
    parser.add_argument(
        "action", choices=ACTIONS, help="list your tokens, create one, or revoke one"
    )
    parser.add_argument("id", nargs="?", help="the token id to revoke (tok_…)")
    add_token_options(parser, applies="create: ")


def add_token_options(parser: argparse._ActionsContainer, *, applies: str = "") -> None:
    """``--label``, ``--namespace`` and ``--expires`` of a new token (``token create``,
    ``registry admin create-token``); ``applies``: what each help starts with."""
    parser.add_argument("--label", help=f"{applies}a name to recognise it by (default: default)")
    parser.add_argument(
        "--namespace",
        action="append",
        default=None,
        type=arg_types.namespace,
        metavar="NS",
        help=f"{applies}limit to a namespace (repeatable)",
    )
    parser.add_argument(
        "--expires",
        type=arg_types.days,
        metavar="N[d]",
        help=f"{applies}expire after N days (1..365)",
    )


def _check(args: argparse.Namespace) -> None:
    if (args.action == "revoke") != (args.id is not None):
        raise UsageError("only `token revoke <id>` takes an id, and it needs one")
    creating_options = args.label is not None or args.namespace or args.expires is not None
    if creating_options and args.action != "create":
        raise UsageError("--label, --namespace and --expires are options of `token create`")


def _list_text(tokens: list[dict[str, Any]]) -> str:
    if not tokens:
        return "No tokens."
    now = datetime.now(UTC)
    lines = []
    for t in tokens:
        state = _state(t, now)
        scope = ", ".join(f"@{ns}" for ns in t["namespaces"]) if t.get("namespaces") else "all"
        kind = "managing" if t.get("canManage") else "publish-only"
        current = " (current)" if t.get("current") else ""
        lines.append(f"{t['id']}  {t['label']}  {kind}  scope: {scope}  {state}{current}")
    return "\n".join(lines)


def _state(token: Mapping[str, Any], now: datetime) -> str:
    """``revoked``, ``expired`` or ``active``, with the expiry a token has: the list said
    ``active`` of a token past its ``expiresAt``, which the registry refuses (401). An expiry
    that is no time is shown as the registry gave it, never called active."""
    if token.get("revokedAt"):
        return "revoked"
    expires = token.get("expiresAt")
    if not expires:
        return "active"
    try:
        when = datetime.fromisoformat(str(expires))
    except ValueError:
        return f"expires {expires}"
    if when.tzinfo is None:  # the registry writes UTC (registry/service/clock.py)
        when = when.replace(tzinfo=UTC)
    return f"expired {expires}" if when <= now else f"active, expires {expires}"


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    from splice_build.project.home import SpliceHome
    from splice_build.registry.client.open import open_configured, require_login

    _check(args)
    opened = open_configured(
        flag=ctx.registry, env=ctx.env, cwd=ctx.cwd, home=SpliceHome.from_env(ctx.env)
    )
    require_login(opened)
    client = opened.client
    try:
        if args.action == "list":
            response = client.tokens()
            ctx.out.result(response, lambda shown: _list_text(shown.get("tokens", [])))
        elif args.action == "create":
            namespaces = [ns.removeprefix("@") for ns in args.namespace] if args.namespace else None
            created = client.create_token(
                label=args.label, namespaces=namespaces, expires_in_days=args.expires
            )
            scope = scope_text(created.get("namespaces"))
            ctx.out.info(
                f"Created publish-only token {created['id']} for {created['user']} (scope: {scope}); "
                "it is shown once, store it now"
            )
            # The answer is checked (visible ASCII, no space: registry/client/answers.py), and
            # the text is rendered from its one-line copy all the same.
            ctx.out.result(created, lambda shown: str(shown["token"]))
        else:
            response = client.revoke_token(args.id)
            ctx.out.result(response, f"Revoked token {args.id}")
    finally:
        client.close()
    return 0


def scope_text(namespaces: object) -> str:
    """What a new token may publish to, as its creation says it: ``@acme, @tools`` for the
    namespaces of its ``namespaces`` field, ``all`` when it has none (any the user may
    publish to). ``registry admin create-token`` says it the same way."""
    if isinstance(namespaces, list) and namespaces:
        return ", ".join(f"@{ns}" for ns in namespaces)
    return "all"
