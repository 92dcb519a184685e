"""A call cancelled while it waits for an admission slot over HTTP (docs/mcp.md#cancellation):
it leaves the queue at once, never runs and is answered 202 with no body; a cancellation
from another session leaves it waiting. In this process, through the real ASGI app, so the
admission's counters say when the call waits."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Mapping
from typing import Any

from splice_build.mcp.admission import AsyncAdmission
from splice_build.mcp.interface import ServerInfo
from splice_build.mcp.protocol import Server, Session
from splice_build.mcp.transport.http import McpHttpApp, token_digest
from testing.asgi import exchange, http_scope, sending
from testing.mcp_clients import DEMO_TOKEN
from testing.mcp_memory import MemoryBackend, descriptor

HEADERS = [
    (b"authorization", f"Bearer {DEMO_TOKEN}".encode()),
    (b"content-type", b"application/json"),
    (b"mcp-protocol-version", b"2025-11-25"),
]


def test_a_call_cancelled_while_it_waits_leaves_the_queue() -> None:
    release = threading.Event()
    ran: list[Any] = []

    def block(arguments: Mapping[str, Any]) -> dict[str, Any]:
        ran.append(arguments["n"])
        release.wait(30)
        return {"n": arguments["n"]}

    backend = MemoryBackend()
    backend.add_tool(descriptor("@demo/echo", "block"), block)
    admission = AsyncAdmission(1)
    app = McpHttpApp(Server(backend, ServerInfo()), token_digest(DEMO_TOKEN), admission)

    async def post(message: dict[str, Any], session: str) -> tuple[int, bytes]:
        body = json.dumps(message).encode()
        headers = [*HEADERS, (b"content-length", str(len(body)).encode())]
        headers.append((b"mcp-session-id", session.encode()))
        return await exchange(app, http_scope("POST", "/mcp", headers), sending(body))

    def call(n: int) -> dict[str, Any]:
        params = {"name": "demo_echo_block", "arguments": {"n": n}}
        return {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": params}

    def cancel(n: int) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": n}}

    async def until(condition: Any) -> None:
        for _ in range(2000):
            if condition():
                return
            await asyncio.sleep(0.005)
        raise AssertionError("never reached")

    async def walk() -> tuple[tuple[int, bytes], tuple[int, bytes]]:
        running = asyncio.ensure_future(post(call(1), "s"))
        await until(lambda: ran == [1])
        waiting = asyncio.ensure_future(post(call(2), "s"))
        await until(lambda: admission.waiting == 1)
        assert await post(cancel(2), "other") == (202, b"")  # another session: still waits
        assert admission.waiting == 1
        assert await post(cancel(2), "s") == (202, b"")
        cancelled = await waiting  # out of the queue without waiting for the slot
        assert admission.waiting == 0 and admission.running == 1
        release.set()
        return await running, cancelled

    (status, body), cancelled = asyncio.run(walk())
    assert status == 200 and json.loads(body)["result"]["structuredContent"] == {"n": 1}
    assert cancelled == (202, b"")
    assert ran == [1] and admission.running == 0  # call 2 never ran; no slot is held


def test_a_call_cancelled_as_its_slot_arrives_never_runs_and_passes_the_slot_on() -> None:
    """The cancel and the slot reach a waiting call in one turn of the loop, in either
    order. Python 3.11's wait_for then returned the slot and dropped the interruption: the
    cancelled call ran (its sandbox process started for nobody), and its request's task kept
    a request to cancel that nothing took back."""
    ran: list[Any] = []
    backend = MemoryBackend()
    backend.add_tool(descriptor("@demo/echo", "block"), lambda a: ran.append(a["n"]) or {})
    admission = AsyncAdmission(1)
    server = Server(backend, ServerInfo())
    app = McpHttpApp(server, token_digest(DEMO_TOKEN), admission)
    in_flight = server._in_flight._tickets

    async def post(n: int) -> tuple[tuple[int, bytes], int]:
        params = {"name": "demo_echo_block", "arguments": {"n": n}}
        body = json.dumps({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": params})
        headers = [*HEADERS, (b"content-length", str(len(body)).encode())]
        headers.append((b"mcp-session-id", b"s"))
        answer = await exchange(app, http_scope("POST", "/mcp", headers), sending(body.encode()))
        task = asyncio.current_task()
        assert task is not None
        return answer, task.cancelling()

    async def walk(cancel_first: bool) -> None:
        ran.clear()
        await admission.acquire("127.0.0.1")  # the running call whose end hands the slot on
        cancelled = asyncio.ensure_future(post(1))
        successor = asyncio.ensure_future(post(2))
        for _ in range(2000):
            if admission.waiting == 2:
                break
            await asyncio.sleep(0.005)
        (ticket,) = in_flight[(("127.0.0.1", "s"), False, 1)]
        if cancel_first:
            ticket.cancel("test")
            admission.release()
        else:
            admission.release()
            ticket.cancel("test")
        assert await cancelled == ((202, b""), 0)
        (status, _body), left = await successor
        assert (status, left) == (200, 0)
        assert ran == [2]  # the cancelled call never ran; the next one had the slot
        assert (admission.running, admission.waiting, in_flight) == (0, 0, {})

    for cancel_first in (False, True):
        asyncio.run(walk(cancel_first))


def test_a_huge_request_id_is_shown_from_its_first_characters_only(monkeypatch) -> None:
    """The HTTP transport opens a call's ticket on its event loop: a megabyte id that needs
    escaping all along was dumped and escaped whole there (30 ms per request) before being
    cut. The log line is the same text, cut, from the id's first code points only."""
    from splice_build.mcp import cancellation
    from splice_build.security.terminal import json_terminal_safe
    from splice_build.spec import json_text

    def whole(value: str | int) -> str:  # the text the log showed, from the whole id
        text = json_terminal_safe(json_text.dumps(value))
        limit = cancellation.SHOWN_ID_CHARS
        return text if len(text) <= limit else f"{text[:limit]}…"

    dumped: list[int] = []

    class Recording:
        @staticmethod
        def dumps(value: Any) -> str:
            dumped.append(len(value) if isinstance(value, str) else 0)
            return json_text.dumps(value)

    ids: list[str | int] = [10**60, -1, 0, ""]
    for unit in ("x", "\x01", "\u2028", "\u009b", "é", '"'):
        ids += [unit * n for n in (1, 20, 62, 63, 64, 65, 66, 1 << 16)]
    expected = [whole(value) for value in ids]
    monkeypatch.setattr(cancellation, "json_text", Recording)
    assert [cancellation.shown_id(value) for value in ids] == expected
    assert max(dumped) == cancellation.SHOWN_ID_CHARS + 1


def test_a_batch_of_many_calls_files_no_id_and_is_refused_whole() -> None:
    """Over stdio a batch is queued before protocol.batch_refusal refuses it: its ticket
    filed every call's id (a 4 MiB line: 120,000 ids, 25 MB a ticket, for each of the 64
    messages the reader holds), for calls that never run. A batch with one call files it."""
    import tracemalloc

    server = Server(MemoryBackend(), ServerInfo())
    session = Session("2025-03-26", scope="stdio")
    in_flight = server._in_flight._tickets

    def call(n: Any) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": "x"}}

    many = [call(n) for n in range(20_000)]
    tracemalloc.start()
    try:
        ticket = server.track(many, session)
        held, _peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert in_flight == {} and held < 10_000
    refused = server.answer(many, session, ticket)
    assert refused == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32600, "message": "Batch of more than 32 messages"},
    }
    ticket.close()
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    for batch, filed in (([ping, call(7)], [7]), ([call(None), call(8)], []), ([call(9)], [9])):
        ticket = server.track(batch, session)
        assert [key[2] for key in in_flight] == filed
        ticket.close()
        assert in_flight == {}
