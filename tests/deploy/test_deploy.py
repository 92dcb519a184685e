"""docs/deploy.md for real: nginx in front of two registries (PostgreSQL + S3) and two MCP servers.

Publishes and installs are the real `splice` CLI against nginx's URL, tool calls the official
``mcp`` SDK over Streamable HTTP through nginx. Clients on other loopback addresses
(127.0.0.2, 127.0.0.3) show that rate limits key on the address nginx received from, not on
nginx's own, and that ``X-Forwarded-For`` counts only from the trusted proxy. The last test
kills one instance of each kind (it runs last: the module shares one deployment).
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import requests
from mcp.shared.exceptions import MCPError

from splice_build.project.lockfile import load_lockfile
from testing.deploy import PROXY_ADDRESS, request_from
from testing.mcp_clients import sdk_http
from testing.rate_windows import away_from_window_ends
from testing.registry import package_dir
from tests.deploy.conftest import MCP_TOKEN, PACKAGE, Deployment, new_token

CLIENT_A = "127.0.0.2"
CLIENT_B = "127.0.0.3"
FAILED_AUTH_BUDGET = 20  # RateLimits.failed_auth, the default `splice registry serve` runs with
FAILED_AUTH_WINDOW = 600  # RateLimits.failed_auth_period: the failures count in fixed windows
WHOAMI = "/auth/whoami"


def _upstream_ports(deployment: Deployment, kind: str) -> set[str]:
    if kind == "registry":
        return {r.url.removeprefix("http://") for r in deployment.registries}
    return {url.removeprefix("http://").removesuffix("/mcp") for url, _ in deployment.mcp}


def _hello_tool(tools: list) -> str:
    [name] = [tool.name for tool in tools if tool.name.endswith("hello")]
    return name


async def _call(session: Any, name: str, who: str) -> Any:
    """One tool call; an MCP error (a JSON-RPC error, or an HTTP status from nginx or an
    instance) fails the test with its code, message and data, which the SDK's own message
    leaves out."""
    try:
        return await session.call_tool(name, {"name": who})
    except MCPError as exc:
        raise AssertionError(
            f"call {who}: MCP error {exc.code} {exc.message!r} {exc.data!r}"
        ) from exc


async def _calls(url: str, count: int, label: str) -> list[str]:
    """``count`` tool calls on one new SDK session through ``url``; their messages."""
    messages = []
    async with sdk_http(url, MCP_TOKEN) as session:
        name = _hello_tool((await session.list_tools()).tools)
        for i in range(count):
            result = await _call(session, name, f"{label}{i}")
            assert not result.is_error, result
            messages.append(result.structured_content["message"])
    return messages


def test_publish_install_and_tool_calls_go_through_nginx(
    deployment: Deployment, tmp_path: Path
) -> None:
    nginx = deployment.nginx
    entry = load_lockfile(deployment.project).get(PACKAGE)
    assert entry is not None and (entry.version, entry.registry) == ("1.0.0", nginx.registry_url)
    published = deployment.splice(
        "publish", str(package_dir(tmp_path, version="1.0.1")), token=True
    )
    assert published.code == 0, published.stderr
    project = tmp_path / "second"
    project.mkdir()
    assert deployment.splice("init", cwd=project).code == 0
    added = deployment.splice("--json", "add", PACKAGE, cwd=project)
    assert added.code == 0, added.stderr
    installed = load_lockfile(project).get(PACKAGE)
    assert installed is not None and installed.version == "1.0.1"

    messages = asyncio.run(_calls(nginx.mcp_url, 6, "client-"))
    assert messages == [f"Hello, client-{i}." for i in range(6)]

    log = nginx.access_log()
    # Both registries took part (the metadata and artifacts they share are PostgreSQL and S3),
    # and one MCP session's calls were answered by both MCP instances: nothing per process.
    registry_used = {
        line.split()[4].removeprefix("upstream=") for line in log if "/mcp" not in line
    }
    assert _upstream_ports(deployment, "registry") <= registry_used, log
    sessions: dict[str, set[str]] = {}
    for line in log:
        fields = line.split()
        session = fields[5].removeprefix("session=").strip('"')
        if fields[1:3] == ["POST", "/mcp"] and fields[3] == "200" and session != "-":
            sessions.setdefault(session, set()).add(fields[4].removeprefix("upstream="))
    assert len(sessions) == 1, log
    assert next(iter(sessions.values())) == _upstream_ports(deployment, "mcp"), log


def test_rate_limits_see_the_real_client_addresses(deployment: Deployment) -> None:
    proxy = deployment.nginx.registry_url + WHOAMI
    direct = deployment.registries[1].url + WHOAMI

    def whoami(source: str, url: str, token: str, forwarded: str | None = None) -> int:
        headers = {"Authorization": f"Bearer {token}"}
        if forwarded is not None:
            headers["X-Forwarded-For"] = forwarded
        return request_from(source, url, headers=headers).status

    # A spends its failed-token budget through nginx (spread over both registries, counted in
    # PostgreSQL under A's address); then even its failures are refused. All in one window.
    away_from_window_ends(FAILED_AUTH_WINDOW, margin=15)
    for _ in range(FAILED_AUTH_BUDGET):
        assert whoami(CLIENT_A, proxy, new_token()) == 401
    assert whoami(CLIENT_A, proxy, new_token()) == 429
    assert whoami(CLIENT_A, proxy, deployment.token) == 200  # a valid token still passes
    # B, behind the same nginx, is not locked out: it is counted under its own address.
    assert whoami(CLIENT_B, proxy, new_token()) == 401
    assert whoami(CLIENT_B, proxy, deployment.token) == 200
    # B cannot borrow A's address (nginx overwrites X-Forwarded-For) ...
    assert whoami(CLIENT_B, proxy, new_token(), forwarded=CLIENT_A) == 401
    # ... nor claim one going to a registry directly: a peer that is not the trusted proxy has
    # its header ignored, and A's own address is locked out there too.
    assert whoami(CLIENT_B, direct, new_token(), forwarded=CLIENT_A) == 401
    assert whoami(CLIENT_A, direct, new_token(), forwarded=CLIENT_B) == 429
    # From the trusted proxy's address the header is believed.
    assert whoami(PROXY_ADDRESS, direct, new_token(), forwarded=CLIENT_A) == 429


def test_killing_one_instance_of_each_loses_no_retried_request(
    deployment: Deployment, tmp_path: Path
) -> None:
    nginx = deployment.nginx
    reads_url = nginx.registry_url + "/packages/acme/greeter"
    statuses: list[int | str] = []  # a status, or why there was no answer
    stop = threading.Event()

    def read_loop() -> None:
        with requests.Session() as session:  # one kept-alive connection to nginx
            while not stop.is_set() or len(statuses) < 40:
                try:
                    statuses.append(session.get(reads_url, timeout=30).status_code)
                except requests.RequestException as exc:
                    statuses.append(repr(exc))  # lost

    async def scenario() -> list[str]:
        async with sdk_http(nginx.mcp_url, MCP_TOKEN) as session:
            name = _hello_tool((await session.list_tools()).tools)
            before = [await _call(session, name, f"b{i}") for i in range(4)]
            # A session opened on either instance goes on through the other one alone.
            _url, process = deployment.mcp[0]
            process.kill()
            process.wait()
            after = [await _call(session, name, f"a{i}") for i in range(6)]
        for result in (*before, *after):
            assert not result.is_error, result
        messages = await _calls(nginx.mcp_url, 2, "new-")  # a new session, too
        return [r.structured_content["message"] for r in (*before, *after)] + messages

    reader = threading.Thread(target=read_loop)
    reader.start()
    try:
        for _ in range(3000):  # a bound on the wait, not a timing assertion
            if len(statuses) >= 20 or not reader.is_alive():
                break
            stop.wait(0.01)
        deployment.registries[0].kill()  # SIGKILL while the reads go on
        messages = asyncio.run(scenario())
        published = deployment.splice(
            "publish", str(package_dir(tmp_path, version="1.0.2")), token=True
        )
        project = tmp_path / "after-kill"
        project.mkdir()
        assert deployment.splice("init", cwd=project).code == 0
        added = deployment.splice("--json", "add", f"{PACKAGE}@1.0.2", cwd=project)
    finally:
        stop.set()
        reader.join(60)
    assert published.code == 0, published.stderr
    assert added.code == 0, added.stderr
    # One read may be cut: the one in flight on the reader's one connection when SIGKILL hit,
    # if part of its answer had already left nginx, which can then not retry it
    # (docs/deploy.md, "What is retried and what is not"). Nothing else is lost.
    lost = [s for s in statuses if s != 200]
    assert statuses and len(lost) <= 1, lost
    assert all("IncompleteRead" in str(s) for s in lost), lost
    assert messages[:4] == [f"Hello, b{i}." for i in range(4)]
    assert messages[4:] == [f"Hello, a{i}." for i in range(6)] + ["Hello, new-0.", "Hello, new-1."]
    assert "upstream" in nginx.error_log()  # nginx did see the dead instances
