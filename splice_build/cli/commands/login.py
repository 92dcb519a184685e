"""`splice login [--token T]`: check a registry token with /auth/whoami, then save it (0600).

The token comes from ``--token`` (with a warning: it lands in shell history), else a hidden
prompt on a terminal that names the registry, else the first line of standard input
(``echo $T | splice login``). It is never printed.

The registry must be one the user chose (``--registry``, ``SPLICE_REGISTRY``, the user
config), as for ``SPLICE_TOKEN`` (docs/registry.md#where-a-token-goes): in someone else's
checkout, a ``splice.json`` naming its own server would otherwise receive the token typed
or piped in for the user's real registry. Such a login is ``USAGE`` before any token is read.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from splice_build.cli.context import CommandContext
from splice_build.errors import UsageError

if TYPE_CHECKING:
    from splice_build.project.home import SpliceHome

NAME = "login"
HELP = "save a registry token after checking it"
NEEDS_PROJECT = False


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--token", help="the token (prefer the prompt or stdin: flags stay in shell history)"
    )


def _read_token(args: argparse.Namespace, ctx: CommandContext, url: str) -> str:
    if args.token is not None:
        ctx.out.warn("--token leaves the token in your shell history; prefer the prompt or stdin")
        return str(args.token)
    if ctx.interactive:
        import getpass

        from splice_build.security.terminal import one_line

        return getpass.getpass(f"Registry token for {one_line(url)}: ")
    return sys.stdin.readline().strip("\r\n")


def _require_chosen(source: str, url: str, ctx: CommandContext, home: SpliceHome) -> None:
    """Refuse a registry that only the project's ``splice.json`` names."""
    from splice_build.registry.client.open import users_choice

    if source != "project" or users_choice(url, flag=ctx.registry, env=ctx.env, home=home):
        return
    raise UsageError(
        f"splice login sends your token only to a registry you name; {url} is named only by "
        "this project's splice.json",
        hint=f"If it is yours, run `splice login --registry {url}` "
        "(docs/registry.md#where-a-token-goes).",
    )


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    from splice_build.project.home import SpliceHome
    from splice_build.registry.client.open import configured_registry, open_registry

    home = SpliceHome.from_env(ctx.env)
    setting = configured_registry(flag=ctx.registry, env=ctx.env, cwd=ctx.cwd, home=home)
    url = setting.url
    _require_chosen(setting.source, url, ctx, home)
    token = _read_token(args, ctx, url)
    if not token.strip() or any(ch.isspace() for ch in token):
        raise UsageError("The token must be non-empty and contain no white space")
    client = open_registry(url, home=home, token=token, env={})
    try:
        who = client.whoami()
    finally:
        client.close()
    home.save_credential(url, token, str(who["user"]))
    ctx.out.result(
        {"registry": url, "user": who["user"]},
        lambda shown: f"Logged in to {shown['registry']} as {shown['user']}",
    )
    return 0
