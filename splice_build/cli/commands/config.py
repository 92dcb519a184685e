"""`splice config [list|get|set|unset] registry [value]`: the user's default registry."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from splice_build.cli.context import CommandContext
from splice_build.errors import UsageError

if TYPE_CHECKING:
    from splice_build.project.home import SpliceHome

NAME = "config"
HELP = "show or change the default registry"
NEEDS_PROJECT = False
KEYS = ("registry",)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "action",
        nargs="?",
        default="list",
        choices=("list", "get", "set", "unset"),
        help="list (the default): the home, the registry and where it comes from (with "
        "--json also every key of config.json); get, set, unset: the registry",
    )
    parser.add_argument("key", nargs="?", help="the setting (only: registry)")
    parser.add_argument("value", nargs="?", help="the new value (set only): a URL or an alias")


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    from splice_build.project.home import SpliceHome
    from splice_build.project.registry_url import ALIASES, normalize_registry_url
    from splice_build.registry.client.open import configured_registry

    home = SpliceHome.from_env(ctx.env)
    if args.action != "list" and args.key is None:
        raise UsageError(f"config {args.action} needs a key: {', '.join(KEYS)}")
    if args.action != "list" and args.key not in KEYS:
        from splice_build.spec.names import did_you_mean

        raise UsageError(
            f"unknown setting {args.key!r} (choose from {', '.join(map(repr, KEYS))})",
            hint=f"{did_you_mean(args.key, KEYS)}Run `splice config list` to see the settings.",
        )
    if args.action == "set" and args.value is None:
        raise UsageError(
            "config set registry needs a value: a URL or an alias (local, embedded)",
            hint="To go back to the default, run `splice config unset registry`.",
        )
    if args.action != "set" and args.value is not None:
        raise UsageError("only `config set registry <value>` takes a value")
    if args.action == "set":
        url = normalize_registry_url(args.value)
        home.write_config({**home.read_config(), "registry": url})
        ctx.out.result({"registry": url, "source": "user"}, f"registry = {url} (user)")
        return 0
    if args.action == "unset":
        config = home.read_config()
        removed = config.pop("registry", None) is not None
        if removed:
            home.write_config(config)
        ctx.out.result(
            {"registry": None, "removed": removed},
            "registry unset" if removed else "registry was not set",
        )
        return 0
    setting = configured_registry(flag=ctx.registry, env=ctx.env, cwd=ctx.cwd, home=home)
    _warn_of_unknown_keys(ctx, home)
    if args.action == "get":
        ctx.out.result(
            {"registry": setting.url, "source": setting.source}, f"{setting.url} ({setting.source})"
        )
        return 0
    data: dict[str, Any] = {
        "home": str(home.path),
        "registry": setting.url,
        "source": setting.source,
        "userConfig": home.read_config(),
        "aliases": dict(ALIASES),
    }
    text = f"home: {home.path}\nregistry: {setting.url} ({setting.source})"
    ctx.out.result(data, text)
    return 0


def _warn_of_unknown_keys(ctx: CommandContext, home: SpliceHome) -> None:
    """A ``warning:`` for each key of the user config nothing reads: a hand-written
    ``{"regsitry": …}`` left the registry at its default, and `config list` and `get` said
    only ``(default)``."""
    from splice_build.spec.names import guessed

    for key in home.read_config():
        if key not in home.CONFIG_KEYS:
            guess = guessed(key[:100], home.CONFIG_KEYS)
            ctx.out.warn(f"{home.config_file}: unknown key {key[:100]!r}{guess}: not read")
