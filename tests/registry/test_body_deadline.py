"""A request body that never comes: ``408 TIMEOUT`` once its deadline has passed, on a JSON
route that reads its body before it checks a token (docs/registry.md#limits).

The app is driven in-process with a client that sends the head and one byte of a 100-byte
body, then nothing; the deadline is shortened so the test does not wait a minute. Before,
the route waited for the rest of the body for as long as the connection stayed open.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from splice_build.registry.http import body
from splice_build.registry.http.app import create_app
from splice_build.registry.storage import open_service
from testing.asgi import exchange, http_scope, stalling


def _post(app: Any, path: str) -> tuple[int, dict[str, Any]]:
    headers = [(b"content-type", b"application/json"), (b"content-length", b"100")]
    # One byte of the 100, then nothing: the rest of the body never comes.
    answer = exchange(app, http_scope("POST", path, headers), stalling(b"{"))
    status, payload = asyncio.run(asyncio.wait_for(answer, 30))  # far above the deadline
    return status, json.loads(payload)


@pytest.mark.parametrize("path", ["/auth/tokens", "/admin/users"])
def test_a_body_that_never_comes_is_408_timeout(tmp_path: Path, path: str) -> None:
    from splice_build.registry.client.deadline import Deadlines

    app = create_app(open_service(tmp_path / "data", admin_token_sha256="0" * 64))
    setattr(app.state, body.BODY_DEADLINES, Deadlines(0.2, 10**12))
    status, answer = _post(app, path)
    assert (status, answer["error"]["code"]) == (408, "TIMEOUT"), answer


def test_the_deadline_is_the_clients_own_for_that_size() -> None:
    """A publish of the largest body may take as long as the client gives itself
    (docs/registry.md#deadlines: 60 s + size / 65536 B/s with the defaults)."""
    from splice_build.registry.api import MAX_JSON_BODY, MAX_PUBLISH_BODY

    assert body.body_seconds(MAX_PUBLISH_BODY) == 60 + MAX_PUBLISH_BODY / 65536
    assert body.body_seconds(MAX_JSON_BODY) == 61
