"""Both servers' listening socket: every accepted connection runs with TCP_NODELAY
(docs/registry.md#latency), checked on the server side of real connections.

Without it, a response on a kept-alive connection waits for the client's delayed ACK (a ~40 ms
floor per request); the latency itself is measured in ``bench/bench_latency.py``, never here.
"""

from __future__ import annotations

import ast
import asyncio
import http.client
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from splice_build.listen import listening_socket

PACKAGE = Path(__file__).resolve().parent.parent / "splice_build"
START_UP = ("registry/http/server.py", "mcp/transport/http.py")


def _nodelay(sock: socket.socket) -> int:
    return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)


def test_a_connection_accepted_by_the_kernel_has_nodelay() -> None:
    listener = listening_socket("127.0.0.1", 0)
    with listener, socket.create_connection(listener.getsockname()[:2]):
        accepted, _ = listener.accept()
        with accepted:
            assert _nodelay(accepted) == 1


def test_asyncio_sets_nodelay_on_the_transports_it_accepts() -> None:
    seen: list[int] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()
        made = loop.create_future()

        class Probe(asyncio.Protocol):
            def connection_made(self, transport: Any) -> None:
                sock = transport.get_extra_info("socket")
                made.set_result((sock.proto, _nodelay(sock)))

        listener = listening_socket("127.0.0.1", 0)
        server = await loop.create_server(Probe, sock=listener)
        async with server:
            _, writer = await asyncio.open_connection(*listener.getsockname()[:2])
            proto, nodelay = await asyncio.wait_for(made, 10)
            seen.extend([proto, nodelay])
            writer.close()

    asyncio.run(main())
    assert seen == [socket.IPPROTO_TCP, 1]


@contextmanager
def _uvicorn(listener: socket.socket) -> Iterator[Any]:
    import uvicorn

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            pytest.fail("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield server
    finally:
        server.should_exit = True
        thread.join(20)


def test_uvicorn_connections_on_the_listening_socket_have_nodelay() -> None:
    """The servers' stack as they run it: uvicorn on the socket ``listening_socket`` made."""
    listener = listening_socket("127.0.0.1", 0)
    host, port = listener.getsockname()[:2]
    with _uvicorn(listener) as server:
        client = http.client.HTTPConnection(host, port, timeout=10)
        try:
            for _ in range(3):  # the same kept-alive connection each time
                client.request("GET", "/health")
                assert client.getresponse().read() == b"ok"
            connections = list(server.server_state.connections)
            assert len(connections) == 1
            accepted = connections[0].transport.get_extra_info("socket")
            assert _nodelay(accepted) == 1
        finally:
            client.close()


@pytest.mark.parametrize("module", START_UP)
def test_each_server_listens_through_the_shared_socket(module: str) -> None:
    """Both start-ups bind with ``listening_socket`` and create no socket of their own."""
    tree = ast.parse((PACKAGE / module).read_text(encoding="utf-8"))
    calls = [
        node.func
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute))
    ]
    names = {f.id if isinstance(f, ast.Name) else f.attr for f in calls}
    assert "listening_socket" in names
    assert not any(
        isinstance(f, ast.Attribute)
        and f.attr == "socket"
        and isinstance(f.value, ast.Name)
        and f.value.id == "socket"
        for f in calls
    )
