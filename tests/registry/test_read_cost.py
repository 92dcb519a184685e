"""What one anonymous read of a published package costs the registry server.

A manifest may legally nest its tool input's ``default`` a million levels deep (the file limit
allows about 1,048,000, tests/registry/test_deep_answers.py). ``GET .../:version`` parsed the
stored manifest with the pure-Python ``json_text.parse_iterative`` and wrote it again with
``json_text.stringify``: about 5 s of the server's CPU for every anonymous read, for the bytes
publish had stored. The answer now carries the stored text (``json_text.parse_shallow``); the
pure-Python parser must not be reached at all, and the bytes stay those of the full parse.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from splice_build.registry.http.app import create_app
from splice_build.registry.http.errors import json_bytes
from splice_build.registry.storage import open_service
from splice_build.spec import json_text
from testing.packages import minimal_manifest
from testing.registry_fixtures import publish

DEPTH = 3000  # beyond what the C decoder reads (the interpreter's recursion limit)


def _manifest_text(depth: int) -> str:
    manifest = minimal_manifest(name="deep")
    manifest["tools"][0]["input"]["properties"]["name"]["default"] = "DEEP"
    return json.dumps(manifest).replace('"DEEP"', "[" * depth + "]" * depth)


async def _get(app: Any, path: str) -> tuple[int, bytes]:
    """One GET through the real ASGI app, in this process."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [(b"host", b"registry.test")],
        "client": ("127.0.0.1", 40000),
        "server": ("127.0.0.1", 80),
    }
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return status, body


def test_a_deep_manifest_is_answered_without_the_pure_python_parser(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    publish(store, tmp_path / "work", name="deep", files={"manifest.json": _manifest_text(DEPTH)})
    service = open_service(store)
    try:
        stored = service.deps.meta.version("@acme/deep", "1.0.0")
        assert stored is not None
        full = json_bytes(service.version("acme", "deep", "1.0.0"))  # parsed and written again

        def refuse(*_args: object, **_kwargs: object) -> object:
            raise AssertionError("the pure-Python JSON parser ran for an anonymous read")

        monkeypatch.setattr(json_text, "parse_iterative", refuse)
        status, body = asyncio.run(_get(create_app(service), "/packages/acme/deep/1.0.0"))
    finally:
        service.deps.meta.close()
    assert status == 200, body[:300]
    assert body == full
    assert stored.manifest in body.decode()
