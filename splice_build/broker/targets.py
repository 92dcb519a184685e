"""Is a URL a target a web provider may be asked to fetch, or an endpoint a provider may be
configured with? (docs/data-providers.md)

The same rule as a skill declaring ``network: ["*"]``, through the network guard's own check
(``security.targets.check_target`` on a WHATWG-parsed URL, so ``127.1``, ``2130706433`` and
IPv6 spellings are normalized first, and with no grant): http(s) only, no credentials, no
localhost and no non-public IP literal. On top of it, a web target's name must be a public
DNS name: two labels or more, and neither one of the special-use or network-internal names
of ``schemas/special_use_names.json`` nor a name under one (``.local``, ``.lan``,
``.home.arpa``, ``localhost.localdomain``, ``.onion``…). Names are not resolved here: the
provider resolves them on its side, so a provider is never *asked* for an internal name,
which is all the broker can promise. A provider endpoint Splice itself connects to
(``ROBINHOOD_RPC_URL``) is checked by the guard's rule with no grant; its name is resolved
by the guard, which connects only to public answers.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources

from splice_build.security.net_errors import NetworkDenied
from splice_build.security.targets import Target, check_target
from splice_build.security.urls import InvalidUrl, parse_url

ANY_PUBLIC_HOST = ["*"]


@lru_cache(maxsize=1)
def non_public_names() -> frozenset[str]:
    """Every name of ``schemas/special_use_names.json``, lower case."""
    text = (resources.files("splice_build.schemas") / "special_use_names.json").read_text("utf-8")
    data = json.loads(text)
    return frozenset(name.lower() for name in (*data["specialUse"], *data["private"]))


def is_public_name(host: str) -> bool:
    """True for a DNS name of two labels or more that is neither a special-use or internal
    name nor under one (``host`` is bare and lower case, as ``check_target`` gives it)."""
    labels = host.split(".")
    names = non_public_names()
    return len(labels) >= 2 and not any(".".join(labels[i:]) in names for i in range(len(labels)))


def target_problem(url: str) -> str | None:
    """Why a provider must not be asked to fetch ``url``, or None."""
    try:
        target = check_target(parse_url(url), ANY_PUBLIC_HOST)
    except InvalidUrl:
        return "is not a valid URL"
    except NetworkDenied as exc:
        return exc.message
    if not target.literal and not is_public_name(target.host):
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
