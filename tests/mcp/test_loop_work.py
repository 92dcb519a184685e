"""``splice mcp --http`` decodes no body and writes no answer on its event loop.

The loop serves every client: decoding a 1 MiB body there took up to 0.15 s, and a ping sent
meanwhile waited (109 ms median behind two senders of such bodies, on a real server). Bodies
are now decoded in the thread pool and answers written on the thread that answers them
(``McpHttpApp._answer``); the bytes are the same.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from splice_build.mcp.admission import AsyncAdmission
from splice_build.mcp.interface import ServerInfo
from splice_build.mcp.protocol import Server, Session, encode, parse_message
from splice_build.mcp.transport import http
from splice_build.mcp.transport.http import McpHttpApp, token_digest
from testing.asgi import exchange, http_scope, sending
from testing.decodes import large_ping, watch_decodes
from testing.mcp_clients import DEMO_SKILL_URI, DEMO_TOKEN, demo_backend

MESSAGES = [
    {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"_meta": {"x": [0] * 1000}}},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    {"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": {"uri": DEMO_SKILL_URI}},
    {
        "jsonrpc": "2.0",
        "id": 4,
        "method": "tools/call",  # admitted: answered on a call thread of its own
        "params": {"name": "demo_echo_echo", "arguments": {"text": "hi"}},
    },
]
HEADERS = [
    (b"authorization", f"Bearer {DEMO_TOKEN}".encode()),
    (b"content-type", b"application/json"),
    (b"accept", b"application/json"),
    (b"mcp-protocol-version", b"2025-06-18"),
]


async def _until(condition: Callable[[], bool]) -> None:
    """Poll ``condition`` on this event loop; 30 s is only a bound on a wait that must end
    (a loaded machine can leave a thread unscheduled for seconds), spent only on a failure."""
    deadline = time.monotonic() + 30
    while not condition() and time.monotonic() < deadline:
        await asyncio.sleep(0.01)


async def _post(app: McpHttpApp, body: bytes) -> tuple[int, bytes]:
    """One POST through the real ASGI app, on this thread's event loop."""
    headers = [*HEADERS, (b"content-length", str(len(body)).encode())]
    return await exchange(app, http_scope("POST", "/mcp", headers), sending(body))


def test_bodies_are_decoded_and_answers_written_off_the_event_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    threads: dict[str, list[int]] = {"decode": [], "encode": []}

    def decoding(data: bytes, *, max_bytes: int) -> Any:
        threads["decode"].append(threading.get_ident())
        return parse_message(data, max_bytes=max_bytes)

    def encoding(message: Any) -> bytes:
        threads["encode"].append(threading.get_ident())
        return encode(message)

    monkeypatch.setattr(http, "parse_message", decoding)
    monkeypatch.setattr(http, "encode", encoding)
    server = Server(demo_backend(), ServerInfo(version="0.0.0-demo", instructions="Demo."))

    async def walk() -> list[tuple[int, bytes]]:
        app = McpHttpApp(server, token_digest(DEMO_TOKEN), AsyncAdmission(1))
        return [await _post(app, json.dumps(message).encode()) for message in MESSAGES]

    answers = asyncio.run(walk())  # the loop runs on this thread
    loop = threading.get_ident()
    assert len(threads["decode"]) == len(threads["encode"]) == len(MESSAGES)
    assert loop not in threads["decode"] + threads["encode"]
    for message, (status, body) in zip(MESSAGES, answers, strict=True):
        assert "result" in json.loads(body), body
        assert (status, body) == (200, encode(server.answer(message, Session("2025-06-18"))))


def test_large_bodies_are_decoded_one_at_a_time_and_small_ones_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A body's decoded objects take up to 24 times its size (1 MiB of ``{}`` is 350,000
    dicts): the pool's 40 threads decoding such bodies at once held 1.1 GB for 40 of them on
    a real server, and a small ping from another client waited 5-13 s for a thread. Large
    bodies now take turns (the interpreter lock serializes their decoding all the same), and
    a small one decoded meanwhile does not wait for them."""
    decodes = watch_decodes(monkeypatch)
    server = Server(demo_backend(), ServerInfo(version="0.0.0-demo", instructions="Demo."))
    small = {"jsonrpc": "2.0", "id": 2, "method": "ping"}

    async def flood() -> list[tuple[int, bytes]]:
        app = McpHttpApp(server, token_digest(DEMO_TOKEN), AsyncAdmission(1))
        bodies = [json.dumps(large_ping()).encode()] * 4 + [json.dumps(small).encode()]
        return await asyncio.gather(*(_post(app, body) for body in bodies))

    answers = asyncio.run(flood())
    assert [status for status, _body in answers] == [200] * 5
    assert decodes.small_decoded.is_set()
    assert decodes.most_large_at_once() == 1, decodes.seen


@pytest.mark.parametrize("then", ["admitted", "stopped"])
def test_a_large_call_waits_for_its_slot_as_its_bytes(then: str) -> None:
    """A call waiting for a slot held its decoded request, up to 24 times its body: 8 calls
    of 1 MiB of ``{}`` behind a running one were 282 MB of a real server, and the queue is 8
    calls per slot. A large one now waits as its bytes, decoded again once admitted, or
    refused "Server stopping" with its id when the server stops first."""
    import tracemalloc

    from testing.mcp_memory import MemoryBackend, descriptor

    started, release = threading.Event(), threading.Event()

    def hang(_: object) -> dict[str, Any]:
        started.set()
        release.wait(30)
        return {}

    backend = MemoryBackend()
    backend.add_tool(descriptor("@acme/hang", "t"), hang)
    server = Server(backend, ServerInfo(version="9.9.9"))
    admission = AsyncAdmission(1)

    def call(request_id: int, arguments: dict[str, Any]) -> bytes:
        params = {"name": "acme_hang_t", "arguments": arguments}
        return json.dumps(
            {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
        ).encode()

    large = call(2, {"a": [{}] * 200_000})  # 800 KB

    async def queued() -> tuple[list[tuple[int, bytes]], int]:
        app = McpHttpApp(server, token_digest(DEMO_TOKEN), admission)
        running = asyncio.ensure_future(_post(app, call(1, {})))
        await _until(started.is_set)
        tracemalloc.start()
        try:
            waiting = asyncio.ensure_future(_post(app, large))
            await _until(lambda: bool(admission.waiting) or waiting.done())
            assert admission.waiting == 1
            # The decoding thread keeps its result until it next runs (anyio's worker drops
            # it after handing it over): on a loaded machine, after the call has begun to
            # wait. What the wait itself holds is measured once that thread has run.
            await _until(lambda: tracemalloc.get_traced_memory()[0] < 4 * len(large))
            held = tracemalloc.get_traced_memory()[0]
        finally:
            tracemalloc.stop()
        if then == "stopped":
            server.begin_stop(5)
            await asyncio.wait([waiting])
        release.set()
        return list(await asyncio.gather(running, waiting)), held

    answers, held = asyncio.run(queued())
    assert held < 4 * len(large), held  # its bytes (a copy or two), not 20 MB of objects
    assert answers[0][0] == 200
    status, body = answers[1]
    if then == "admitted":
        assert (status, json.loads(body)["id"]) == (200, 2)
    else:
        stopping = {"code": -32003, "message": "Server stopping", "data": {"retryAfter": 1}}
        assert (status, json.loads(body)) == (503, {"jsonrpc": "2.0", "id": 2, "error": stopping})
