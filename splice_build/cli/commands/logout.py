"""`splice logout`: forget the token saved for the current registry."""

from __future__ import annotations

import argparse

from splice_build.cli.context import CommandContext

NAME = "logout"
HELP = "forget the saved token for the registry"
NEEDS_PROJECT = False


def add_arguments(parser: argparse.ArgumentParser) -> None:
    del parser  # no options of its own


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    from splice_build.project.home import SpliceHome
    from splice_build.registry.client.open import configured_registry

    home = SpliceHome.from_env(ctx.env)
    url = configured_registry(flag=ctx.registry, env=ctx.env, cwd=ctx.cwd, home=home).url
    removed = home.remove_credential(url)
    text = f"Logged out of {url}" if removed else f"Not logged in to {url}"
    ctx.out.result({"registry": url, "loggedOut": removed}, text)
    return 0
