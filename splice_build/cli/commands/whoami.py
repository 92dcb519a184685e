"""`splice whoami`: the user, namespaces and token scope behind the configured token."""

from __future__ import annotations

import argparse
from typing import Any

from splice_build.cli.context import CommandContext

NAME = "whoami"
HELP = "show who the registry token belongs to"
NEEDS_PROJECT = False


def add_arguments(parser: argparse.ArgumentParser) -> None:
    del parser  # no options of its own


def _scope(token: dict[str, Any] | None) -> str:
    if token is None:
        return "token: none (local store, acting as the local user)"
    namespaces = token.get("namespaces")
    where = ", ".join(f"@{ns}" for ns in namespaces) if namespaces else "all your namespaces"
    kind = "managing" if token.get("canManage") else "publish-only"
    line = f"token: {token.get('label')} ({kind}, scope: {where})"
    if token.get("expiresAt"):
        line += f", expires {token['expiresAt']}"
    return line


def _text(data: dict[str, Any]) -> str:
    lines = [
        f"{data['user']} on {data['registry']}",
        f"owns: {', '.join('@' + ns for ns in data.get('owns', [])) or '-'}",
        f"maintains: {', '.join('@' + ns for ns in data.get('maintains', [])) or '-'}",
        _scope(data.get("token")),
    ]
    return "\n".join(lines)


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    from splice_build.project.home import SpliceHome
    from splice_build.registry.client.open import open_configured, require_login

    opened = open_configured(
        flag=ctx.registry, env=ctx.env, cwd=ctx.cwd, home=SpliceHome.from_env(ctx.env)
    )
    require_login(opened)
    try:
        who = opened.client.whoami()
    finally:
        opened.client.close()
    # The registry Splice asked, whatever the answer says (a "registry" field of its own
    # would name another one).
    data = {**who, "registry": opened.url, "tokenSource": opened.token_source}
    ctx.out.result(data, _text)
    return 0
