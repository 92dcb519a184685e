"""`splice config [list|get|set|unset] <key> [value]`: the user's settings in
``SPLICE_HOME/config.json``: the default ``registry`` and the sandbox's ``isolation`` mode
(docs/security.md#the-os-layer), the keys ``SpliceHome.CONFIG_KEYS`` names."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from splice_build.cli.context import CommandContext
from splice_build.errors import UsageError

if TYPE_CHECKING:
    from splice_build.project.home import SpliceHome

NAME = "config"
HELP = "show or change the default registry and the isolation mode"
NEEDS_PROJECT = False
# What `set` takes, by key (each key of SpliceHome.CONFIG_KEYS).
VALUES = {
    "registry": "a URL or an alias (local, embedded)",
    "isolation": "a mode (auto, require-os, in-process)",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "action",
        nargs="?",
        default="list",
        choices=("list", "get", "set", "unset"),
        help="list (the default): the home, the registry and where it comes from, and the "
        "isolation mode (with --json also every key of config.json); get, set, unset: one "
        "setting",
    )
    parser.add_argument("key", nargs="?", help="the setting: registry or isolation")
    parser.add_argument(
        "value", nargs="?", help="the new value (set only): a registry URL or alias, or a mode"
    )


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    from splice_build.project.home import SpliceHome
    from splice_build.project.registry_url import ALIASES

    home = SpliceHome.from_env(ctx.env)
    _check_words(args)
    key = args.key
    if args.action == "set":
        value = _checked(key, args.value)
        home.write_config({**home.read_config(), key: value})
        ctx.out.result({key: value, "source": "user"}, f"{key} = {value} (user)")
        return 0
    if args.action == "unset":
        config = home.read_config()
        removed = config.pop(key, None) is not None
        if removed:
            home.write_config(config)
        ctx.out.result(
            {key: None, "removed": removed}, f"{key} unset" if removed else f"{key} was not set"
        )
        return 0
    _warn_of_unknown_keys(ctx, home)
    if args.action == "get":
        value, source = _registry(ctx, home) if key == "registry" else _isolation(home)
        ctx.out.result({key: value, "source": source}, f"{value} ({source})")
        return 0
    registry, source = _registry(ctx, home)
    isolation, isolation_source = _isolation(home)
    data: dict[str, Any] = {
        "home": str(home.path),
        "registry": registry,
        "source": source,
        "isolation": isolation,
        "userConfig": home.read_config(),
        "aliases": dict(ALIASES),
    }
    text = (
        f"home: {home.path}\nregistry: {registry} ({source})\n"
        f"isolation: {isolation} ({isolation_source})"
    )
    ctx.out.result(data, text)
    return 0


def _check_words(args: argparse.Namespace) -> None:
    """The usage errors of the words given: a known key for every action but `list`, and a
    value for `set` alone."""
    keys = tuple(VALUES)
    if args.action != "list" and args.key is None:
        raise UsageError(f"config {args.action} needs a key: {', '.join(keys)}")
    if args.action != "list" and args.key not in keys:
        from splice_build.spec.names import did_you_mean

        raise UsageError(
            f"unknown setting {args.key!r} (choose from {', '.join(map(repr, keys))})",
            hint=f"{did_you_mean(args.key, keys)}Run `splice config list` to see the settings.",
        )
    if args.action == "set" and args.value is None:
        raise UsageError(
            f"config set {args.key} needs a value: {VALUES[args.key]}",
            hint=f"To go back to the default, run `splice config unset {args.key}`.",
        )
    if args.action != "set" and args.value is not None:
        raise UsageError(f"only `config set {args.key} <value>` takes a value")


def _checked(key: str, value: str) -> str:
    """``value`` as ``config.json`` keeps it; ``INVALID_CONFIG`` when it is none."""
    if key == "registry":
        from splice_build.project.registry_url import normalize_registry_url

        return normalize_registry_url(value)
    if key == "isolation":
        from splice_build.runtime.isolation.plan import check_mode

        return check_mode(value, source="config set isolation")
    raise AssertionError(f"BUG: config set {key}: no check for its value")


def _registry(ctx: CommandContext, home: SpliceHome) -> tuple[str, str]:
    """The registry commands ask here and where that comes from (cli.md, "Which registry")."""
    from splice_build.registry.client.open import configured_registry

    setting = configured_registry(flag=ctx.registry, env=ctx.env, cwd=ctx.cwd, home=home)
    return setting.url, setting.source


def _isolation(home: SpliceHome) -> tuple[str, str]:
    """The isolation mode and where it comes from (``user`` or ``default``), as the runtime
    reads it (runtime/isolation/plan.py)."""
    from splice_build.runtime.isolation.plan import DEFAULT_MODE, check_mode

    value = home.read_config().get("isolation")
    if value is None:
        return DEFAULT_MODE, "default"
    return check_mode(value, source=str(home.config_file)), "user"


def _warn_of_unknown_keys(ctx: CommandContext, home: SpliceHome) -> None:
    """A ``warning:`` for each key of the user config nothing reads: a hand-written
    ``{"regsitry": …}`` left the registry at its default, and `config list` and `get` said
    only ``(default)``."""
    from splice_build.spec.names import guessed

    for key in home.read_config():
        if key not in home.CONFIG_KEYS:
            guess = guessed(key[:100], home.CONFIG_KEYS)
            ctx.out.warn(f"{home.config_file}: unknown key {key[:100]!r}{guess}: not read")
