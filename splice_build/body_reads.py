"""Request bodies still arriving when an HTTP server stops (``splice mcp --http``,
``splice registry serve``).

Each body is read under a deadline kept here, and the server's stop ends them all at once
(``end``, on the event loop): the reader sees ``TimeoutError`` with ``ended`` set and answers
503 "Server stopping" (docs/mcp.md#stopping, docs/registry.md's Stopping). Otherwise a client
trickling its body held the stop until uvicorn cancelled its task, and uvicorn logged an
"Exception in ASGI application" traceback for it (12 s after SIGTERM for the registry).
``splice mcp`` ends them as the stop begins, the registry at its cut, once the requests in
flight have had their grace (an upload on a slow link may finish in it)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator


class BodyReads:
    """The deadlines of the request bodies one server is reading."""

    def __init__(self) -> None:
        self.ended = False
        self._deadlines: set[asyncio.Timeout] = set()

    @contextlib.asynccontextmanager
    async def within(self, seconds: float) -> AsyncIterator[None]:
        """Read a body in the block: ``TimeoutError`` past ``seconds``, or as soon as the
        reads are ended (at once when they already are)."""
        async with asyncio.timeout(0 if self.ended else seconds) as deadline:
            self._deadlines.add(deadline)
            try:
                yield
            finally:
                self._deadlines.discard(deadline)

    def end(self) -> None:
        """End every read now, and any that starts later at once (on the event loop).

        A read whose own deadline has fired but whose task has not run since is left as it
        is: its reader gets its ``TimeoutError`` all the same and, ``ended`` being set,
        answers as the others do. Rescheduling it raised ``RuntimeError`` (an expiring
        ``asyncio.Timeout`` cannot be changed), out of the server's stop: a ``splice mcp
        --http`` sent SIGTERM as a burst of slow bodies reached their deadline left the
        other reads running, logged a traceback for each and did not exit."""
        self.ended = True
        now = asyncio.get_running_loop().time()
        for deadline in self._deadlines:
            if not deadline.expired():
                deadline.reschedule(now)
