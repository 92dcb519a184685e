"""The network policy data: ``splice_build/schemas/netpolicy.json``, loaded once.

Address classification, target checks and the guarded ``requests`` session (which performs
the sandbox's ``fetch`` too) read the typed ``NetPolicy``. docs/network-security.md explains
every entry.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from splice_build.records import dataclass

if TYPE_CHECKING:
    from ipaddress import IPv4Network, IPv6Network


@dataclass(frozen=True)
class NetPolicy:
    """netpolicy.json, typed. Ranges are ``(network, name)`` pairs, IPv4 and IPv6 apart."""

    protocols: tuple[str, ...]
    refused_v4: tuple[tuple[IPv4Network, str], ...]
    refused_v6: tuple[tuple[IPv6Network, str], ...]
    public_v6: tuple[IPv6Network, ...]  # outside these, no IPv6 address is public
    outside_public_v6: str  # the refusal's name for such an address
    ungrantable_v4: tuple[IPv4Network, ...]  # no literal grant covers these (never a peer)
    ungrantable_v6: tuple[IPv6Network, ...]
    loopback_v4: tuple[IPv4Network, ...]
    loopback_v6: tuple[IPv6Network, ...]
    localhost_names: tuple[str, ...]
    localhost_suffixes: tuple[str, ...]
    localhost_grant: str
    max_redirects: int
    redirect_statuses: frozenset[int]
    to_get_always: frozenset[int]
    to_get_after_post: frozenset[int]
    drop_cross_origin: tuple[str, ...]
    dropped_request_headers: frozenset[str]
    max_response_bytes: int
    decodings: tuple[str, ...]


@lru_cache(maxsize=1)
def policy_json() -> dict[str, Any]:
    """The raw document."""
    text = (resources.files("splice_build.schemas") / "netpolicy.json").read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


@lru_cache(maxsize=1)
def load_policy() -> NetPolicy:
    """The typed policy; raises ``ValueError`` if the data file is malformed (a packaging bug)."""
    from ipaddress import IPv4Network, IPv6Network

    raw = policy_json()
    refused = raw["refused"]
    redirects = raw["redirects"]
    return NetPolicy(
        protocols=tuple(raw["protocols"]),
        refused_v4=tuple((IPv4Network(r["cidr"]), r["name"]) for r in refused["ipv4"]),
        refused_v6=tuple((IPv6Network(r["cidr"]), r["name"]) for r in refused["ipv6"]),
        public_v6=tuple(IPv6Network(c) for c in raw["publicV6"]["within"]),
        outside_public_v6=raw["publicV6"]["name"],
        ungrantable_v4=tuple(IPv4Network(c) for c in raw["literalGrant"]["ipv4"]),
        ungrantable_v6=tuple(IPv6Network(c) for c in raw["literalGrant"]["ipv6"]),
        loopback_v4=tuple(IPv4Network(c) for c in raw["loopback"]["ipv4"]),
        loopback_v6=tuple(IPv6Network(c) for c in raw["loopback"]["ipv6"]),
        localhost_names=tuple(raw["localhost"]["names"]),
        localhost_suffixes=tuple(raw["localhost"]["suffixes"]),
        localhost_grant=raw["localhost"]["grant"],
        max_redirects=int(redirects["max"]),
        redirect_statuses=frozenset(redirects["statuses"]),
        to_get_always=frozenset(redirects["toGetAlways"]),
        to_get_after_post=frozenset(redirects["toGetAfterPost"]),
        drop_cross_origin=tuple(redirects["dropCrossOrigin"]),
        dropped_request_headers=frozenset(raw["requestHeaders"]["dropped"]),
        max_response_bytes=int(raw["response"]["maxBytes"]),
        decodings=tuple(raw["response"]["decodings"]),
    )
