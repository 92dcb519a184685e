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
from splice_build.mcp.protocol import Server
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
