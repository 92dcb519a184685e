"""``notifications/cancelled`` (docs/mcp.md#cancellation), through the real `splice mcp` and
a real sandbox, with one admission slot: a cancelled call's Node process is gone at once, its
slot serves the next call and no answer is sent for its id. Cancellations of another
session's call, of another id (``"1"`` is not ``1``), of an unknown or finished call and of
``initialize`` do nothing. Before, every cancellation was ignored: the process ran on to its
60 s timeout and held the only slot."""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx2 as httpx
import pytest

from splice_build.sdk import Splice
from testing.mcp_clients import (
    LineClient,
    child_env,
    http_server,
    read_by_the_server,
    sdk_http,
    splice_argv,
)
from testing.pool import sandbox_pids, wait_until_gone
from testing.registry_fixtures import embedded_store, new_project, publish

pytestmark = pytest.mark.node

TOKEN = "cancel-token-0123456789abcdefghij"
# Waits for ever when asked to (a timer keeps Node alive; the promise never settles), under
# the process title it is given: the warm pool's spare, started for the next call, has the
# same command line.
HANG_TOOL = """export default async function t(input) {
  if (!input.hang) return { done: true };
  process.title = input.hang;
  setInterval(() => {}, 1000);
  return new Promise(() => {});
}
"""
TOOL = "acme_hang_t"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str], str]:
    """A project with @acme/hang; its environment (one slot); a prefix unique to this run
    for the titles of the calls' processes."""
    base = tmp_path_factory.mktemp("mcp-cancel")
    home = base / "home" / ".splice"
    env = {"HOME": str(base / "home"), "SPLICE_HOME": str(home)}
    tool = {
        "name": "t",
        "description": "Waits.",
        "entry": "tools/hello.js",
        "timeoutMs": 60000,
        "input": {"type": "object", "properties": {"hang": {"type": "string"}}},
    }
    publish(embedded_store(home), base / "work", name="hang", manifest={"tools": [tool]},
            files={"tools/hello.js": HANG_TOOL})  # fmt: skip
    project = new_project(base / "project")
    with Splice(project, env={**os.environ, **env}) as splice:  # in-process: no CLI start-up
        splice.add(["@acme/hang"])
    return (
        project,
        child_env({**env, "SPLICE_MCP_MAX_CALLS": "1", "SPLICE_MCP_TOKEN": TOKEN}),
        f"{base}/hang",
    )


def _started(needle: str) -> None:
    """Wait until the hanging call's Node process runs (30 s: a bound on a wait that must
    end, spent only on a failure; a loaded machine takes seconds to start Node)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if sandbox_pids(needle):
            return
        threading.Event().wait(0.025)
    raise AssertionError("the call's process never started")


async def _cancel_with_the_sdk(session: Any, title: str) -> None:
    """The SDK client abandons a running call (its cancel scope): it sends the cancellation,
    and the process is gone."""
    async with anyio.create_task_group() as group:
        scope = anyio.CancelScope()

        async def hang() -> None:
            with scope:
                await session.call_tool(TOOL, {"hang": title})

        group.start_soon(hang)
        await anyio.to_thread.run_sync(_started, title)
        scope.cancel()
    # Off the loop: the client sends its notification from there.
    assert await anyio.to_thread.run_sync(wait_until_gone, title) == []


def _cancel(request_id: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": request_id},
    }


def _call(request_id: Any, hang: str | None = None) -> dict[str, Any]:
    arguments = {"name": TOOL, "arguments": {"hang": hang} if hang else {}}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": arguments}


def test_over_stdio_only_the_exact_id_cancels_and_nothing_is_answered_for_it(installed) -> None:
    """Cancellations are applied in stdin order, so a ping's answer says the one before it
    was applied."""
    project, env, prefix = installed
    needle, queued = f"{prefix}-stdio-run", f"{prefix}-stdio-queued"
    client = LineClient(splice_argv("mcp"), env=env, cwd=project)
    try:
        init = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        }
        client.request({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": init})
        assert client.receive()["id"] == "init"
        client.request(_cancel("init"))  # initialize cannot be cancelled: ignored
        client.request(_call(1, needle))
        _started(needle)
        client.request(_call(5, queued))  # waits for the only slot
        client.request(_cancel(5))  # leaves the queue
        for ignored in ("1", 99, None, [1]):  # another id (a string), unknown, malformed
            client.request(_cancel(ignored))
        client.request({k: v for k, v in _cancel(1).items() if k != "jsonrpc"})
        assert client.receive()["error"]["code"] == -32600  # not JSON-RPC 2.0: answered
        client.request({"jsonrpc": "2.0", "id": 2, "method": "ping"})
        assert client.receive() == {"jsonrpc": "2.0", "id": 2, "result": {}}
        assert sandbox_pids(needle) != []  # still running
        client.request(_cancel(1))
        assert wait_until_gone(needle) == []
        client.request(_call(3))  # served once the slot is free
        answered = client.receive()
        assert answered["id"] == 3 and answered["result"]["structuredContent"] == {"done": True}
        client.request(_cancel(3))  # finished: ignored
        client.request({"jsonrpc": "2.0", "id": 4, "method": "ping"})
        assert client.receive()["id"] == 4
    finally:
        code, rest, stderr = client.close()
    assert code == 0
    assert [json.loads(line)["id"] for line in rest.splitlines()] == []  # nothing for 1 or 5
    assert "tools/call 1 cancelled: notifications/cancelled from its client" in stderr
    assert "tools/call 5 cancelled: notifications/cancelled from its client" in stderr
    assert sandbox_pids(queued) == []  # it never ran


def test_over_stdio_a_client_that_closes_stdout_cancels_its_calls(installed) -> None:
    """A client that exits (here: closes both pipes) mid-call is gone as an HTTP client
    closing its connection is: its running call's process ends at once, its queued call
    never runs, and the server exits. Before, the server and the call's Node ran on to
    the tool's 60 s timeout for nobody."""
    project, env, prefix = installed
    running, queued = f"{prefix}-gone-run", f"{prefix}-gone-queued"
    client = LineClient(splice_argv("mcp"), env=env, cwd=project)
    assert client.process.stdin is not None and client.process.stdout is not None
    client.request(_call(1, running))
    _started(running)
    client.request(_call(2, queued))  # waits for the only slot
    client.request({"jsonrpc": "2.0", "id": 3, "method": "ping"})
    assert client.receive()["id"] == 3  # the call is queued by now
    client.process.stdin.close()
    client.process.stdout.close()
    assert wait_until_gone(running) == []
    code = client.process.wait(timeout=30)
    stderr = client.process.stderr.read().decode() if client.process.stderr else ""
    assert code == 0, stderr
    for request_id in (1, 2):
        assert f"tools/call {request_id} cancelled: its client closed stdout" in stderr
    assert sandbox_pids(queued) == []  # it never ran


def test_over_stdio_a_cancellation_sent_after_many_queued_calls_is_read(installed) -> None:
    """Seventy calls queued behind a running one: the reader held 64 messages and read no
    further, so the client's ``notifications/cancelled`` of the running call waited unread
    for it to end (its 60 s timeout). Small messages are held by the thousand now."""
    project, env, prefix = installed
    running, queued = f"{prefix}-full-run", f"{prefix}-full-queued"
    client = LineClient(splice_argv("mcp"), env=env, cwd=project)
    assert client.process.stdin is not None and client.process.stdout is not None
    try:
        client.request(_call(1, running))
        _started(running)
        for request_id in range(2, 72):
            client.request(_call(request_id, queued))
        client.request(_cancel(1))
        assert wait_until_gone(running) == []
    finally:
        client.process.stdin.close()
        client.process.stdout.close()  # the queued calls are cancelled: the client is gone
        client.process.wait(timeout=30)
    assert wait_until_gone(queued) == []


def test_over_http_only_the_calling_session_cancels(installed) -> None:
    """The SDK client cancels its call; then, by hand: cancellations from another session,
    without a session or of another id do nothing, and the call gets no answer."""
    project, env, prefix = installed
    needle = f"{prefix}-http"
    argv = splice_argv("mcp", "--http", "--port", "0")
    with http_server(argv, env=env, cwd=project) as (url, _process):

        async def with_the_sdk() -> None:
            async with sdk_http(url, TOKEN) as session:
                await _cancel_with_the_sdk(session, f"{prefix}-sdk")

        anyio.run(with_the_sdk)
        headers = {
            "Authorization": f"Bearer {TOKEN}",
            "Accept": "application/json",
            "mcp-protocol-version": "2025-11-25",
        }

        def post(message: dict[str, Any], session: str | None) -> httpx.Response:
            extra = {"mcp-session-id": session} if session else {}
            return httpx.post(url, json=message, headers={**headers, **extra}, timeout=60)

        answers: list[httpx.Response] = []
        caller = threading.Thread(target=lambda: answers.append(post(_call(1, needle), "sa")))
        caller.start()
        _started(needle)  # the SDK's cancelled call left the only slot free
        # Another session, no session, another id of the same session: nothing is cancelled.
        for message, session in ((_cancel(1), "sb"), (_cancel(1), None), (_cancel("1"), "sa")):
            assert post(message, session).status_code == 202
        assert sandbox_pids(needle) != []
        assert post(_cancel(1), "sa").status_code == 202
        caller.join(30)
        assert [(a.status_code, a.content) for a in answers] == [(202, b"")]  # no answer
        assert wait_until_gone(needle) == []

        # A client that closes its connection cancels its running call (no session needed).
        left = f"{prefix}-left"
        with _raw_call(url, _call(7, left)):
            _started(left)  # the only slot was free again
        assert wait_until_gone(left) == []
        served = post(_call(8), "sb").json()  # and is again
        assert served["result"]["structuredContent"] == {"done": True}


def _raw_call(url: str, message: dict[str, object]) -> socket.socket:
    """A connection to the server at ``url`` that has sent ``message`` as one whole POST
    (closing it is a client that left)."""
    body = json.dumps(message).encode()
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
        "Content-Type: application/json\r\nmcp-protocol-version: 2025-11-25\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    parts = urlsplit(url)
    connection = socket.create_connection((parts.hostname, parts.port))
    try:
        connection.sendall(head.encode() + body)
    except BaseException:
        connection.close()
        raise
    return connection


def test_a_call_cancelled_as_it_succeeds_leaves_no_kept_process(installed, monkeypatch) -> None:
    """With reuse, a cancel that comes after the result was read (the session already
    decided to keep the process) still ends the process: it is never given back."""
    from splice_build.cancel import Cancellation, cancellable
    from splice_build.runtime import runtime as runtime_module

    project, env, _prefix = installed
    token = Cancellation()
    run = runtime_module.Session.run

    def run_then_cancel(self: Any) -> Any:
        outcome = run(self)
        token.cancel()
        return outcome

    monkeypatch.setattr(runtime_module.Session, "run", run_then_cancel)
    with Splice(project, env=env, reuse=True) as splice, cancellable(token):
        assert splice.run(TOOL, {}).ok
        runtime = splice._runtime_instance
        assert runtime is not None and runtime._reuse is not None
        assert runtime._reuse.idle_pids() == []


# -- SIGTERM (docs/mcp.md#stopping) -----------------------------------------------------------
# Before, `splice mcp` waited for a running call to its timeout (here 60 s; a supervisor kills
# long before) and then exited 143 (INTERRUPTED), a failed stop to systemd and a container
# runtime. Now: the waiting call is refused at once, the running one is cut after the grace
# (0 s here), both are answered -32003 "Server stopping", no Node process or temporary
# directory is left and the exit status is 0.
_STOPPING = {"code": -32003, "message": "Server stopping", "data": {"retryAfter": 1}}


def _stopping_env(env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    (tmp_path / "tmp").mkdir()
    return {**env, "SPLICE_MCP_STOP_GRACE": "0", "TMPDIR": str(tmp_path / "tmp")}


def test_sigterm_stops_a_stdio_server_cleanly(installed, tmp_path: Path) -> None:
    project, env, prefix = installed
    running, waiting = f"{prefix}-term-stdio-run", f"{prefix}-term-stdio-wait"
    client = LineClient(splice_argv("mcp"), env=_stopping_env(env, tmp_path), cwd=project)
    try:
        client.request(_call(1, running))
        _started(running)
        client.request(_call(2, waiting))  # waits for the only slot
        client.request({"jsonrpc": "2.0", "id": 3, "method": "ping"})
        assert client.receive()["id"] == 3  # the call is queued by now
        client.process.send_signal(signal.SIGTERM)
    finally:
        code, rest, stderr = client.close()
    answers = sorted((json.loads(line) for line in rest.splitlines()), key=lambda a: a["id"])
    assert answers == [{"jsonrpc": "2.0", "id": i, "error": _STOPPING} for i in (1, 2)], stderr
    assert code == 0, stderr
    assert "stopped by SIGTERM" in stderr and "INTERRUPTED" not in stderr, stderr
    assert sandbox_pids(running) == [] and sandbox_pids(waiting) == []
    assert list((tmp_path / "tmp").iterdir()) == []


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_or_sighup_stops_an_http_server_cleanly(
    installed, tmp_path: Path, sig: signal.Signals
) -> None:
    """SIGHUP (the server's terminal closed) stops it as SIGTERM does, then exits 129
    ``INTERRUPTED``: uvicorn handled SIGTERM and SIGINT only, and the CLI's SIGHUP handler
    ended the event loop while the running call's thread went on to the tool's timeout."""
    project, env, prefix = installed
    running, waiting = f"{prefix}-{sig.name}-http-run", f"{prefix}-{sig.name}-http-wait"
    argv = splice_argv("mcp", "--http", "--port", "0")
    headers = {"Authorization": f"Bearer {TOKEN}", "Accept": "application/json"}
    with http_server(argv, env=_stopping_env(env, tmp_path), cwd=project) as (url, process):
        answers: list[httpx.Response] = []
        caller = threading.Thread(
            target=lambda: answers.append(
                httpx.post(url, json=_call(1, running), headers=headers, timeout=60)
            )
        )
        caller.start()
        _started(running)
        with _raw_call(url, _call(2, waiting)) as second:  # waits for the only slot
            deadline = time.monotonic() + 30
            while not read_by_the_server(second) and time.monotonic() < deadline:
                threading.Event().wait(0.01)
            process.send_signal(sig)
            code = process.wait(timeout=90)
            refused = second.makefile("rb").read()
        stderr = process.stderr.read().decode() if process.stderr else ""
        caller.join(30)
    assert code == (0 if sig == signal.SIGTERM else 128 + sig), stderr
    assert [(a.status_code, a.json()) for a in answers] == [
        (503, {"jsonrpc": "2.0", "id": 1, "error": _STOPPING})
    ], stderr
    assert answers[0].headers["retry-after"] == "1"
    status, _, rest = refused.partition(b"\r\n")
    assert status == b"HTTP/1.1 503 Service Unavailable", refused
    assert json.loads(rest.split(b"\r\n\r\n", 1)[1]) == {
        "jsonrpc": "2.0",
        "id": 2,
        "error": _STOPPING,
    }
    assert ("interrupted by" in stderr) == (sig == signal.SIGHUP), stderr
    # a server's stop leaves nothing to finish or undo: no "run the command again" hint
    assert "run the command again" not in stderr, stderr
    assert sandbox_pids(running) == [] and sandbox_pids(waiting) == []
    assert list((tmp_path / "tmp").iterdir()) == []
