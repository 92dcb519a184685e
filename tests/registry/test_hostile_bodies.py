"""Hostile JSON bodies on every POST/PUT route of a real registry (docs/registry.md#limits).

The routes are walked from the app's own route table. A body the hostile-input decoder
refuses (lone surrogates, invalid UTF-8, deep nesting, huge numbers) is 400 ``BAD_REQUEST``
in the registry's error shape; a route that never reads its body as JSON answers exactly as
it answers ``{}``; ``/mcp`` answers with its JSON-RPC parse error. Never a 500, the server
answers a valid request afterwards, and its stderr has no traceback.
"""

from __future__ import annotations

import http.client
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.routing import Route

from splice_build.registry.http.app import create_app
from splice_build.registry.storage import open_service
from testing.hostile_json import hostile_documents
from testing.registry_server import ADMIN_TOKEN, RunningRegistry, registry_server, user_token

JSON_RPC_PARSE_ERROR = {
    "jsonrpc": "2.0",
    "id": None,
    "error": {"code": -32700, "message": "Parse error"},
}


def _route_table(data: Path) -> list[tuple[str, str]]:
    """(method, path) of every route that takes a body; ``/mcp`` takes any method."""
    targets = []
    for route in create_app(open_service(data)).routes:
        assert isinstance(route, Route)
        for method in sorted({"POST", "PUT"} & set(route.methods or {"POST"})):
            targets.append((method, re.sub(r"\{[^}]+\}", "acme", route.path)))
    return targets


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunningRegistry, str]]:
    data = tmp_path_factory.mktemp("hostile-registry")
    with registry_server(data, "--request-limit", "0", "--publish-limit", "0") as running:
        yield running, user_token(running, "fuzzer")


def send(
    running: RunningRegistry, token: str, method: str, path: str, body: bytes
) -> tuple[int, Any]:
    parts = urlsplit(running.url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    headers = {
        "authorization": f"Bearer {ADMIN_TOKEN if path.startswith('/admin/') else token}",
        "content-type": "application/json",
        "accept": "application/json",
    }
    try:
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
        data = response.read()
        return response.status, json.loads(data) if data else None
    finally:
        connection.close()


def _registry_error(answer: Any) -> str:
    """The error code of a registry error document (asserting its shape)."""
    assert isinstance(answer, dict) and list(answer) == ["error"], answer
    error = answer["error"]
    assert isinstance(error["code"], str) and isinstance(error["message"], str), answer
    return str(error["code"])


def _template(slot: str, part: bytes) -> bytes:
    parts = {"label": b'"ci"', "key": b'"scopes"', "value": b"[]", "name": b'"acme"'}
    parts[slot] = part
    return (
        b'{"label":' + parts["label"] + b"," + parts["key"] + b":" + parts["value"]
        + b',"name":' + parts["name"] + b"}"
    )  # fmt: skip


# 64 KiB bodies: "{"a":" five bytes a level keeps 10,000 levels inside the limit.
hostile_bodies = hostile_documents(
    _template, ("key", "name"), ("label", "value"), most_depth=10_000
)
KNOWN = [
    b'{"label":"\\ud800"}',
    b"[" * 60_000,
    b'{"label":' + b"1" * 10_000 + b"}",
    b'{"label":1e400}',
    b'{"label":"\xff\xfe"}',
]


def test_every_body_route_refuses_hostile_json(
    registry: tuple[RunningRegistry, str], tmp_path: Path
) -> None:
    running, token = registry
    targets = _route_table(tmp_path / "table")
    assert ("POST", "/auth/tokens") in targets and ("POST", "/mcp") in targets
    baseline = {target: send(running, token, *target, b"{}") for target in targets}

    def check(target: tuple[str, str], document: bytes) -> None:
        status, answer = send(running, token, *target, document)
        assert status < 500, (target, document[:80], answer)
        if target[1] == "/mcp":
            assert (status, answer) == (400, JSON_RPC_PARSE_ERROR)
            return
        code = _registry_error(answer)
        base_status, base_answer = baseline[target]
        refused = (status, code) in ((400, "BAD_REQUEST"), (422, "INVALID_PACKAGE"))
        assert refused or (status, answer) == (base_status, base_answer), (
            target,
            document[:80],
            status,
            answer,
        )

    for target in targets:
        for document in KNOWN:
            check(target, document)

    @settings(
        max_examples=200,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )
    @given(st.sampled_from(targets), hostile_bodies)
    def one(target: tuple[str, str], document: bytes) -> None:
        check(target, document)

    one()
    status, answer = send(running, token, "POST", "/auth/tokens", b'{"label":"after"}')
    assert status == 201, answer
    running.stop()
    assert running.process.stderr is not None
    stderr = running.process.stderr.read()
    assert "Traceback" not in stderr, stderr[-2000:]
