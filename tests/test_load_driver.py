"""The load driver of the soak benchmarks (bench/load.py): its HTTP client, its bounds and its
growth slope. The benchmarks themselves never run here (``python -m bench load_registry``)."""

from __future__ import annotations

import asyncio
import os

from bench.load import Done, Failed, HttpConnection, drive, slope

ANSWERS = [
    b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello",
    b"HTTP/1.1 201 Created\r\ntransfer-encoding: chunked\r\n\r\n"
    b"3\r\nabc\r\n4;ext=1\r\ndefg\r\n0\r\n\r\n",
    b"HTTP/1.1 503 Busy\r\nretry-after: 1\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}",
]


def test_kept_alive_bodies_and_a_reconnect() -> None:
    """Both body framings on one connection; after ``connection: close`` a new one."""
    connections = []
    answered = [0]

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(writer)
        while True:
            try:
                await reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError:
                break
            writer.write(ANSWERS[min(len(ANSWERS) - 1, answered[0])])
            answered[0] += 1
            await writer.drain()
        writer.close()

    async def scenario() -> list[tuple[int, dict[str, str], bytes]]:
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        client = HttpConnection("127.0.0.1", port)
        try:
            return [await asyncio.wait_for(client.request("GET", "/"), 10) for _ in range(4)]
        finally:
            await client.close()
            server.close()

    answers = asyncio.run(scenario())
    assert [(status, body) for status, _, body in answers] == [
        (200, b"hello"),
        (201, b"abcdefg"),
        (503, b"{}"),
        (503, b"{}"),
    ]
    assert answers[2][1]["retry-after"] == "1"
    assert len(connections) == 2  # the server closed the first after the 503


def test_bounded_by_count_and_failures_counted() -> None:
    calls = [0]

    async def step() -> Done:
        calls[0] += 1
        mine = calls[0]
        await asyncio.sleep(0)
        if mine % 2:
            raise Failed("odd", "HTTP 500")
        return Done("even", 0.001)

    run = asyncio.run(
        drive([step, step], max_requests=10, seconds=60, server_pid=os.getpid(), interval=60)
    )
    assert run.requests == calls[0] == 10
    assert run.errors == {"odd: HTTP 500": 5}
    assert len(run.latencies["even"]) == 5
    assert len(run.samples) == 2  # before and after; the run ended long before 60 s


def test_slope() -> None:
    assert slope([(0, 1.0), (10, 21.0), (20, 41.0)]) == 2.0
    assert slope([(0, 5.0), (10, 5.0)]) == 0.0
    assert slope([(3, 1.0)]) == 0.0
    assert slope([(3, 1.0), (3, 9.0)]) == 0.0
