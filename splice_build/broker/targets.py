"""Is a URL a target a web provider may be asked to fetch, or an endpoint a provider may be
configured with? (docs/data-providers.md)

The same rule as a skill declaring ``network: ["*"]``, through the network guard's own check
(``security.targets.check_target`` on a WHATWG-parsed URL, so ``127.1``, ``2130706433`` and
IPv6 spellings are normalized first): http(s) only, no credentials, no localhost and no
non-public IP literal. On top of it, names that only resolve inside a network (``.local``,
``.internal``, single labels) are refused. Names are not resolved here: the provider
resolves them on its side, so a provider is never *asked* for an internal address, which is
all the broker can promise. A provider endpoint Splice itself connects to
(``ROBINHOOD_RPC_URL``) is checked by the same rule with no grant, its name resolved by the
guard, which connects only to public answers.
"""

from __future__ import annotations

from splice_build.security.net_errors import NetworkDenied
from splice_build.security.targets import Target, check_target
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


def endpoint_problem(url: str) -> tuple[Target | None, str | None]:
    """The checked target of a provider endpoint configured as a URL (``ROBINHOOD_RPC_URL``),
    or None and why Splice must not connect to it. The value may come from a checkout's
    ``.env``, which whoever wrote the checkout controls: the session of the provider allows
    exactly the endpoint's host, and the guard takes an allowed IP literal or ``localhost``
    as an explicit grant, so the URL is checked here with no grant at all (https only, no
    credentials, no localhost, no non-public IP literal). A name is resolved by the guard,
    which connects only to public answers."""
    try:
        target = check_target(parse_url(url), ANY_PUBLIC_HOST)
    except InvalidUrl:
        return None, "is not a valid URL"
    except NetworkDenied as exc:
        return None, f"names no public host ({exc.reason})"
    if target.url.protocol != "https:":
        return None, "is not an https URL"
    return target, None
