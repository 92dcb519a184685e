"""`splice mcp --http` under load (docs/mcp.md#admission-control): 64 concurrent loopback
clients against 4, each a kept-alive connection with its own session calling
``splice_example_hello`` back to back (a refused call waits its ``Retry-After``).

Reported per run: p50/p99 latency of served calls, p99 latency of refusals (503), refusals,
and served calls/s as a ratio to 4 clients in the same run. The "no admission" run sets
``--max-calls 64``, which lets every call run at once as the server did before. Each run is
bounded by a call count and a time limit (the machine is shared).

With ``SPLICE_BENCH_BEFORE_TREE=<an export of an older tree>`` (see ``bench_versions``) the
64-client run with the default N is repeated against that tree's server and this one,
alternating (before, after, before, after), in the same run: the "before:" and "again:" rows.
"""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.bench_versions import BEFORE_TREE_ENV
from bench.common import Row, example_project, median, percentile, splice_argv

TOKEN = "bench-token-0123456789abcdefghij"
CALL = {"name": "splice_example_hello", "arguments": {"name": "Ada"}}


class _Client:
    """One kept-alive connection and one MCP session."""

    def __init__(self, port: int) -> None:
        self._connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self._headers = {
            "Authorization": f"Bearer {TOKEN}",
            "Content-Type": "application/json",
            "Accept": "application/json",
        }
        status, headers, _ = self.post("initialize", {"protocolVersion": "2025-06-18"})
        assert status == 200, status
        self._headers["mcp-session-id"] = headers["mcp-session-id"]

    def post(self, method: str, params: dict[str, Any]) -> tuple[int, dict[str, str], Any]:
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
        self._connection.request("POST", "/mcp", body=body, headers=self._headers)
        response = self._connection.getresponse()
        data = response.read()
        headers = {key.lower(): value for key, value in response.getheaders()}
        return response.status, headers, json.loads(data) if data else None

    def close(self) -> None:
        self._connection.close()


def _load(port: int, clients: int, total: int, seconds: float) -> dict[str, Any]:
    served: list[float] = []
    refused: list[float] = []
    failed = [0]
    lock = threading.Lock()
    budget = [total]
    stop_at = time.monotonic() + seconds
    ready = threading.Barrier(clients + 1)

    def client() -> None:
        session = _Client(port)
        ready.wait()
        try:
            while time.monotonic() < stop_at:
                with lock:
                    if budget[0] <= 0:
                        return
                started = time.perf_counter()
                status, headers, body = session.post("tools/call", CALL)
                elapsed = time.perf_counter() - started
                with lock:
                    if status == 200 and "result" in body:
                        served.append(elapsed)
                        budget[0] -= 1  # the bound counts served calls
                    elif status == 503 and body["error"]["code"] == -32003:
                        refused.append(elapsed)
                    else:
                        failed[0] += 1
                if status == 503:
                    time.sleep(float(headers["retry-after"]))
        finally:
            session.close()

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    ready.wait()
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - began
    return {"served": served, "refused": refused, "failed": failed[0], "rate": len(served) / wall}


def _server(
    project: Path, env: dict[str, str], max_calls: int | None, tree: str | None = None
) -> tuple[Any, int]:
    argv = splice_argv("mcp", "--http", "--port", "0")
    if tree is not None:  # the same command with the code of ``tree``
        script = (
            f"import sys; sys.path.insert(0, {tree!r}); "
            "from splice_build.cli.main import main; sys.exit(main())"
        )
        argv = [sys.executable, "-c", script, *argv[1:]]
    if max_calls is not None:
        argv += ["--max-calls", str(max_calls)]
    process = subprocess.Popen(
        argv, cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert process.stdout is not None
    url = process.stdout.readline().decode().strip()
    port = int(url.rsplit(":", 1)[1].split("/", 1)[0])
    return process, port


def _rows(label: str, result: dict[str, Any], base_rate: float | None) -> list[Row]:
    served, refused = result["served"], result["refused"]
    rows = [
        Row(f"{label}: served calls/s", result["rate"], "calls/s", "4 clients", base_rate),
        Row(f"{label}: p50 served", median(served) * 1000 if served else 0, "ms"),
        Row(
            f"{label}: p99 served",
            percentile(served, 99) * 1000 if served else 0,
            "ms",
            target="≤ 3000 ms",
        ),
        Row(f"{label}: refused (503)", len(refused), "calls"),
        Row(f"{label}: other failures", result["failed"], "calls", target="0"),
    ]
    if refused:
        rows.append(
            Row(f"{label}: p99 refusal", percentile(refused, 99) * 1000, "ms", target="≤ 50 ms")
        )
    return rows


def run(quick: bool = False) -> list[Row]:
    total, seconds = (120, 8.0) if quick else (600, 20.0)
    with tempfile.TemporaryDirectory(prefix="bench-mcp-admission-") as tmp:
        base = Path(tmp)
        env = {
            **os.environ,
            "HOME": str(base),
            "SPLICE_HOME": str(base / ".splice"),
            "SPLICE_MCP_TOKEN": TOKEN,
        }
        project = example_project(base, env)
        rows: list[Row] = []
        base_rate: float | None = None
        default = f"admission (N = {os.cpu_count()}), 64 clients"
        plan: list[tuple[str, int, int | None, str | None]] = [
            (f"admission (N = {os.cpu_count()}), 4 clients", 4, None, None),
            (default, 64, None, None),
        ]
        before = os.environ.get(BEFORE_TREE_ENV)
        if before:
            plan[1:1] = [(f"before: {default}", 64, None, before)]
            plan += [
                (f"before, again: {default}", 64, None, before),
                (f"again: {default}", 64, None, None),
            ]
        plan += [
            ("admission (--max-calls 4), 64 clients", 64, 4, None),
            ("no admission (--max-calls 64), 64 clients", 64, 64, None),
        ]
        for label, clients, max_calls, tree in plan:
            process, port = _server(project, env, max_calls, tree)
            try:
                _load(port, 2, 8, seconds)  # warm-up: imports, the pool's first processes
                result = _load(port, clients, total, seconds)
            finally:
                process.terminate()
                process.wait(timeout=30)
            if base_rate is None:
                base_rate = result["rate"]
            rows += _rows(label, result, base_rate)
        return rows
