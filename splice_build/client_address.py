"""Which address a request comes from, for rate limits, the failed-token lockout and the MCP
server's admission queues, and the key its budgets are kept under (:func:`client_key`).

docs/registry.md#behind-a-reverse-proxy. The address is the TCP peer's, unless the peer is one
of the proxies the operator named with ``--trusted-proxy`` (``splice registry serve``,
``splice mcp --http``; addresses or CIDR networks; none by default). Only then is
``X-Forwarded-For`` read, from the right: each trusted proxy appended the address it received
from, so the first entry that is not a trusted proxy is the client; what lies to its left was
written by the client and is ignored. An entry is an IP address, or one in the node forms
proxies also write (``[2001:db8::1]``, ``[2001:db8::1]:443``, ``192.0.2.1:443``: the port is
dropped); spaces and tabs around it are dropped, empty entries skipped, and an IPv4-mapped
IPv6 address is its IPv4 address. A header that cannot be read this way (``unknown``, an
obfuscated ``_name``, a zone index) leaves the peer's address. ``Forwarded`` and
``X-Real-IP`` are never read.

A trusted proxy given as an IPv4-mapped IPv6 address or network (``::ffff:10.0.0.5``, what a
dual-stack socket shows for an IPv4 peer) is its IPv4 address or network, as peers are
compared as IPv4; a network that holds every address (``0.0.0.0/0``, ``::/0``) is refused: it
would let every client pick the address it is counted under.

uvicorn's own proxy-header handling is turned off (it trusts ``127.0.0.1`` by default, so any
local process could pick its address); this middleware is the only place that decides.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from typing import Any

from splice_build.spec.number_text import whole_number

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
_HEADER = b"x-forwarded-for"
_MAPPED = ipaddress.IPv6Network("::ffff:0:0/96")
_OWS = " \t"  # HTTP's optional whitespace around a list element (RFC 9110 section 5.6.1)


def parse_trusted_proxy(text: str) -> IPNetwork:
    """An address or CIDR network; raises ``ValueError`` (a usage error for the CLI)."""
    network = ipaddress.ip_network(text.strip(), strict=False)
    if isinstance(network, ipaddress.IPv6Network) and network.prefixlen >= _MAPPED.prefixlen:
        mapped = network.network_address.ipv4_mapped
        if mapped is not None:
            network = ipaddress.IPv4Network((mapped, network.prefixlen - _MAPPED.prefixlen))
    if network.prefixlen == 0:
        raise ValueError("a network of every address would let any client pick its own")
    return network


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The IP address of one ``X-Forwarded-For`` entry, or None when it names none."""
    node = text.strip(_OWS)
    if node.startswith("["):  # [v6] or [v6]:port
        inside, bracket, port = node[1:].partition("]")
        if not bracket or (port and not (port.startswith(":") and _is_port(port[1:]))):
            return None
        node = inside
    elif node.count(":") == 1:  # v4:port
        node, _, port = node.partition(":")
        if not _is_port(port):
            return None
    if "%" in node:  # a zone index names an interface of the proxy, not a client
        return None
    try:
        address = ipaddress.ip_address(node)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _is_port(digits: str) -> bool:
    return whole_number(digits, 5) is not None


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
    # Empty list elements are ignored, as HTTP's list syntax says (RFC 9110 section 5.6.1).
    hops = [hop for value in forwarded_for for hop in value.split(",") if hop.strip(_OWS)]
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
