"""Where a registry token may travel (docs/registry.md#where-a-token-goes).

``authorization_header`` is the only place that turns a token into an ``Authorization``
header, and it refuses, before anything is sent, a registry reached over plain ``http://``
whose host is not a loopback address written as such: ``127.0.0.0/8`` or ``::1``. Over plain
HTTP every network hop (a café's Wi-Fi, a proxy, a compromised router) reads the token, and
a host *name* proves nothing about where the connection goes: ``localhost`` or
``registry.internal`` is whatever the resolver (``/etc/hosts``, DNS, a search domain) says
at that moment, so only a literal loopback address is known never to leave the machine.
Redirects are never followed (``http.HttpRegistryClient`` sends each request with
``allow_redirects=False``), so the URL checked here is the only one a token goes to.

A request to a loopback registry also never goes through a proxy from the environment
(``direct_only``): ``HTTP_PROXY`` would otherwise carry the plain-text request, token
included, to the proxy's host, which is not this machine.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from splice_build.errors import ErrorCode, RegistryError


def _loopback_literal(host: str) -> bool:
    """``host`` is an IPv4 address in 127.0.0.0/8 or the IPv6 address ``::1``, as written.

    Any other spelling is a name to resolve (``127.1``, ``2130706433``, ``localhost``) or an
    address that is not loopback by itself (``::ffff:127.0.0.1``, ``0.0.0.0``): refused."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv4Address):
        return address in ipaddress.IPv4Network("127.0.0.0/8") and str(address) == host
    return address == ipaddress.IPv6Address("::1")


def direct_only(base_url: str) -> bool:
    """A plain-HTTP registry on a loopback address: reached directly, never via a proxy."""
    parts = urlsplit(base_url)
    return parts.scheme == "http" and _loopback_literal(parts.hostname or "")


def may_carry_token(base_url: str) -> bool:
    """``https://`` anywhere, ``http://`` only to a literal loopback address."""
    scheme = urlsplit(base_url).scheme
    return scheme == "https" or direct_only(base_url)


def authorization_header(base_url: str, token: str) -> dict[str, str]:
    """The ``Authorization`` header for a request to ``base_url``; refuses a plain-HTTP
    registry that is not on this machine with ``INVALID_CONFIG`` (the token is not sent)."""
    require_token_route(base_url)
    return {"authorization": f"Bearer {token}"}


def require_token_route(base_url: str) -> None:
    """``INVALID_CONFIG`` for a registry no token may go to (``may_carry_token``): also
    asked by ``splice login`` before it prompts for a token it could not send."""
    if not may_carry_token(base_url):
        host = urlsplit(base_url).hostname or base_url
        raise RegistryError(
            ErrorCode.INVALID_CONFIG,
            f"Refusing to send your registry token to {base_url} over plain http://",
            details=[
                f"host: {host} (only 127.0.0.0/8 and ::1, written as addresses, "
                "may receive a token over http://)"
            ],
            hint=(
                "Use the registry's https:// URL, or for a registry on this machine "
                "http://127.0.0.1:PORT (docs/registry.md#where-a-token-goes)."
            ),
        )
