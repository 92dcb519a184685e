"""`splice namespace info | add-maintainer | remove-maintainer <ns> [user]`.

``info`` is an anonymous read; managing maintainers needs the namespace owner's managing
token (the registry answers 403 otherwise). Every action prints the namespace afterwards:
owner, maintainers, whether it is reserved, and its packages (``--json``: the registry's
NamespaceResponse).
"""

from __future__ import annotations

import argparse
from typing import Any

from splice_build.cli import arg_types
from splice_build.cli.context import CommandContext
from splice_build.errors import UsageError

NAME = "namespace"
HELP = "show a namespace, or add and remove its maintainers"
NEEDS_PROJECT = False
ACTIONS = ("info", "add-maintainer", "remove-maintainer")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # One flat parser (no nested sub-parsers) so the global options work after any word.
    parser.add_argument("action", choices=ACTIONS, help="what to do")
    parser.add_argument("namespace", type=arg_types.namespace, help="the namespace (acme or @acme)")
    parser.add_argument(
        "user", nargs="?", type=arg_types.user_name, help="add-/remove-maintainer: the user"
    )


def _check(args: argparse.Namespace) -> None:
    if (args.action == "info") == (args.user is not None):
        raise UsageError(
            "`namespace info` takes a namespace only; add-/remove-maintainer take a namespace and a user"
        )


def _listed(names: list[str], prefix: str = "") -> str:
    return ", ".join(prefix + name for name in names) or "-"


def _text(data: dict[str, Any]) -> str:
    lines = [
        f"@{data['namespace']}",
        f"owner: {data.get('owner') or '(none)'}",
        f"maintainers: {_listed(data.get('maintainers', []))}",
        f"reserved: {'yes' if data.get('reserved') else 'no'}",
        f"packages: {_listed(data.get('packages', []))}",
    ]
    return "\n".join(lines)


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    from splice_build.project.home import SpliceHome
    from splice_build.registry.client.open import open_configured, require_login

    _check(args)
    namespace = args.namespace.removeprefix("@")
    opened = open_configured(
        flag=ctx.registry, env=ctx.env, cwd=ctx.cwd, home=SpliceHome.from_env(ctx.env)
    )
    if args.action != "info":
        require_login(opened)
    client = opened.client
    try:
        if args.action == "info":
            data = client.namespace(namespace)
        else:
            add = args.action == "add-maintainer"
            data = client.set_maintainer(namespace, args.user, add=add)
            done = "Added" if add else "Removed"
            role = "to the maintainers of" if add else "from the maintainers of"
            ctx.out.info(f"{done} {args.user} {role} @{namespace}")
    finally:
        client.close()
    ctx.out.result(data, _text)
    return 0
