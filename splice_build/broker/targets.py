"""Is a URL a target a web provider may be asked to fetch? (docs/data-providers.md)

The same rule as a skill declaring ``network: ["*"]``, through the network guard's own check
(``security.targets.check_target`` on a WHATWG-parsed URL, so ``127.1``, ``2130706433`` and
IPv6 spellings are normalized first): http(s) only, no credentials, no localhost and no
non-public IP literal. On top of it, names that only resolve inside a network (``.local``,
``.internal``, single labels) are refused. Names are not resolved here: the provider
resolves them on its side, so a provider is never *asked* for an internal address, which is
all the broker can promise.
"""

from __future__ import annotations

from splice_build.security.net_errors import NetworkDenied
from splice_build.security.targets import check_target
from splice_build.security.urls import InvalidUrl, parse_url

ANY_PUBLIC_HOST = ["*"]
_INTERNAL_SUFFIXES = (".local", ".internal")


def target_problem(url: str) -> str | None:
    """Why a provider must not be asked to fetch ``url``, or None."""
    try:
        target = check_target(parse_url(url), ANY_PUBLIC_HOST)
    except InvalidUrl:
        return "is not a valid URL"
    except NetworkDenied as exc:
        return exc.message
    if not target.literal:
        if target.host.endswith(_INTERNAL_SUFFIXES):
            return f'"{target.host}" is an internal name'
        if "." not in target.host:
            return f'"{target.host}" is not a public host name'
    return None
