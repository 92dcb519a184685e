"""One HTTP request through an ASGI app in this process: no server, no socket.

For tests that must see which thread does what inside the app (tests/registry/
test_loop_answers.py, tests/mcp/test_loop_work.py), patch a module the app reads
(tests/registry/test_read_cost.py), or feed a body that never ends
(tests/registry/test_body_deadline.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Headers = Sequence[tuple[bytes, bytes]]


def http_scope(method: str, target: str, headers: Headers = ()) -> dict[str, Any]:
    """The scope of ``method target`` (a path, then ``?query`` if any) from 127.0.0.1."""
    path, _, query = target.partition("?")
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": query.encode(),
        "headers": [(b"host", b"app.test"), *headers],
        "client": ("127.0.0.1", 40000),
        "server": ("127.0.0.1", 80),
    }


def sending(*parts: bytes) -> Receive:
    """A client that sends ``parts`` as the whole body (none: an empty one), then stays
    connected and sends nothing more, as a live connection does."""
    queue = [
        {"type": "http.request", "body": part, "more_body": index < len(parts) - 1}
        for index, part in enumerate(parts or (b"",))
    ]
    return _then_nothing(queue)


def stalling(first: bytes) -> Receive:
    """A client that sends ``first`` of a longer body and then nothing, for ever."""
    return _then_nothing([{"type": "http.request", "body": first, "more_body": True}])


def _then_nothing(queue: list[Message]) -> Receive:
    async def receive() -> Message:
        if queue:
            return queue.pop(0)
        await asyncio.Event().wait()  # the client neither sends more nor leaves
        raise AssertionError("unreachable")

    return receive


async def exchange(app: Any, scope: dict[str, Any], receive: Receive) -> tuple[int, bytes]:
    """The status and the whole body the app sent for one request."""
    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    await app(scope, receive, send)
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    return status, b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
