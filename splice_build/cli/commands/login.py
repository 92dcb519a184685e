"""`splice login [--token T]`: check a registry token with /auth/whoami, then save it (0600).

The token comes from ``--token`` (with a warning: it lands in shell history), else a hidden
prompt on a terminal that names the registry, else the first line of standard input
(``echo $T | splice login``). It is never printed. Standard input is read for one line of at
most a token's length (``MAX_TOKEN_LENGTH`` and a line break), never to its end: a stream
without a line break (``splice login < /dev/zero``) would otherwise fill the memory, and
what was read would go to the registry as a header. Whatever its source, the token must
have the registry's token format (``TOKEN_PATTERN``, docs/compatibility.md#auth-and-tokens),
else ``USAGE`` before anything is sent.

The registry must be one the user chose (``--registry``, ``SPLICE_REGISTRY``, the user
config), as for ``SPLICE_TOKEN`` (docs/registry.md#where-a-token-goes): in someone else's
checkout, a ``splice.json`` naming its own server would otherwise receive the token typed
or piped in for the user's real registry. Such a login is ``USAGE`` before any token is read,
and so is one that names no registry at all: the embedded registry, the default, needs none.
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
    return _stdin_line()


def _stdin_line() -> str:
    """The first line of standard input, read no further than a token and its line break."""
    from splice_build.registry.api import MAX_TOKEN_LENGTH

    limit = MAX_TOKEN_LENGTH + len("\r\n")
    raw = sys.stdin.buffer.readline(limit + 1)
    line = raw.removesuffix(b"\n").removesuffix(b"\r")
    if len(raw) > limit or len(line) > MAX_TOKEN_LENGTH:
        raise _not_a_token(f"the first line of standard input is over {MAX_TOKEN_LENGTH} bytes")
    try:
        return line.decode("ascii")
    except UnicodeDecodeError:
        raise _not_a_token("standard input holds bytes that are not ASCII") from None


def _not_a_token(reason: str) -> UsageError:
    """Refuse what was given as a token; the text itself is never repeated."""
    return UsageError(
        "This is not a registry token: nothing was sent",
        details=[reason, "a token is splice_ followed by 43 characters of A-Z a-z 0-9 _ -"],
        hint="Paste the token exactly as `splice token create` or your administrator gave it.",
    )


def _checked(token: str) -> str:
    from splice_build.registry.api import TOKEN_PATTERN

    if not token:
        raise _not_a_token("no token was given (an empty line)")
    if not TOKEN_PATTERN.fullmatch(token):
        raise _not_a_token(f"{len(token)} characters not in the token format")
    return token


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
    from splice_build.project.registry_url import EMBEDDED_REGISTRY
    from splice_build.registry.client.credential_route import require_token_route
    from splice_build.registry.client.open import configured_registry, open_registry

    home = SpliceHome.from_env(ctx.env)
    setting = configured_registry(flag=ctx.registry, env=ctx.env, cwd=ctx.cwd, home=home)
    url = setting.url
    if setting.source == "default":  # asked for a token, it answered "Invalid … token"
        raise UsageError(
            "splice login needs the registry to log in to: the embedded registry, used when "
            "none is named, needs no login",
            hint="Name it: `splice login --registry URL` (or set it once: `splice config set "
            "registry URL`).",
        )
    _require_chosen(setting.source, url, ctx, home)
    if url != EMBEDDED_REGISTRY:  # in-process: no request carries the token
        require_token_route(url)  # before a token is typed for a registry it could not go to
    token = _checked(_read_token(args, ctx, url))
    client = open_registry(url, home=home, token=token, env={})
    try:
        who = client.whoami()
    finally:
        client.close()
    home.save_credential(url, token, str(who["user"]))
    # Named by --registry alone, the registry is not where the next command goes: a new user
    # who logged in, then ran `splice publish`, published to the embedded registry.
    usual = configured_registry(flag=None, env=ctx.env, cwd=ctx.cwd, home=home).url
    ctx.out.result(
        {"registry": url, "user": who["user"]},
        lambda shown: (
            f"Logged in to {shown['registry']} as {shown['user']}"
            + (_elsewhere(shown["registry"], usual) if usual != url else "")
        ),
    )
    return 0


def _elsewhere(url: str, usual: str) -> str:
    """The ``next:`` line of a login to a registry that commands without ``--registry`` do
    not ask (``usual`` is the one they do)."""
    from splice_build.project.registry_url import EMBEDDED_REGISTRY

    named = "the embedded registry" if usual == EMBEDDED_REGISTRY else usual
    return (
        f"\nnext: commands without --registry still use {named}; pass --registry {url}, "
        f"or make it the default: splice config set registry {url}"
    )
