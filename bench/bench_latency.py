"""Kept-alive against fresh connections on both servers (issue #24, item 1).

A request on a kept-alive ``http.client`` connection must cost no more than the same request
on a fresh connection (docs/registry.md#latency). Every row compares the two in the same run,
alternating: the real ``splice registry serve`` (``GET /health``), the real
``splice mcp --http`` (a JSON-RPC ``ping``), and, as the before figure, uvicorn on a listening
socket made the way both servers made it before (``socket(family, SOCK_STREAM)``, so asyncio
left Nagle's algorithm on for every accepted connection). Then 64 clients, each on its own
kept-alive connection, load the registry (and, with ``SPLICE_BENCH_BEFORE_TREE``, the older
tree's registry: see ``bench_versions``).
"""

from __future__ import annotations

import http.client
import json
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from bench.common import Row, median

Request = Callable[[http.client.HTTPConnection], None]


def _compare(name: str, url: str, request: Request, *, repeat: int) -> list[Row]:
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    kept = http.client.HTTPConnection(host, port, timeout=30)
    request(kept)  # the connection is open and warm from here on
    fresh_samples: list[float] = []
    kept_samples: list[float] = []
    try:
        for _ in range(repeat):
            start = time.perf_counter()
            request(kept)
            kept_samples.append(time.perf_counter() - start)
            fresh = http.client.HTTPConnection(host, port, timeout=30)
            start = time.perf_counter()
            request(fresh)
            fresh_samples.append(time.perf_counter() - start)
            fresh.close()
    finally:
        kept.close()
    fresh_ms = median(fresh_samples) * 1000
    return [
        Row(
            f"{name}, kept-alive connection",
            median(kept_samples) * 1000,
            "ms",
            "fresh connection",
            fresh_ms,
            "≤ 1×",
        )
    ]


def _get(path: str) -> Request:
    def request(connection: http.client.HTTPConnection) -> None:
        connection.request("GET", path)
        response = connection.getresponse()
        response.read()
        assert response.status == 200, response.status

    return request


def _ping(path: str, token: str) -> Request:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
    headers = {
        "Authorization": f"Bearer {token}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }

    def request(connection: http.client.HTTPConnection) -> None:
        connection.request("POST", path, body=body, headers=headers)
        response = connection.getresponse()
        response.read()
        assert response.status == 200, response.status

    return request


@contextmanager
def _uvicorn_on_plain_socket() -> Iterator[str]:
    """The before: uvicorn on ``socket(AF_INET, SOCK_STREAM)`` (proto 0), in a thread."""
    import uvicorn

    async def app(scope: Any, receive: Any, send: Any) -> None:
        body = b'{"status":"ok"}'
        headers = [(b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    port = sock.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}/health"
    finally:
        server.should_exit = True
        thread.join(20)


def _load(name: str, url: str, *, clients: int, requests: int) -> list[Row]:
    """``clients`` threads, each on its own kept-alive connection: req/s, p50 and p99."""
    from concurrent.futures import ThreadPoolExecutor

    from bench.common import percentile

    request = _get("/health")

    def client() -> list[float]:
        parts = urlsplit(url)
        connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=60)
        samples = []
        try:
            for _ in range(requests):
                start = time.perf_counter()
                request(connection)
                samples.append(time.perf_counter() - start)
        finally:
            connection.close()
        return samples

    start = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        latencies = [s for samples in pool.map(lambda _: client(), range(clients)) for s in samples]
    elapsed = time.perf_counter() - start
    label = f"{name}, {clients} kept-alive clients"
    return [
        Row(f"{label}: GET /health", len(latencies) / elapsed, "req/s"),
        Row(f"{label}: p50", median(latencies) * 1000, "ms"),
        Row(f"{label}: p99", percentile(latencies, 99) * 1000, "ms"),
    ]


def run(quick: bool = False) -> list[Row]:
    import os

    from bench.bench_versions import BEFORE_TREE_ENV, before_argv
    from testing.mcp_clients import DEMO_TOKEN, child_env, demo_argv, free_port, http_server
    from testing.registry_server import launch, registry_server

    repeat = 20 if quick else 100
    per_client = 5 if quick else 30
    rows: list[Row] = []
    with _uvicorn_on_plain_socket() as url:
        rows += _compare("before: uvicorn, proto-0 socket", url, _get("/health"), repeat=repeat)
    with (
        tempfile.TemporaryDirectory() as tmp,
        registry_server(Path(tmp) / "data", "--request-limit", "0") as server,
    ):
        rows += _compare(
            "splice registry serve, GET /health", server.url, _get("/health"), repeat=repeat
        )
        rows += _load("splice registry serve", server.url, clients=64, requests=per_client)
    before_tree = os.environ.get(BEFORE_TREE_ENV)
    if before_tree:  # the same load on the older tree's registry
        with tempfile.TemporaryDirectory() as tmp:
            data = Path(tmp) / "data"
            before = launch(before_argv(before_tree, data), data)
            try:
                rows += _load(
                    "before: splice registry serve", before.url, clients=64, requests=per_client
                )
            finally:
                before.stop()
    argv = demo_argv("http", str(free_port()))
    with http_server(argv, env=child_env()) as (url, _process):
        rows += _compare(
            "splice mcp --http, ping",
            url,
            _ping(urlsplit(url).path, DEMO_TOKEN),
            repeat=repeat,
        )
    return rows
