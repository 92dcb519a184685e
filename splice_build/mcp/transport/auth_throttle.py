"""Failed authentications of ``splice mcp --http``, counted per client (docs/mcp.md#streamable-http).

Its token is its operator's choice, so a guesser must not get attempts at the server's speed
(680 a second from one client before). After ``failures`` failed tokens within ``window``
seconds, a client is *blocked*: every request of it is refused (429) before its token is
compared, so a blocked guesser learns nothing, not even from the right token. The first block
lasts ``first_block`` seconds and each next one twice the last, up to ``max_block``; a client
with no failure for ``window`` seconds (and no block left) is forgotten, its next block the
first again. A request that presents a token of the right digest changes nothing and is never
slowed; one that presents none (no ``Authorization``) guesses nothing and is not counted.

Memory is bounded: at most ``clients`` clients are counted at once. Once that many are, every
other client is counted as one more, shared (``OVERFLOW``), so an attacker with many source
addresses (127.0.0.0/8 holds 16 million) gains no attempts beyond those of ``clients + 1``
clients, and a client new to the server may then share a block until the crowd's counts
lapse. A client is an address as ``client_address.client_key`` gives it (an IPv6 client's /64).

Used on the event loop only, by one server: no lock.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable

from splice_build.records import dataclass

OVERFLOW = "*"  # the shared count of clients beyond ``ThrottlePolicy.clients`` (no address)


@dataclass(frozen=True)
class ThrottlePolicy:
    """How failures are counted; ``failures`` 0 turns the throttle off."""

    failures: int = 10
    window: float = 60.0
    first_block: float = 1.0
    max_block: float = 30.0
    clients: int = 4096


class _Count:
    __slots__ = ("blocked_until", "failures", "last_failure", "next_block", "window_start")

    def __init__(self, now: float, first_block: float) -> None:
        self.window_start = now
        self.last_failure = now
        self.failures = 0
        self.next_block = first_block  # doubled at each block, up to max_block
        self.blocked_until = now

    def lapsed(self, now: float, window: float) -> bool:
        return now - self.last_failure >= window and now >= self.blocked_until


class AuthThrottle:
    def __init__(
        self, policy: ThrottlePolicy | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._policy = ThrottlePolicy() if policy is None else policy
        self._clock = clock
        self._counts: OrderedDict[str, _Count] = OrderedDict()  # oldest failure first

    def retry_after(self, client: str) -> int | None:
        """Whole seconds until ``client`` may try a token again; None when it may now."""
        if self._policy.failures <= 0:
            return None
        now = self._clock()
        count = self._counts.get(self._key(client, now))
        if count is None or now >= count.blocked_until:
            return None
        return max(1, math.ceil(count.blocked_until - now))

    def failed(self, client: str) -> None:
        """Count a failed token of ``client``; the ``failures``-th in a window starts a block."""
        policy = self._policy
        if policy.failures <= 0:
            return
        now = self._clock()
        key = self._key(client, now)
        count = self._counts.get(key)
        if count is None:
            count = self._counts[key] = _Count(now, policy.first_block)
        if now - count.window_start >= policy.window:
            count.window_start, count.failures = now, 0
        count.failures += 1
        count.last_failure = now
        self._counts.move_to_end(key)
        if count.failures >= policy.failures:
            count.blocked_until = now + count.next_block
            count.next_block = min(count.next_block * 2, policy.max_block)
            count.window_start, count.failures = now, 0

    def counted(self) -> int:
        """How many clients are counted now (the shared one included)."""
        self._forget_lapsed(self._clock())
        return len(self._counts)

    def _key(self, client: str, now: float) -> str:
        """``client``'s own count if it has one or there is room for one, else ``OVERFLOW``."""
        self._forget_lapsed(now)
        if client in self._counts:
            return client
        own = len(self._counts) - (OVERFLOW in self._counts)
        if own < self._policy.clients:
            return client
        return OVERFLOW

    def _forget_lapsed(self, now: float) -> None:
        """Drop the counts, oldest failure first, whose window and block are over."""
        window = self._policy.window
        while self._counts:
            key, count = next(iter(self._counts.items()))
            if not count.lapsed(now, window):
                return
            del self._counts[key]
