"""A read answer is written once for what it is made of, and never served stale.

Every anonymous ``GET`` of a version whose manifest is 2 MiB cost the server about 0.1 s of
CPU (its manifest parsed, written compactly, then indented), for the same bytes each time:
200 such requests on 20 held connections took a real server 23.6 s of CPU. The package and
version answers are now kept by everything they are made of (http/answer_cache.py), carry an
ETag, and an ``If-None-Match`` naming it is answered 304. A publish, a signature and a key's
revocation change what is answered, in every worker of ``--workers 2`` at once; an answer
written again for a large version is charged to the client (``--read-limit``).
"""

from __future__ import annotations

import asyncio
import http.client
import json
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import pytest

from splice_build.errors import ErrorCode, RegistryError
from splice_build.records import replace
from splice_build.registry.http.answer_cache import AnswerCache
from splice_build.registry.http.app import create_app
from splice_build.registry.service import admin
from splice_build.registry.service.ratelimit import COSTLY_READ, RateLimits
from splice_build.registry.service.read import Keyed
from splice_build.registry.service.registry_service import RegistryService
from splice_build.registry.service.tokens import TokenRequest
from splice_build.registry.storage import StorageConfig, open_blobs, open_metadata, open_service
from splice_build.spec import json_text
from splice_build.spec.limits import MAX_FILE_BYTES
from splice_build.spec.signing import signing_payload
from testing.asgi import exchange, http_scope, sending
from testing.packages import minimal_manifest
from testing.registry import NO_LIMITS, artifact, free
from testing.registry_fixtures import publish
from testing.registry_server import RunningRegistry, registry_server, user_token
from testing.signing import new_key

READS = 12  # fresh connections per check: the kernel spreads them over both workers
USER = "keeper"
VERSION = f"/packages/{USER}/tool/1.0.0"
PACKAGE = f"/packages/{USER}/tool"


def test_a_read_answer_is_written_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = tmp_path / "store"
    publish(store, tmp_path / "work", name="plain")
    written: list[object] = []
    readable = json_text.readable

    def counted(value: object, **kwargs: Any) -> str:
        written.append(value)
        return readable(value, **kwargs)

    monkeypatch.setattr(json_text, "readable", counted)
    service = open_service(store)
    try:
        app = create_app(service)
        targets = ["/packages/acme/plain", "/packages/acme/plain/1.0.0"] * 3
        answers = [asyncio.run(exchange(app, http_scope("GET", t), sending())) for t in targets]
    finally:
        service.deps.meta.close()
    assert [status for status, _ in answers] == [200] * 6
    assert answers[0::2] == answers[:1] * 3 and answers[1::2] == answers[1:2] * 3
    assert len(written) == 2  # each answer written at its first read only (main: 6)


def _large_version(tmp_path: Path) -> Path:
    """A store with ``@acme/plain`` and ``@acme/big``, whose manifest is a costly read."""
    store = tmp_path / "store"
    publish(store, tmp_path / "work", name="plain")
    manifest = minimal_manifest(name="big")
    items = [f"item-{i}" for i in range(COSTLY_READ // 8)]  # ~330,000 characters
    manifest["tools"][0]["input"]["properties"]["name"]["default"] = items
    big = json.dumps(manifest)
    publish(store, tmp_path / "work", name="big", files={"manifest.json": big})
    return store


def _budgeted(store: Path, limits: RateLimits) -> RegistryService:
    """The service of ``store`` with ``limits``, its clock stopped: the budget of costly
    reads counts in fixed windows of 60 s, and a window ending between a test's reads (as
    now and then on a loaded machine) would give the budget back before the refusal."""
    config = StorageConfig()
    now = time.time()
    meta, blobs = open_metadata(store, config), open_blobs(store, config)
    return RegistryService(meta, blobs, limits=limits, clock=lambda: now)


def _read(app: Any, name: str) -> tuple[int, bytes]:
    return asyncio.run(exchange(app, http_scope("GET", f"/packages/acme/{name}/1.0.0"), sending()))


def test_answers_written_for_one_client_have_a_budget(tmp_path: Path) -> None:
    # A kept answer costs ~1 ms; one not kept (another worker, dropped past the bound, never
    # read) is written again, up to 0.8 s for a 2 MiB manifest: each such write is charged,
    # 2 costly reads up front for its ~330,000 characters, 1 once it was written in 10 ms.
    service = _budgeted(_large_version(tmp_path), replace(NO_LIMITS, costly_reads=3))
    try:
        apps = [create_app(service) for _ in range(3)]  # each keeps its own answers
        statuses = [_read(app, "big")[0] for app in apps]
        refused = _read(create_app(service), "big")[1]
        kept = _read(apps[0], "big")[0]  # still answered: kept answers cost nothing
        small = _read(create_app(service), "plain")[0]  # an answer of a small version neither
    finally:
        service.deps.meta.close()
    assert statuses == [200, 200, 429]  # main: 200, 200, 200
    assert json.loads(refused)["error"]["code"] == "RATE_LIMITED"
    assert (kept, small) == (200, 200)


def test_a_written_answer_is_charged_the_cpu_it_took(tmp_path: Path) -> None:
    # 2 MiB manifests took 50 ms to 0.79 s of a real server's CPU to write by their shape,
    # each charged one read: every costly_read_seconds of CPU begun is one (here 1 µs, so the
    # first write spends the budget of 3; main: one read each).
    limits = replace(NO_LIMITS, costly_reads=3, costly_read_seconds=1e-6)
    service = _budgeted(_large_version(tmp_path), limits)
    try:
        statuses = [_read(create_app(service), "big")[0] for _ in range(2)]
    finally:
        service.deps.meta.close()
    assert statuses == [200, 429]


def _mcp(app: Any, token: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """The JSON-RPC answer to one ``method`` request on ``POST /mcp`` of ``app``."""
    call = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    body = json.dumps(call).encode()
    headers = [
        (b"authorization", f"Bearer {token}".encode()),
        (b"content-type", b"application/json"),
        (b"accept", b"application/json"),
        (b"mcp-protocol-version", b"2025-06-18"),
        (b"content-length", str(len(body)).encode()),
    ]
    scope = http_scope("POST", "/mcp", headers)
    status, answer = asyncio.run(exchange(app, scope, sending(body)))
    assert status == 200, answer[:300]
    return json.loads(answer)


def _counted(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[Any]:
    """The arguments of each call of ``module.name`` from now on (it still runs)."""
    calls: list[Any] = []
    function = getattr(module, name)
    monkeypatch.setattr(module, name, lambda value: calls.append(value) or function(value))
    return calls


def _token(service: Any) -> str:
    """A token of a new user ``USER`` of ``service``."""
    admin.create_user(service.deps, USER)
    return admin.create_token(service.deps, USER, TokenRequest())["token"]


def _package_info(app: Any, token: str, name: str) -> dict[str, Any]:
    """The result of one ``registry_package_info`` call on ``POST /mcp`` of ``app``."""
    arguments = {"package": f"@acme/{name}"}
    params = {"name": "registry_package_info", "arguments": arguments}
    return _mcp(app, token, "tools/call", params)["result"]


def test_package_info_is_made_once_and_charged_to_its_caller(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # registry_package_info parsed and checked a version's manifest at every call: a real
    # server took 0.83 s of CPU a call for 2 MiB of lists nested 8 deep, outside --read-limit.
    # Now what it reads of a version is kept, and making it is charged as a GET's write is.
    service = _budgeted(_large_version(tmp_path), replace(NO_LIMITS, costly_reads=3))
    parsed = _counted(monkeypatch, json_text, "parse_shallow")
    try:
        token = _token(service)
        apps = [create_app(service) for _ in range(3)]  # each keeps its own
        first, kept = (_package_info(apps[0], token, "big") for _ in range(2))
        made = _package_info(apps[1], token, "big")
        parses = len(parsed)
        refused = _package_info(apps[2], token, "big")
        read = _read(apps[1], "big")[0]  # the GET path's budget is the same
        small = _package_info(apps[2], token, "plain")
        manifest = json.loads(service.deps.meta.version("@acme/big", "1.0.0").manifest)
    finally:
        service.deps.meta.close()
    schema = first["structuredContent"]["tools"][0]["inputSchema"]
    assert schema == manifest["tools"][0]["input"] and kept == first == made
    # main: parsed 3 times (once a call), the third caller answered
    assert (parses, refused["isError"]) == (2, True)
    assert refused["content"][0]["text"].startswith("RATE_LIMITED: ")
    assert (read, small["isError"]) == (429, False)


def _read_skill_md(app: Any, token: str, name: str) -> dict[str, Any]:
    """The answer to one ``resources/read`` of ``@acme/<name>@1.0.0``'s SKILL.md."""
    uri = f"splice://registry/acme/{name}/1.0.0/SKILL.md"
    return _mcp(app, token, "resources/read", {"uri": uri})


def test_a_skill_md_is_read_from_its_artifact_once_and_charged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # resources/read of a version's SKILL.md hashed and inflated its whole artifact at every
    # read (49 ms of CPU for the largest archive a registry accepts), charged to no budget.
    # Now it is read once per process and what that took is charged as a GET's write is.
    from splice_build.spec import archive

    # A budget of 2: the GET of "big" is charged 2 up front, the first read at least 1.
    limits = replace(NO_LIMITS, costly_reads=2, costly_read_seconds=1e-6)
    service = _budgeted(_large_version(tmp_path), limits)
    inflated = _counted(monkeypatch, archive, "read_archive")
    try:
        token = _token(service)
        app = create_app(service)
        first, kept = (_read_skill_md(app, token, "plain") for _ in range(2))
        read = _read(create_app(service), "big")[0]  # the budget a GET spends too
    finally:
        service.deps.meta.close()
    assert first == kept and first["result"]["contents"][0]["text"].startswith("#")
    assert (len(inflated), read) == (1, 429)  # main: inflated twice, the GET answered 200


def _get(server: RunningRegistry, path: str, etag: str | None = None) -> http.client.HTTPResponse:
    """One GET on a fresh connection, the answer read whole (``.body``)."""
    parts = urlsplit(server.url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    conn.request("GET", path, headers={"if-none-match": etag} if etag else {})
    response = conn.getresponse()
    response.body = response.read()  # type: ignore[attr-defined]
    conn.close()
    return response


def _preflight(server: RunningRegistry, path: str, headers: str) -> http.client.HTTPResponse:
    """A browser's CORS preflight of a GET that sends ``headers``."""
    parts = urlsplit(server.url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    asks = {"origin": "https://page.test", "access-control-request-method": "GET"}
    conn.request("OPTIONS", path, headers={**asks, "access-control-request-headers": headers})
    response = conn.getresponse()
    response.read()
    conn.close()
    return response


def _send(server: RunningRegistry, method: str, path: str, token: str, body: bytes) -> Any:
    parts = urlsplit(server.url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    conn.request(method, path, body=body, headers={"authorization": f"Bearer {token}"})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    assert response.status in (200, 201), data
    return json.loads(data)


def _everywhere(server: RunningRegistry, path: str) -> tuple[dict[str, Any], str]:
    """The answer every worker gives (all alike), and its ETag."""
    answers = [_get(server, path) for _ in range(READS)]
    assert {a.status for a in answers} == {200}
    assert len({a.body for a in answers}) == 1 and len({a.getheader("etag") for a in answers}) == 1
    return json.loads(answers[0].body), answers[0].getheader("etag")


def test_answers_change_in_every_worker_and_a_held_one_is_answered_304(tmp_path: Path) -> None:
    with registry_server(tmp_path / "data", "--workers", "2", "--publish-limit", "0") as server:
        token = user_token(server, USER)
        _send(server, "POST", "/publish", token, artifact(tmp_path / "a", USER, "tool", "1.0.0"))
        seen, etag = _everywhere(server, VERSION)
        assert seen["signatures"] == [] and etag.startswith('"')

        held = _get(server, VERSION, etag)
        assert (held.status, held.body, held.getheader("etag")) == (304, b"", etag)
        assert held.getheader("access-control-allow-origin") == "*"
        # A page of another origin may read the etag and ask with it (main: neither).
        assert "etag" in held.getheader("access-control-expose-headers").split(", ")
        preflight = _preflight(server, VERSION, "if-none-match")
        assert preflight.getheader("access-control-allow-headers") == "if-none-match"
        for header in (f"W/{etag}", f'"other", {etag}', "*"):
            assert _get(server, VERSION, header).status == 304, header
        other = _get(server, VERSION, '"other"')
        assert (other.status, json.loads(other.body)) == (200, seen)

        key = new_key(tmp_path / "keys")
        _send(server, "POST", f"/namespaces/{USER}/keys", token, _json(publicKey=key.public_key))
        payload = signing_payload(f"@{USER}/tool", "1.0.0", seen["integrity"])
        sign = _json(keyId=key.key_id, signature=key.sign(payload))
        _send(server, "POST", VERSION + "/signatures", token, sign)
        signed, signed_etag = _everywhere(server, VERSION)
        assert [s["keyId"] for s in signed["signatures"]] == [key.key_id]
        assert signed["signatures"][0]["revokedAt"] is None and signed_etag != etag
        assert _get(server, VERSION, etag).status == 200  # the old answer is no longer held

        _send(server, "DELETE", f"/namespaces/{USER}/keys/{quote(key.key_id, safe='')}", token, b"")
        revoked, _ = _everywhere(server, VERSION)
        assert revoked["signatures"][0]["revokedAt"] is not None

        before, _ = _everywhere(server, PACKAGE)
        _send(server, "POST", "/publish", token, artifact(tmp_path / "b", USER, "tool", "1.0.1"))
        after, _ = _everywhere(server, PACKAGE)
    assert (before["versionCount"], before["latest"]) == (1, "1.0.0")
    assert (after["versionCount"], after["latest"]) == (2, "1.0.1")
    assert [v["version"] for v in after["versions"]] == ["1.0.0", "1.0.1"]


def _json(**fields: str) -> bytes:
    return json.dumps(fields).encode()


def test_kept_answers_stay_within_their_bound() -> None:
    built: list[str] = []

    def document(name: str, size: int) -> Keyed:
        return Keyed(name, lambda: built.append(name) or {"pad": "x" * size})

    answers = AnswerCache(max_bytes=3000, max_answer=2000)
    for name in ("a", "b", "a", "c", "a", "b", "huge", "huge"):
        answers.get(document(name, 5000 if name == "huge" else 1000), free)
    # a, b kept; a used again; c drops b (the least recently used); b drops c; huge never kept
    assert built == ["a", "b", "c", "b", "huge", "huge"]


def test_a_manifest_stored_larger_than_its_file_bound_is_refused(tmp_path: Path) -> None:
    # The stored text is JSON.stringify's: 1e20 is its 21 digits. A 2 MiB file of them was a
    # 9.2 MB manifest and a 16 MB answer, over the kept bound, written at 0.6 s of the
    # server's CPU for every read (main: published).
    store = tmp_path / "store"
    manifest = minimal_manifest(name="grown")
    manifest["tools"][0]["input"]["properties"]["name"]["default"] = "SLOT"
    count = MAX_FILE_BYTES // 20  # 5 characters each in the file, 22 as stored
    text = json.dumps(manifest).replace('"SLOT"', "[" + ",".join(["1e20"] * count) + "]")
    assert len(text) < MAX_FILE_BYTES // 2
    with pytest.raises(RegistryError) as refused:
        publish(store, tmp_path / "work", name="grown", files={"manifest.json": text})
    assert refused.value.code is ErrorCode.INVALID_PACKAGE
    service = open_service(store)
    try:
        assert service.deps.meta.package("@acme/grown") is None
    finally:
        service.deps.meta.close()
    assert not list((store / "artifacts").rglob("*grown*"))  # refused before it is stored
