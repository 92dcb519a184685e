"""The static half of the network guard: may this URL be requested at all?

The one implementation of these rules: the sandbox's ``fetch`` is performed by the parent
through ``guarded_http`` (docs/network-security.md), and so are the providers' requests.
(1) ``http:``/``https:`` only, no credentials;
(2) the host (lowercased, brackets and one trailing dot removed, WHATWG-normalized by
``urls.parse_url``) must have no empty label and match an allowed pattern; (3) IP literals must be public and
``localhost``/``*.localhost`` are refused — unless that exact literal, or ``localhost``, is
allowed (an explicit grant). The DNS half (every answer public) runs at connect time in
``guarded_http``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from splice_build.records import dataclass
from splice_build.security.addresses import is_grantable_literal, is_ip_literal, is_public_address
from splice_build.security.net_errors import (
    REASON_CREDENTIALS,
    REASON_NOT_DECLARED,
    REASON_NOT_PUBLIC,
    REASON_SCHEME,
    NetworkDenied,
)
from splice_build.security.netpolicy import NetPolicy, load_policy
from splice_build.security.urls import ParsedUrl
from splice_build.spec.permissions import host_allowed

Grant = Literal["none", "literal", "localhost"]


@dataclass(frozen=True)
class Target:
    """A URL that passed the static checks; ``host`` is bare (no brackets, no final dot)."""

    url: ParsedUrl
    host: str
    literal: bool
    grant: Grant

    @property
    def request_url(self) -> str:
        """The URL rebuilt from the normalized parts (what the HTTP client is given)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        port = f":{self.url.port}" if self.url.port else ""
        return f"{self.url.protocol}//{host}{port}{self.url.path}"


def bare_host(hostname: str) -> str:
    host = hostname.lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if len(host) > 1 and host.endswith("."):
        host = host[:-1]
    return host


def is_localhost_name(host: str, policy: NetPolicy) -> bool:
    return host in policy.localhost_names or any(
        host.endswith(suffix) for suffix in policy.localhost_suffixes
    )


def host_grant(host: str, patterns: Sequence[str], policy: NetPolicy) -> Grant:
    """Which grant applies to an allowed ``host``; raises NetworkDenied for a non-public one."""
    if is_ip_literal(host):
        if host in patterns and is_grantable_literal(host, policy):
            return "literal"
        if not is_public_address(host, policy):
            raise NetworkDenied(
                f'Network access to "{host}" is denied: it is not a public address.',
                REASON_NOT_PUBLIC,
                host=host,
            )
        return "none"
    if is_localhost_name(host, policy):
        if host == policy.localhost_grant and host in patterns:
            return "localhost"
        raise NetworkDenied(
            f'Network access to "{host}" is denied: it is not a public address.',
            REASON_NOT_PUBLIC,
            host=host,
        )
    return "none"


def check_target(
    url: ParsedUrl, patterns: Sequence[str], policy: NetPolicy | None = None
) -> Target:
    """Return the checked Target or raise NetworkDenied (with ``reason``)."""
    policy = policy or load_policy()
    if url.protocol not in policy.protocols:
        raise NetworkDenied(
            f'Network access with the URL scheme "{url.protocol}" is denied:'
            " only http: and https: are allowed.",
            REASON_SCHEME,
        )
    host = bare_host(url.hostname)
    if url.username or url.password:
        raise NetworkDenied(
            f'Network access to "{host}" is denied: URLs with credentials are not allowed.',
            REASON_CREDENTIALS,
            host=host,
        )
    if not is_ip_literal(host) and "" in host.split("."):
        # "a..b" and "x." (after one final dot was removed) parse, but no resolver answers
        # them and the request URL rebuilt from them would name a different host.
        raise NetworkDenied(
            f'Network access to "{host}" is denied: it is not a valid host name.',
            REASON_NOT_DECLARED,
            host=host,
        )
    if not host_allowed(host, patterns):
        raise NetworkDenied(
            f'Network access to "{host}" is denied: it is not an allowed host.',
            REASON_NOT_DECLARED,
            host=host,
        )
    grant = host_grant(host, patterns, policy)
    return Target(url=url, host=host, literal=is_ip_literal(host), grant=grant)
