"""Admission control for tool calls (docs/mcp.md#admission-control); no transport here.

A tool call holds a sandbox process and a core for its whole run: running more at once
than the machine has cores only makes every call slower (64 clients on 2 cores gave p50
2-3.5 s at the same throughput). So at most ``limit`` calls run at once; the others wait.

``AsyncAdmission`` (HTTP, one event loop): a waiting call sits in the queue of its *client
key* (the ``mcp-session-id`` header, else the peer address); when a call ends, the slot
goes to the head of the next key's queue in round-robin order, so a client that floods
the queue delays only its own calls. The queue is bounded in total (``queue``) and per key
(``per_key``), and a call waits at most ``wait_seconds``: beyond any of these it is
refused with ``Busy`` (HTTP 503 + ``Retry-After``, JSON-RPC ``SERVER_BUSY``). Over stdio
there is one client and nobody to answer 503 to, so calls queue on a plain semaphore.
"""

from __future__ import annotations

import asyncio
import os
from collections import OrderedDict, deque
from collections.abc import Mapping
from typing import Any

MAX_CALLS_ENV = "SPLICE_MCP_MAX_CALLS"
# JSON-RPC error of a refused call: implementation-defined server-error range.
SERVER_BUSY = -32003
BUSY_MESSAGE = "Server busy"
QUEUE_PER_CALL = 8  # queued calls allowed per running slot (total)
PER_KEY_SHARE = 4  # one client key may hold at most 1/PER_KEY_SHARE of the queue
WAIT_SECONDS = 10.0
RETRY_AFTER_SECONDS = 1
# Methods that run tool code (or may: a batch holding one counts as one call).
ADMITTED_METHODS = frozenset({"tools/call"})


def default_max_calls(env: Mapping[str, str] | None = None) -> int:
    """``SPLICE_MCP_MAX_CALLS`` if set (a positive integer), else the number of cores."""
    from splice_build.errors import UsageError

    raw = (os.environ if env is None else env).get(MAX_CALLS_ENV)
    if raw is None or raw == "":
        return max(1, os.cpu_count() or 1)
    if not raw.isdigit() or int(raw) < 1:
        raise UsageError(f"{MAX_CALLS_ENV} must be a positive integer, got {raw!r}")
    return int(raw)


def needs_admission(message: Any) -> bool:
    """Whether a decoded message (or batch) runs a tool and so must take a slot."""
    items = message if isinstance(message, list) else [message]
    return any(isinstance(item, dict) and item.get("method") in ADMITTED_METHODS for item in items)


def busy_data() -> dict[str, Any]:
    """The ``data`` of a SERVER_BUSY error: when to retry, in seconds."""
    return {"retryAfter": RETRY_AFTER_SECONDS}


class Busy(Exception):
    """The call was not admitted: queue full, this client's share full, or waited too long."""


class AsyncAdmission:
    """At most ``limit`` calls at once; fair round-robin queues per client key.

    Used from one event loop only (no locks): ``async with admission.slot(key): ...``.
    """

    def __init__(
        self,
        limit: int,
        *,
        queue: int | None = None,
        per_key: int | None = None,
        wait_seconds: float = WAIT_SECONDS,
    ) -> None:
        if limit < 1:
            raise ValueError("limit must be at least 1")
        self.limit = limit
        self.queue = QUEUE_PER_CALL * limit if queue is None else queue
        self.per_key = max(1, self.queue // PER_KEY_SHARE) if per_key is None else per_key
        self.wait_seconds = wait_seconds
        self.running = 0
        self.waiting = 0
        self._queues: OrderedDict[str, deque[asyncio.Future[None]]] = OrderedDict()

    def slot(self, key: str) -> _Slot:
        return _Slot(self, key)

    async def acquire(self, key: str) -> None:
        """Take a slot, waiting in ``key``'s queue if none is free; raises ``Busy``."""
        if self.running < self.limit and not self.waiting:
            self.running += 1
            return
        mine = self._queues.get(key)
        if self.waiting >= self.queue or (mine is not None and len(mine) >= self.per_key):
            raise Busy
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queues.setdefault(key, deque()).append(future)
        self.waiting += 1
        try:
            await asyncio.wait_for(asyncio.shield(future), self.wait_seconds)
        except TimeoutError:
            self._give_up(key, future)
            raise Busy from None
        except asyncio.CancelledError:  # the client went away
            self._give_up(key, future)
            raise

    def release(self) -> None:
        """End a call: hand its slot to the next client key's oldest waiter, round-robin."""
        while self._queues:
            key, waiters = self._queues.popitem(last=False)
            future = waiters.popleft()
            if waiters:
                self._queues[key] = waiters  # to the back: other keys go first
            self.waiting -= 1
            if not future.done():
                future.set_result(None)  # the slot moves over; ``running`` is unchanged
                return
        self.running -= 1

    def _give_up(self, key: str, future: asyncio.Future[None]) -> None:
        if future.done() and not future.cancelled():
            self.release()  # the slot arrived as we gave up: pass it on
            return
        future.cancel()
        waiters = self._queues.get(key)
        if waiters is not None and future in waiters:
            waiters.remove(future)
            self.waiting -= 1
            if not waiters:
                del self._queues[key]


class _Slot:
    def __init__(self, admission: AsyncAdmission, key: str) -> None:
        self._admission = admission
        self._key = key

    async def __aenter__(self) -> None:
        await self._admission.acquire(self._key)

    async def __aexit__(self, *exc: object) -> None:
        self._admission.release()
