"""Address classification from ``schemas/netpolicy.json`` (the network policy's data).

An address is *public* when it is an IP address outside every refused range (and, for IPv6,
inside global unicast ``2000::/3``: an allow-list, so unallocated space is never public). IPv4 addresses
are compared with the IPv4 list only and IPv6 addresses with the IPv6 list only, so IPv4-mapped
(``::ffff:0:0/96``), IPv4-compatible, NAT64, 6to4 and Teredo forms are refused as ranges,
never by unwrapping the embedded IPv4 address. Text that is not an IP address is not public.
"""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING

from splice_build.security.netpolicy import NetPolicy, load_policy

if TYPE_CHECKING:
    IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def parse_ip(text: str) -> IPAddress | None:
    """An IP literal (dotted-quad IPv4 or IPv6 without brackets; an IPv6 ``%zone`` is
    ignored), or None. Leading zeros and short IPv4 forms are not literals here: URLs are
    normalized by ``urls.parse_url`` first, as Node's URL parser does."""
    try:
        return ipaddress.IPv4Address(text)
    except ValueError:
        pass
    try:
        return ipaddress.IPv6Address(text.split("%", 1)[0])
    except ValueError:
        return None


def is_ip_literal(text: str) -> bool:
    return parse_ip(text) is not None


def refused_range(address: str, policy: NetPolicy | None = None) -> str | None:
    """The name of the refused range ``address`` is in; ``"not an IP address"`` for other
    text; None when the address is public."""
    policy = policy or load_policy()
    ip = parse_ip(address)
    if ip is None:
        return "not an IP address"
    if isinstance(ip, ipaddress.IPv4Address):
        ranges4 = policy.refused_v4
        return next((name for net, name in ranges4 if ip in net), None)
    refused = next((name for net, name in policy.refused_v6 if ip in net), None)
    if refused is None and not any(ip in net for net in policy.public_v6):
        return policy.outside_public_v6
    return refused


def is_public_address(address: str, policy: NetPolicy | None = None) -> bool:
    """True only for an IP address outside every refused range."""
    return refused_range(address, policy) is None


def is_loopback_address(address: str, policy: NetPolicy | None = None) -> bool:
    """The only answers a ``localhost`` grant accepts (127.0.0.0/8, ::1)."""
    policy = policy or load_policy()
    ip = parse_ip(address)
    if isinstance(ip, ipaddress.IPv4Address):
        return any(ip in net for net in policy.loopback_v4)
    if isinstance(ip, ipaddress.IPv6Address):
        return any(ip in net for net in policy.loopback_v6)
    return False


def is_grantable_literal(address: str, policy: NetPolicy | None = None) -> bool:
    """Whether declaring the IP literal ``address`` may grant it: never an address that no
    connection has as its peer (``0.0.0.0`` connects to this machine's loopback), nor an
    IPv4-mapped one embedding it (an IPv6 socket connects ``::ffff:0.0.0.0`` as 0.0.0.0)."""
    policy = policy or load_policy()
    ip = parse_ip(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if isinstance(ip, ipaddress.IPv4Address):
        return not any(ip in net for net in policy.ungrantable_v4)
    if isinstance(ip, ipaddress.IPv6Address):
        return not any(ip in net for net in policy.ungrantable_v6)
    return False


def grants_connection(host: str) -> bool:
    """Whether the declared network entry ``host`` can ever let a connection through: a name,
    or an IP literal ``is_grantable_literal`` accepts (security/targets.py's rule). What the
    permission lines of a consent prompt, ``splice info`` and ``splice validate`` say of it
    (spec/permissions.py ``describe``)."""
    return parse_ip(host) is None or is_grantable_literal(host)


def address_key(address: str) -> str | None:
    """A canonical form for comparing addresses (``::ffff:1.2.3.4`` == ``::ffff:102:304``)."""
    ip = parse_ip(address)
    return None if ip is None else f"{ip.version}:{int(ip)}"
