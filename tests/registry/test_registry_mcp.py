"""The registry's ``POST /mcp`` (docs/compatibility.md#mcp): the real server, the official SDK client.

Runs once per store back end (SQLite + files, PostgreSQL + S3): see conftest.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
import requests

from splice_build.spec.pack import pack_directory
from testing.mcp_clients import sdk_http
from testing.packages import minimal_manifest, write_package
from testing.registry_server import RunningRegistry, user_token

OUTPUT = {"type": "object", "properties": {"message": {"type": "string"}}}


def publish(server: RunningRegistry, token: str, root: Path, version: str, **extra: Any) -> None:
    manifest = minimal_manifest(
        namespace="finder", name="lookup", version=version, description=f"Looks {version}."
    )
    manifest["tools"][0]["output"] = OUTPUT
    manifest.update(extra)
    skill = f"# Lookup {version}\n\nFinds things.\n"
    post_package(server, token, write_package(root / version, manifest, files={"SKILL.md": skill}))


def post_package(server: RunningRegistry, token: str, directory: Path) -> None:
    """Publish the package in ``directory`` over HTTP (nothing but the server checks it)."""
    response = requests.post(
        server.url + "/publish",
        data=pack_directory(directory).archive,
        headers={"authorization": f"Bearer {token}", "content-type": "application/gzip"},
        timeout=30,
    )
    assert response.status_code == 201, response.text


@pytest.fixture(scope="module")
def published(
    server: RunningRegistry, tmp_path_factory: pytest.TempPathFactory
) -> tuple[RunningRegistry, str]:
    token = user_token(server, "finder")
    root = tmp_path_factory.mktemp("mcp-packages")
    for version in ("1.0.0", "1.2.0", "2.0.0"):
        publish(server, token, root, version)
    return server, token


def rpc(url: str, token: str | None, body: Any, **headers: str) -> requests.Response:
    sent = {"content-type": "application/json", "accept": "application/json", **headers}
    if token is not None:
        sent["authorization"] = f"Bearer {token}"
    return requests.post(url + "/mcp", data=json.dumps(body), headers=sent, timeout=10)


def test_sdk_client_initializes_and_lists(published: tuple[RunningRegistry, str]) -> None:
    server, token = published

    async def scenario() -> None:
        async with sdk_http(server.url + "/mcp", token) as session:
            info = session.initialize_result.server_info
            assert (info.name, info.title, info.version) == (
                "splice-registry",
                "Splice Registry",
                "api-2",
            )
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            assert set(tools) == {"registry_search", "registry_package_info"}
            for tool in tools.values():
                hints = tool.annotations
                assert hints is not None
                assert (hints.read_only_hint, hints.destructive_hint, hints.open_world_hint) == (
                    True,
                    False,
                    False,
                )
                assert "sandbox" not in (tool.description or "")
            assert tools["registry_search"].input_schema["required"] == ["query"]
            templates = (await session.list_resource_templates()).resource_templates
            assert [t.uri_template for t in templates] == [
                "splice://registry/{namespace}/{name}/{version}/SKILL.md"
            ]
            assert (await session.list_resources()).resources == []

    anyio.run(scenario)


def test_search_and_package_info(published: tuple[RunningRegistry, str]) -> None:
    server, token = published

    async def scenario() -> None:
        async with sdk_http(server.url + "/mcp", token) as session:
            found = await session.call_tool("registry_search", {"query": "LOOKUP", "limit": 5})
            assert not found.is_error
            assert found.structured_content == {
                "query": "lookup",
                "results": [
                    {"name": "@finder/lookup", "description": "Looks 2.0.0.", "latest": "2.0.0"}
                ],
            }
            info = await session.call_tool("registry_package_info", {"package": "@finder/lookup"})
            data = info.structured_content
            assert data is not None and not info.is_error
            assert (data["version"], data["latest"]) == ("2.0.0", "2.0.0")
            assert data["versions"] == ["1.0.0", "1.2.0", "2.0.0"]
            assert data["integrity"].startswith("sha256-")
            assert data["skillDoc"] == "splice://registry/finder/lookup/2.0.0/SKILL.md"
            assert data["tools"] == [
                {
                    "name": "lookup.hello",
                    "qualifiedName": "@finder/lookup.hello",
                    "mcpName": "finder_lookup_hello",
                    "description": "Say hello.",
                    "inputSchema": minimal_manifest()["tools"][0]["input"],
                    "outputSchema": OUTPUT,
                    "annotations": {
                        "readOnlyHint": True,
                        "destructiveHint": False,
                        "openWorldHint": False,
                    },
                }
            ]
            ranged = await session.call_tool(
                "registry_package_info", {"package": "@finder/lookup", "version": "^1.0.0"}
            )
            assert ranged.structured_content["version"] == "1.2.0"
            assert ranged.structured_content["description"] == "Looks 1.2.0."

    anyio.run(scenario)


def test_registry_errors_are_tool_errors(published: tuple[RunningRegistry, str]) -> None:
    server, token = published

    async def scenario() -> None:
        async with sdk_http(server.url + "/mcp", token) as session:
            cases = [
                ("registry_package_info", {"package": "@finder/missing"}, "NOT_FOUND: "),
                (
                    "registry_package_info",
                    {"package": "@finder/lookup", "version": "^3.0.0"},
                    'NOT_FOUND: No version of @finder/lookup matches "^3.0.0"',
                ),
                ("registry_package_info", {"package": "not a name"}, "INVALID_NAME: "),
                ("registry_search", {"query": "x", "limit": 51}, "INVALID_INPUT: "),
                ("registry_search", {"query": ""}, "INVALID_INPUT: "),
            ]
            for name, arguments, prefix in cases:
                result = await session.call_tool(name, arguments)
                assert result.is_error, (name, arguments)
                assert result.content[0].text.startswith(prefix), result.content[0].text

    anyio.run(scenario)


def test_skill_md_from_the_stored_artifact(published: tuple[RunningRegistry, str]) -> None:
    server, token = published

    async def scenario() -> None:
        async with sdk_http(server.url + "/mcp", token) as session:
            for version, shown in (("1.0.0", "1.0.0"), ("latest", "2.0.0")):
                uri = f"splice://registry/finder/lookup/{version}/SKILL.md"
                read = await session.read_resource(uri)
                assert read.contents[0].text == f"# Lookup {shown}\n\nFinds things.\n"
                assert read.contents[0].mime_type == "text/markdown"

    anyio.run(scenario)
    for uri in (
        "splice://registry/finder/lookup/9.9.9/SKILL.md",
        "splice://registry/finder/nothing/latest/SKILL.md",
        "splice://registry/finder/lookup/1.0.0/manifest.json",
    ):
        answer = rpc(
            server.url,
            token,
            {"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": uri}},
        ).json()
        assert answer["error"]["code"] == -32002, answer


def test_package_tools_are_never_executed(published: tuple[RunningRegistry, str]) -> None:
    server, token = published
    call = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "finder_lookup_hello", "arguments": {"name": "Ada"}},
    }
    answer = rpc(server.url, token, call).json()
    assert answer["error"]["code"] == -32602
    assert "Unknown tool" in answer["error"]["message"]


def test_tokens_and_http_rules(published: tuple[RunningRegistry, str]) -> None:
    server, token = published
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    assert rpc(server.url, token, ping).json() == {"jsonrpc": "2.0", "id": 1, "result": {}}
    missing = rpc(server.url, None, ping)
    assert missing.status_code == 401
    assert missing.json()["error"]["code"] == "UNAUTHENTICATED"
    store = server.backend
    assert store is not None

    def failures() -> int:
        rows = store.query("SELECT count FROM rate_limits WHERE key LIKE 'auth-fail:%'")
        return sum(int(row[0]) for row in rows)

    before = failures()
    wrong = rpc(server.url, "splice_" + "x" * 43, ping)
    assert wrong.status_code == 401 and wrong.json()["error"]["code"] == "UNAUTHENTICATED"
    assert failures() == before + 1
    assert rpc(server.url, token, ping, origin="https://evil.example").status_code == 403
    get = requests.get(
        server.url + "/mcp", headers={"authorization": f"Bearer {token}"}, timeout=10
    )
    assert get.status_code == 405 and get.headers["allow"] == "POST"
    assert rpc(server.url, token, ping, **{"content-type": "text/plain"}).status_code == 415
    assert rpc(server.url, token, ping, accept="text/html").status_code == 406
    notification = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert rpc(server.url, token, notification).status_code == 202
    big = requests.post(
        server.url + "/mcp",
        data=b" " * (1024 * 1024 + 1),
        headers={"authorization": f"Bearer {token}", "content-type": "application/json"},
        timeout=10,
    )
    assert big.status_code == 413
    assert "access-control-allow-origin" not in big.headers


def test_revoked_token_is_refused(published: tuple[RunningRegistry, str]) -> None:
    server, _token = published
    token = user_token(server, "finder")
    who = requests.get(
        server.url + "/auth/whoami", headers={"authorization": f"Bearer {token}"}, timeout=10
    ).json()
    revoked = requests.delete(
        f"{server.url}/auth/tokens/{who['token']['id']}",
        headers={"authorization": f"Bearer {token}"},
        timeout=10,
    )
    assert revoked.status_code == 200, revoked.text
    answer = rpc(server.url, token, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert answer.status_code == 401


def test_a_skill_md_is_served_with_hidden_code_points_escaped(
    server: RunningRegistry, tmp_path: Path
) -> None:
    """Tag characters spell instructions a model reads and no person sees; a publish over
    HTTP is not checked for them. The registry's resource shows them escaped, as
    ``splice mcp`` does for an installed package's SKILL.md."""
    token = user_token(server, "hider")
    manifest = minimal_manifest(namespace="hider", name="doc", version="1.0.0")
    tagged = "Greets.\U000e0049\U000e0047\U000e004e\u202e"
    directory = write_package(tmp_path, manifest, files={"SKILL.md": f"# Doc\r\n\r\n{tagged}\n"})
    post_package(server, token, directory)
    uri = "splice://registry/hider/doc/1.0.0/SKILL.md"
    body = {"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": uri}}
    answer = rpc(server.url, token, body).json()
    assert answer["result"]["contents"][0]["text"] == (
        "# Doc\n\nGreets.\\U000e0049\\U000e0047\\U000e004e\\u202e\n"
    )


def test_package_info_lists_a_bounded_set_of_versions(
    server: RunningRegistry, tmp_path: Path
) -> None:
    """A package with more versions than the registry's package view holds: the answer lists
    that view (with ``versionCount`` and ``versionsTruncated``), not every version ever
    published, and a range still resolves to a version outside it."""
    token = user_token(server, "many")
    versions = [f"1.0.{patch}" for patch in range(55)]
    for version in versions:
        manifest = minimal_manifest(namespace="many", name="pkg", version=version)
        post_package(server, token, write_package(tmp_path / version, manifest))

    async def scenario() -> None:
        async with sdk_http(server.url + "/mcp", token) as session:
            info = await session.call_tool("registry_package_info", {"package": "@many/pkg"})
            data = info.structured_content
            assert data is not None and not info.is_error
            assert (data["versionCount"], data["versionsTruncated"]) == (55, True)
            assert data["versions"] == versions[-50:]
            old = await session.call_tool(
                "registry_package_info", {"package": "@many/pkg", "version": "1.0.2"}
            )
            assert old.structured_content["version"] == "1.0.2"
            assert len(old.structured_content["versions"]) == 50

    anyio.run(scenario)


def test_large_bodies_are_decoded_one_at_a_time_across_requests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The registry's ``/mcp`` makes an app per request: the one decoder of large bodies is
    its endpoint's, shared by every request (a limiter of each request's own bounded
    nothing: 4 large bodies of 4 requests were decoded at once)."""
    import asyncio

    from splice_build.registry.http.app import create_app
    from splice_build.registry.service import admin
    from splice_build.registry.service.tokens import TokenRequest
    from splice_build.registry.storage import open_service
    from testing.asgi import exchange, http_scope, sending
    from testing.decodes import large_ping, watch_decodes
    from testing.registry import NO_LIMITS

    decodes = watch_decodes(monkeypatch)
    service = open_service(tmp_path / "registry", limits=NO_LIMITS)
    admin.create_user(service.deps, "decoder")
    token = admin.create_token(service.deps, "decoder", TokenRequest())["token"]
    app = create_app(service)

    async def post(body: bytes) -> tuple[int, bytes]:
        headers = [
            (b"authorization", f"Bearer {token}".encode()),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ]
        return await exchange(app, http_scope("POST", "/mcp", headers), sending(body))

    async def flood() -> list[tuple[int, bytes]]:
        small = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"}).encode()
        return await asyncio.gather(
            *(post(b) for b in [json.dumps(large_ping()).encode()] * 4 + [small])
        )

    try:
        answers = asyncio.run(flood())
    finally:
        service.deps.meta.close()
    assert [status for status, _body in answers] == [200] * 5, answers[0][1][:200]
    assert decodes.most_large_at_once() == 1, decodes.seen
