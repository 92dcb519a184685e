"""Which MCP request bodies are decoded at once (``McpHttpApp._decode``, docs/mcp.md).

``watch_decodes`` wraps the decoder of ``splice_build/mcp/transport/http.py``: each large
body's decode waits until a small one has been decoded (or 0.3 s), so that bodies the
server lets decode together are seen together, and ``seen`` records, as each decode
begins, the sizes of the bodies being decoded then.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from splice_build.mcp.protocol import parse_message
from splice_build.mcp.transport import http


class Decodes:
    def __init__(self) -> None:
        self.seen: list[list[int]] = []
        self.small_decoded = threading.Event()
        self._now: list[int] = []
        self._lock = threading.Lock()

    def decode(self, data: bytes, *, max_bytes: int) -> Any:
        with self._lock:
            self._now.append(len(data))
            self.seen.append(list(self._now))
        if len(data) > http.LARGE_BODY_BYTES:
            self.small_decoded.wait(0.3)
        else:
            self.small_decoded.set()
        with self._lock:
            self._now.remove(len(data))
        return parse_message(data, max_bytes=max_bytes)

    def most_large_at_once(self) -> int:
        return max(sum(size > http.LARGE_BODY_BYTES for size in now) for now in self.seen)


def watch_decodes(monkeypatch: pytest.MonkeyPatch) -> Decodes:
    decodes = Decodes()
    monkeypatch.setattr(http, "parse_message", decodes.decode)
    return decodes


def large_ping() -> dict[str, Any]:
    """A ping whose body is over ``LARGE_BODY_BYTES``: 160 KB of ``{}``s."""
    return {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"a": [{}] * 40_000}}
