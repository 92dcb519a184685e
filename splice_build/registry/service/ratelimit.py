"""Rate limits kept in the metadata store (docs/compatibility.md#rate-limits): fixed windows per key.

Keys are ``<limit name>:<client or user>``; the window is ``floor(now / period)``. A limit
of 0 is off (a private registry behind its own gateway, or test servers).

A client is counted by ``client_address.client_key``: an IPv6 client by its /64 network
(docs/registry.md#abuse-limits).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from splice_build.client_address import client_key
from splice_build.errors import ErrorCode
from splice_build.records import dataclass
from splice_build.registry.service.status import RetryLaterError

if TYPE_CHECKING:
    from splice_build.registry.service.deps import Deps


@dataclass(frozen=True)
class RateLimits:
    failed_auth: int = 20  # failing tokens per client address, then 429 (valid tokens still pass)
    failed_auth_period: int = 600
    # failing admin tokens of all clients together in that period, then the admin API is 429
    # for everyone: its token is the operator's choice, and 127.0.0.0/8 alone is 16 million
    # addresses of 20 guesses each
    failed_admin_auth: int = 40
    publishes: int = 10  # per user
    publish_period: int = 60
    requests: int = 60  # authenticated requests per client
    request_period: int = 60
    admin: int = 30  # admin API per client
    admin_period: int = 60
    costly_reads: int = 30  # answers of large versions written per client (not those kept)
    costly_read_period: int = 60
    costly_read_seconds: float = 0.1  # CPU of writing answers that one costly read stands for


class RateLimitedError(RetryLaterError):
    """429 with the number of seconds to wait (the HTTP ``retry-after`` header)."""

    def __init__(self, message: str, *, retry_after: int) -> None:
        hint = f"Retry after {retry_after} s."
        super().__init__(ErrorCode.RATE_LIMITED, message, retry_after=retry_after, hint=hint)


def _window(deps: Deps, period: int) -> int:
    return int(deps.now() // period)


def _count(deps: Deps, name: str, key: str, limit: int, period: int, what: str) -> None:
    if limit <= 0:
        return
    if deps.meta.hit(f"{name}:{key}", _window(deps, period)) > limit:
        raise RateLimitedError(f"Too many {what}; slow down", retry_after=period)


USER_AUTH = "auth-fail"  # failed user tokens (a valid token still passes: service.auth)
ADMIN_AUTH = "admin-auth-fail"  # failed admin tokens (a strict block)
EVERY_CLIENT = "*"  # the key of the admin failures of all clients together (no address)


def _shared_budget(deps: Deps, kind: str) -> int:
    """What all clients together may fail ``kind`` in a window; 0 when no such bound."""
    return deps.limits.failed_admin_auth if kind == ADMIN_AUTH else 0


def _auth_blocked(deps: Deps) -> RateLimitedError:
    return RateLimitedError(
        "Too many failed authentication attempts", retry_after=deps.limits.failed_auth_period
    )


def check_auth_block(deps: Deps, kind: str, client: str) -> None:
    """Refuse a client whose ``kind`` of authentication failed too often (``RATE_LIMITED``),
    and for admin tokens every client once all of them together failed too often."""
    limits = deps.limits
    if limits.failed_auth <= 0:
        return
    window = _window(deps, limits.failed_auth_period)
    if deps.meta.count(f"{kind}:{client_key(client)}", window) >= limits.failed_auth:
        raise _auth_blocked(deps)
    shared = _shared_budget(deps, kind)
    if shared > 0 and deps.meta.count(f"{kind}:{EVERY_CLIENT}", window) >= shared:
        raise _auth_blocked(deps)


def record_failed_auth(deps: Deps, kind: str, client: str) -> None:
    """Count one failed attempt; ``RATE_LIMITED`` when it is past the client's budget, or
    for admin tokens past the budget all clients share.

    The count and the decision are one atomic upsert: concurrent failures (threads of one
    server, or several server processes) cannot all pass a check made before their count.
    """
    limits = deps.limits
    if limits.failed_auth <= 0:
        return
    window = _window(deps, limits.failed_auth_period)
    shared = _shared_budget(deps, kind)
    over_shared = shared > 0 and deps.meta.hit(f"{kind}:{EVERY_CLIENT}", window) > shared
    if deps.meta.hit(f"{kind}:{client_key(client)}", window) > limits.failed_auth or over_shared:
        raise _auth_blocked(deps)


def count_request(deps: Deps, client: str) -> None:
    limits = deps.limits
    _count(deps, "requests", client_key(client), limits.requests, limits.request_period, "requests")


COSTLY_READ = 256 * 1024  # characters of stored manifest charged one costly read up front


@dataclass(frozen=True)
class CostlyCharge:
    """What ``count_costly_read`` charged: ``units`` costly reads in the fixed ``window``."""

    units: int
    window: int


def _costly_key(client: str) -> str:
    return f"costly-read:{client_key(client)}"


def count_costly_read(deps: Deps, client: str, cost: int) -> CostlyCharge:
    """Charge a client for an answer about to be written from ``cost`` characters of stored
    text (http/answer_cache.py calls it only when the answer is not kept) the most its
    writing may take: a costly read (``costly_read_seconds`` of CPU) for every
    ``COSTLY_READ`` characters begun, 256 KiB or more; ``RATE_LIMITED`` past the budget.

    The most, because the text's shape decides: 2 MiB manifests took 50 ms (strings) to
    0.79 s (lists nested 8 deep) of a real server's CPU, so 0.1 s per 256 KiB. Charged
    before the write, so concurrent requests cannot all pass a budget that only their
    writing would spend."""
    limits = deps.limits
    charge = CostlyCharge(
        math.ceil(cost / COSTLY_READ) if cost >= COSTLY_READ else 0,
        _window(deps, limits.costly_read_period),
    )
    if charge.units == 0 or limits.costly_reads <= 0:
        return charge
    if deps.meta.hit(_costly_key(client), charge.window, charge.units) > limits.costly_reads:
        raise RateLimitedError("Too many reads; slow down", retry_after=limits.costly_read_period)
    return charge


def settle_costly_read(deps: Deps, client: str, charged: CostlyCharge, seconds: float) -> None:
    """Charge what the writing took instead of ``charged``: a costly read for every
    ``costly_read_seconds`` of its CPU begun, once it took that long (so any answer that
    took 0.1 s is charged), and at least one for an answer charged up front. What was
    charged beyond is given back, in its own window only. Never refused: the answer is
    written already."""
    limits = deps.limits
    if limits.costly_reads <= 0:
        return
    unit = limits.costly_read_seconds
    took = math.ceil(seconds / unit) if seconds >= unit else 0
    if charged.units:
        took = max(took, 1)
    window = _window(deps, limits.costly_read_period)
    owed = took - charged.units if window == charged.window else max(took - charged.units, 0)
    if owed:
        deps.meta.hit(_costly_key(client), window, owed)


def count_publish(deps: Deps, user_id: int) -> None:
    limits = deps.limits
    _count(deps, "publish", str(user_id), limits.publishes, limits.publish_period, "publishes")


def count_admin(deps: Deps, client: str) -> None:
    limits = deps.limits
    _count(deps, "admin", client_key(client), limits.admin, limits.admin_period, "admin requests")
