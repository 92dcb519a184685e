"""No registry answer is written on the event loop.

The loop serves every client: while it writes one answer, health checks and small reads wait.
A version answer of a wide 2 MiB manifest took about 0.1 s to write after the store's work had
run in the thread pool: under two readers of it, ``/health`` waited 155 ms (median) on a real
server. Every route that asks the store now writes its answer in the thread pool too
(``routing.threaded_json``); the bytes are those written before.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from splice_build.registry.http import answer_cache, routing
from splice_build.registry.http.app import create_app
from splice_build.registry.http.errors import json_bytes
from splice_build.registry.storage import open_service
from testing.asgi import exchange, http_scope, sending
from testing.registry_fixtures import publish

READS = {  # path → what the answer holds, computed by the service directly
    "/packages/search?q=plain": lambda s: s.search("plain", limit=None, kind=None),
    "/packages/acme/plain": lambda s: s.package("acme", "plain"),
    "/packages/acme/plain/versions": lambda s: s.versions("acme", "plain", cursor=None, limit=None),
    "/packages/acme/plain/1.0.0": lambda s: s.version_document("acme", "plain", "1.0.0").build(),
    "/packages/acme/plain/1.0.0/provenance": lambda s: s.provenance("acme", "plain", "1.0.0"),
    "/namespaces/acme": lambda s: s.namespace("acme"),
    "/namespaces/acme/keys": lambda s: s.keys("acme"),
}


async def _get(app: Any, target: str) -> tuple[int, bytes]:
    """One GET through the real ASGI app, on this thread's event loop."""
    return await exchange(app, http_scope("GET", target), sending())


def test_every_read_answer_is_written_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    publish(store, tmp_path / "work", name="plain")
    writers: dict[str, list[int]] = {}
    current: list[str] = []

    def spy(data: object) -> bytes:
        writers.setdefault(current[0], []).append(threading.get_ident())
        return json_bytes(data)

    monkeypatch.setattr(routing, "json_bytes", spy)
    monkeypatch.setattr(answer_cache, "json_bytes", spy)  # package and version answers
    service = open_service(store)
    try:
        app = create_app(service)

        async def walk() -> dict[str, tuple[int, bytes]]:
            answers = {}
            for target in [*READS, "/health"]:
                current[:] = [target]
                answers[target] = await _get(app, target)
            return answers

        answers = asyncio.run(walk())  # the loop runs on this thread
        expected = {target: json_bytes(answer(service)) for target, answer in READS.items()}
    finally:
        service.deps.meta.close()
    loop = threading.get_ident()
    for target in READS:
        assert answers[target] == (200, expected[target]), target
        assert writers[target] and loop not in writers[target], target
    assert answers["/health"][0] == 200 and writers["/health"] == [loop]  # bounded: on the loop
