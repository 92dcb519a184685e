"""`splice search <query…> [--limit n]`: find packages in the registry."""

from __future__ import annotations

import argparse
from typing import Any

from splice_build.cli import arg_types
from splice_build.cli.context import CommandContext
from splice_build.errors import UsageError

NAME = "search"
HELP = "search the registry for packages"
NEEDS_PROJECT = False


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("query", nargs="+", help="words to look for in names and descriptions")
    parser.add_argument(
        "--limit",
        type=arg_types.numeric("--limit", 1, 100),
        default=20,
        metavar="N",
        help="at most N results (1..100; default 20)",
    )


def _text(query: str, response: dict[str, Any]) -> str:
    results = response.get("results", [])
    if not results:
        return f'No packages found for "{query}".'
    blocks = [
        f"{r['name']}\n  {r.get('description', '')}\n  latest: {r.get('latest')}" for r in results
    ]
    return "\n\n".join(blocks)


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    from splice_build.project.home import SpliceHome
    from splice_build.registry.client.open import open_configured

    query = " ".join(args.query).strip()
    if not query:
        raise UsageError("search needs a query")
    opened = open_configured(
        flag=ctx.registry, env=ctx.env, cwd=ctx.cwd, home=SpliceHome.from_env(ctx.env)
    )
    try:
        response = opened.client.search(query, limit=args.limit)
    finally:
        opened.client.close()
    ctx.out.result(response, lambda shown: _text(query, shown))
    return 0
