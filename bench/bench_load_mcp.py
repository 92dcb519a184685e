"""`splice mcp --http` under 64 concurrent loopback clients (issue #21 item 2, issue #24
item 6), for ``--minutes`` (default 1; the issue's soak is ``--minutes 10``), bounded by a
request count too.

A project with ``@splice/example`` added by the real CLI; the server runs with its defaults
(admission control: N = the cores, docs/mcp.md#admission-control). Every client opens a
session (``initialize``) and then calls ``splice_example_hello`` back to back on one
kept-alive connection; a call refused with 503 waits its ``Retry-After`` (not counted in
its latency) and is counted as "refused", not as an error. Sampled: the server and every
process below it (its sandbox processes).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

from bench.common import Row, example_project, splice_argv
from bench.load import Done, Failed, HttpConnection, Step, drive, interval_for, rows

CLIENTS = 64
MAX_REQUESTS = 1_000_000
DEFAULT_MINUTES = 1.0
QUICK_MINUTES = 0.2
TOKEN = "bench-token-0123456789abcdefghij"
SERVER_BUSY = -32003  # splice_build.mcp.admission.SERVER_BUSY, without importing the server
CALL = {"name": "splice_example_hello", "arguments": {"name": "Ada"}}


def _body(method: str, params: dict[str, object]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()


def _client(port: int) -> Step:
    connection = HttpConnection("127.0.0.1", port)
    headers = {
        "authorization": f"Bearer {TOKEN}",
        "content-type": "application/json",
        "accept": "application/json",
    }
    call = _body("tools/call", CALL)

    async def step() -> Done:
        if "mcp-session-id" not in headers:
            status, answer, _ = await connection.request(
                "POST", "/mcp", headers, _body("initialize", {"protocolVersion": "2025-06-18"})
            )
            if status != 200 or "mcp-session-id" not in answer:
                raise Failed("initialize", f"HTTP {status}")
            headers["mcp-session-id"] = answer["mcp-session-id"]
        started = time.perf_counter()
        status, answer, data = await connection.request("POST", "/mcp", headers, call)
        elapsed = time.perf_counter() - started
        body = json.loads(data) if data else {}
        if status == 200 and body.get("result", {}).get("isError") is False:
            return Done("tools/call served", elapsed)
        if status == 503 and body.get("error", {}).get("code") == SERVER_BUSY:
            await asyncio.sleep(float(answer.get("retry-after", "1")))
            return Done("tools/call refused (503)", elapsed)
        raise Failed("tools/call", f"HTTP {status} {data[:80]!r}")

    return step


def run(quick: bool = False, minutes: float | None = None) -> list[Row]:
    minutes = minutes or (QUICK_MINUTES if quick else DEFAULT_MINUTES)
    with tempfile.TemporaryDirectory(prefix="bench-load-mcp-") as tmp:
        base = Path(tmp)
        env = {
            **os.environ,
            "HOME": str(base),
            "SPLICE_HOME": str(base / ".splice"),
            "SPLICE_MCP_TOKEN": TOKEN,
        }
        project = example_project(base, env)
        process = subprocess.Popen(
            splice_argv("mcp", "--http", "--port", "0"),
            cwd=project,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        try:
            assert process.stdout is not None
            url = process.stdout.readline().decode().strip()
            port = int(url.rsplit(":", 1)[1].split("/", 1)[0])
            seconds = minutes * 60
            result = asyncio.run(
                drive(
                    [_client(port) for _ in range(CLIENTS)],
                    max_requests=MAX_REQUESTS,
                    seconds=seconds,
                    server_pid=process.pid,
                    interval=interval_for(seconds),
                )
            )
        finally:
            process.terminate()
            process.wait(timeout=30)
    targets = {"tools/call served": "≤ 3000 ms", "tools/call refused (503)": "≤ 50 ms"}
    label = f"splice mcp --http, {CLIENTS} clients, {minutes:g} min"
    return rows(label, result, latency_target=targets)
