"""Which address a request comes from, for rate limits, the failed-token lockout and the MCP
server's admission queues, and the key its budgets are kept under (:func:`client_key`).

docs/registry.md#behind-a-reverse-proxy. The address is the TCP peer's, unless the peer is one
of the proxies the operator named with ``--trusted-proxy`` (``splice registry serve``, ``splice
mcp --http``; addresses or CIDR networks; none by default). Only then is ``X-Forwarded-For`` read, from the right: each
trusted proxy appended the address it received from, so the first entry that is not a trusted
proxy is the client; what lies to its left was written by the client and is ignored. A header
that cannot be read this way (an entry that is not an IP address) leaves the peer's address.

uvicorn's own proxy-header handling is turned off (it trusts ``127.0.0.1`` by default, so any
local process could pick its address); this middleware is the only place that decides.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from typing import Any

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
_HEADER = b"x-forwarded-for"


def parse_trusted_proxy(text: str) -> IPNetwork:
    """An address or CIDR network; raises ``ValueError`` (a usage error for the CLI)."""
    return ipaddress.ip_network(text.strip(), strict=False)


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        address = ipaddress.ip_address(text.strip())
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


IPV6_PREFIX = 64  # bits of an IPv6 client address that name its budget


def client_key(client: str) -> str:
    """The name a client's budgets are kept under: an IPv4 address (an IPv4-mapped IPv6
    address included), an IPv6 address's /64 network, or the text itself when it is no
    address (``local``: the embedded store).

    The /64 is the smallest block a site or a subscriber line is given: counted by address,
    one host would have 2**64 budgets, each fresh source address of its own network a new
    one (docs/registry.md#abuse-limits)."""
    try:
        address = ipaddress.ip_address(client)
    except ValueError:
        return client
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, IPV6_PREFIX), strict=False))
    return str(address)


def client_address(peer: str, forwarded_for: Sequence[str], trusted: Sequence[IPNetwork]) -> str:
    """The client of a request from ``peer`` with these ``X-Forwarded-For`` values."""
    peer_address = _address(peer)
    if peer_address is None or not any(peer_address in net for net in trusted):
        return peer
    hops = [hop for value in forwarded_for for hop in value.split(",")]
    for hop in reversed(hops):
        address = _address(hop)
        if address is None:
            return peer
        if not any(address in net for net in trusted):
            return str(address)
    return str(_address(hops[0])) if hops else peer


class TrustedProxies:
    """ASGI middleware: ``scope["client"]`` becomes :func:`client_address`'s answer."""

    def __init__(self, app: Any, *, trusted: Sequence[IPNetwork] = ()) -> None:
        self.app = app
        self.trusted = tuple(trusted)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket") and self.trusted and scope.get("client"):
            values = [
                value.decode("latin-1") for name, value in scope["headers"] if name == _HEADER
            ]
            host, _port = scope["client"]
            found = client_address(host, values, self.trusted)
            if found != host:
                scope = {**scope, "client": (found, 0)}
        await self.app(scope, receive, send)
