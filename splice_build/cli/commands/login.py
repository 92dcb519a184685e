"""`splice login [--token T]`: check a registry token with /auth/whoami, then save it (0600).

The token comes from ``--token`` (with a warning: it lands in shell history), else a hidden
prompt on a terminal, else the first line of standard input (``echo $T | splice login``).
It is never printed.
"""

from __future__ import annotations

import argparse
import sys

from splice_build.cli.context import CommandContext
from splice_build.errors import UsageError

NAME = "login"
HELP = "save a registry token after checking it"
NEEDS_PROJECT = False


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--token", help="the token (prefer the prompt or stdin: flags stay in shell history)"
    )


def _read_token(args: argparse.Namespace, ctx: CommandContext) -> str:
    if args.token is not None:
        ctx.out.warn("--token leaves the token in your shell history; prefer the prompt or stdin")
        return str(args.token)
    if ctx.interactive:
        import getpass

        return getpass.getpass("Registry token: ")
    return sys.stdin.readline().strip("\r\n")


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    from splice_build.project.home import SpliceHome
    from splice_build.registry.client.open import configured_registry, open_registry

    token = _read_token(args, ctx)
    if not token.strip() or any(ch.isspace() for ch in token):
        raise UsageError("The token must be non-empty and contain no white space")
    home = SpliceHome.from_env(ctx.env)
    url = configured_registry(flag=ctx.registry, env=ctx.env, cwd=ctx.cwd, home=home).url
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
