"""Admission control for tool calls (docs/mcp.md#admission-control); no transport here.

A tool call holds a sandbox process and a core for its whole run: running more at once
than the machine has cores only makes every call slower (64 clients on 2 cores gave p50
2-3.5 s at the same throughput). So at most ``limit`` calls run at once; the others wait.

``AsyncAdmission`` (HTTP, one event loop): a waiting call sits in the queue of its client
*address* (the peer's, or the ``--trusted-proxy``'s client), under its session (the
``mcp-session-id`` header); when a call ends, the slot goes to the next address in
round-robin order, and within it to the next session's oldest call. The queue is bounded
in total (``queue``), and a call waits at most ``wait_seconds``: beyond either it is
refused with ``Busy`` (HTTP 503 + ``Retry-After``, JSON-RPC ``SERVER_BUSY``). One address
may fill the whole queue while nobody else waits (so clients behind one address, a proxy's
or a machine's, keep the slots busy); when the queue is full, a call of an address holding
fewer waiting calls than another *pushes out* that address's newest waiting call, which is
refused instead. The shares are per address because the address is what a client cannot
change at will: a session id is any string the client sends, and a new one is one
``initialize`` away, so shares per session would let one client take the whole queue by
sending a new id with every call. Over stdio there is one client and nobody to answer 503
to, so calls queue on a plain semaphore.
"""

from __future__ import annotations

import asyncio
import os
from collections import OrderedDict, deque
from collections.abc import Mapping
from typing import Any

MAX_CALLS_ENV = "SPLICE_MCP_MAX_CALLS"
MAX_CALLS_DIGITS = 9
# JSON-RPC error of a refused call: implementation-defined server-error range.
SERVER_BUSY = -32003
BUSY_MESSAGE = "Server busy"
QUEUE_PER_CALL = 8  # queued calls allowed per running slot (total)
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
    from splice_build.spec.number_text import whole_number

    value = whole_number(raw, MAX_CALLS_DIGITS)  # ASCII digits, few of them
    if value is None or value < 1:
        raise UsageError(
            f"{MAX_CALLS_ENV} must be a positive integer of at most {MAX_CALLS_DIGITS} digits, "
            f"got {raw[:40]!r}",
            # `splice registry --help`, the hint otherwise, says nothing of the variable
            hint=f"Unset {MAX_CALLS_ENV} to run as many calls at once as there are cores "
            "(docs/mcp.md#admission-control).",
        )
    return value


def needs_admission(message: Any) -> bool:
    """Whether a decoded message (or batch) runs a tool and so must take a slot."""
    items = message if isinstance(message, list) else [message]
    return any(is_tool_call(item) for item in items)


def is_tool_call(item: Any) -> bool:
    """Whether one decoded message is a tool call: a request (it has an ``id``) of an
    admitted method. A notification naming ``tools/call`` runs nothing and is answered
    nothing (``protocol.Server.handle``), so it takes no slot, files no cancellation ticket
    and is no batch's call; counted, it waited up to ``WAIT_SECONDS`` behind running
    calls for its 202 and was then refused 503, and it made a batch's one call two."""
    return isinstance(item, dict) and "id" in item and _method(item) in ADMITTED_METHODS


def _method(item: Any) -> str | None:
    """The method a decoded message names, or None: a client may send any JSON value there
    (an object is unhashable), and the protocol layer answers it as an invalid request."""
    method = item.get("method") if isinstance(item, dict) else None
    return method if isinstance(method, str) else None


def busy_data() -> dict[str, Any]:
    """The ``data`` of a SERVER_BUSY error: when to retry, in seconds."""
    return {"retryAfter": RETRY_AFTER_SECONDS}


class Busy(Exception):
    """The call was not admitted: queue full (or pushed out of it), or waited too long."""


class AsyncAdmission:
    """At most ``limit`` calls at once; fair round-robin queues per client address, and
    within an address per session.

    Used from one event loop only (no locks): ``await admission.acquire(address,
    session)``, then ``release()`` when the call ends. Shares are per address: a session id is whatever the client sends, so
    it only orders the calls of one address and never earns more room. ``per_address``
    optionally caps one address's waiting calls (default: the whole queue).
    """

    def __init__(
        self,
        limit: int,
        *,
        queue: int | None = None,
        per_address: int | None = None,
        wait_seconds: float = WAIT_SECONDS,
    ) -> None:
        if limit < 1:
            raise ValueError("limit must be at least 1")
        self.limit = limit
        self.queue = QUEUE_PER_CALL * limit if queue is None else queue
        self.per_address = self.queue if per_address is None else per_address
        self.wait_seconds = wait_seconds
        self.running = 0
        self.waiting = 0
        # address -> session -> its waiting calls, oldest first; both levels in turn order.
        self._queues: OrderedDict[str, OrderedDict[str, deque[asyncio.Future[None]]]] = (
            OrderedDict()
        )
        self._held: dict[str, int] = {}  # waiting calls per address

    @property
    def free(self) -> bool:
        """Whether a call acquiring now takes a slot at once, without waiting."""
        return self.running < self.limit and not self.waiting

    async def acquire(self, address: str, session: str = "") -> None:
        """Take a slot, waiting in the queue of ``address`` (under ``session``) if none is
        free; raises ``Busy``."""
        if self.free:
            self.running += 1
            return
        held = self._held.get(address, 0)
        if held >= self.per_address or (self.waiting >= self.queue and not self._push_out(held)):
            raise Busy
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queues.setdefault(address, OrderedDict()).setdefault(session, deque()).append(future)
        self._held[address] = held + 1
        self.waiting += 1
        try:
            await asyncio.wait_for(asyncio.shield(future), self.wait_seconds)
        except TimeoutError:
            self._give_up(address, session, future)
            raise Busy from None
        except asyncio.CancelledError:  # the client went away
            self._give_up(address, session, future)
            raise

    def release(self) -> None:
        """End a call: hand its slot to the next address's next session's oldest waiter,
        round-robin at both levels."""
        while self._queues:
            address, sessions = self._queues.popitem(last=False)
            session, waiters = sessions.popitem(last=False)
            future = waiters.popleft()
            if waiters:
                sessions[session] = waiters  # to the back: the address's other sessions first
            if sessions:
                self._queues[address] = sessions  # to the back: other addresses go first
            self._forget(address)
            if not future.done():
                future.set_result(None)  # the slot moves over; ``running`` is unchanged
                return
        self.running -= 1

    def _push_out(self, held: int) -> bool:
        """Make room in a full queue for a call of an address holding ``held`` waiting
        calls: refuse the newest waiting call of the address holding the most, if that is
        more than the newcomer's would then hold. False when no address holds that many."""
        heaviest = max(self._held, key=self._held.__getitem__)
        if self._held[heaviest] <= held + 1:
            return False
        sessions = self._queues[heaviest]
        session = max(sessions, key=lambda name: len(sessions[name]))
        waiters = sessions[session]
        future = waiters.pop()  # its newest
        if not waiters:
            del sessions[session]
        if not sessions:
            del self._queues[heaviest]
        self._forget(heaviest)
        future.set_exception(Busy())
        return True

    def _forget(self, address: str) -> None:
        """One waiting call of ``address`` is no longer waiting."""
        self.waiting -= 1
        self._held[address] -= 1
        if not self._held[address]:
            del self._held[address]

    def _give_up(self, address: str, session: str, future: asyncio.Future[None]) -> None:
        """A waiting call stops waiting (its deadline passed, or its task was cancelled).
        What its future holds by then decides: a slot handed over as it gave up is passed
        on; a push-out that came in the same turn of the loop (``_push_out`` already
        forgot it) holds no slot, and releasing one for it would let one more call run
        than ``limit``, for as long as the server lives."""
        if future.done() and not future.cancelled():
            if future.exception() is None:
                self.release()  # the slot arrived as we gave up: pass it on
            return
        future.cancel()
        sessions = self._queues.get(address)
        waiters = sessions.get(session) if sessions is not None else None
        if sessions is not None and waiters is not None and future in waiters:
            waiters.remove(future)
            self._forget(address)
            if not waiters:
                del sessions[session]
            if not sessions:
                del self._queues[address]
