"""MCP `tools/call` of example.hello over stdio: calls/s with 1 and 4 callers, p50/p99 latency,
as ratios to a cold `splice run example.hello` (whole process) measured in the same run."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.common import Row, median, percentile, splice_argv, time_command

HELLO = {"name": "splice_example_hello", "arguments": {"name": "Ada"}}


class _StdioClient:
    """Pipelined newline-delimited JSON-RPC: any thread may call, one reader matches ids."""

    def __init__(self, argv: list[str], *, env: dict[str, str], cwd: Path) -> None:
        self._process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=cwd,
        )
        self._lock = threading.Lock()
        self._next = 0
        self._waiting: dict[int, tuple[threading.Event, list[Any]]] = {}
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self._process.stdout is not None
        for line in self._process.stdout:
            message = json.loads(line)
            waiter = self._waiting.pop(message.get("id"), None)
            if waiter is not None:
                waiter[1].append(message)
                waiter[0].set()

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        event: threading.Event = threading.Event()
        box: list[Any] = []
        with self._lock:
            self._next += 1
            request_id = self._next
            self._waiting[request_id] = (event, box)
            data = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
            assert self._process.stdin is not None
            self._process.stdin.write(json.dumps(data).encode() + b"\n")
            self._process.stdin.flush()
        if not event.wait(60):
            raise TimeoutError(method)
        return box[0]

    def close(self) -> None:
        assert self._process.stdin is not None
        self._process.stdin.close()
        self._process.wait(timeout=30)


def _load(client: _StdioClient, callers: int, calls_each: int) -> tuple[float, list[float]]:
    """Total calls/s and per-call latencies (seconds) of ``callers`` threads."""
    latencies: list[float] = []
    guard = threading.Lock()

    def caller() -> None:
        for _ in range(calls_each):
            start = time.perf_counter()
            answer = client.call("tools/call", HELLO)
            elapsed = time.perf_counter() - start
            if answer.get("result", {}).get("isError") is not False:
                raise RuntimeError(f"call failed: {answer}")
            with guard:
                latencies.append(elapsed)

    threads = [threading.Thread(target=caller) for _ in range(callers)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return callers * calls_each / (time.perf_counter() - started), latencies


def _project(base: Path, env: dict[str, str]) -> Path:
    project = base / "project"
    project.mkdir()
    for args in (("init",), ("add", "@splice/example")):
        subprocess.run(splice_argv(*args), cwd=project, env=env, check=True, capture_output=True)
    return project


def run(quick: bool = False) -> list[Row]:
    calls = 10 if quick else 40
    with tempfile.TemporaryDirectory(prefix="bench-mcp-") as tmp:
        base = Path(tmp)
        env = {**os.environ, "HOME": str(base), "SPLICE_HOME": str(base / ".splice")}
        project = _project(base, env)
        cold = time_command(
            splice_argv("run", "example.hello", "name=Ada"),
            repeat=3 if quick else 10,
            env=env,
            cwd=project,
        )
        client = _StdioClient(splice_argv("mcp"), env=env, cwd=project)
        try:
            client.call("initialize", {"protocolVersion": "2025-11-25"})
            client.call("tools/call", HELLO)  # warm-up
            rate_1, latency_1 = _load(client, 1, calls)
            rate_4, latency_4 = _load(client, 4, calls // 2)
        finally:
            client.close()
    cold_ms = median(cold) * 1000
    cold_rate = 1000 / cold_ms
    return [
        Row("mcp tools/call, 1 caller", rate_1, "calls/s", "cold splice run", cold_rate),
        Row(
            "mcp tools/call, 4 callers",
            rate_4,
            "calls/s",
            "cold splice run",
            cold_rate,
            "≥ 50 calls/s",
        ),
        Row(
            "mcp tools/call p50, 1 caller",
            median(latency_1) * 1000,
            "ms",
            "cold splice run",
            cold_ms,
        ),
        Row(
            "mcp tools/call p99, 1 caller",
            percentile(latency_1, 99) * 1000,
            "ms",
            "cold splice run",
            cold_ms,
        ),
        Row(
            "mcp tools/call p50, 4 callers",
            median(latency_4) * 1000,
            "ms",
            "cold splice run",
            cold_ms,
        ),
        Row(
            "mcp tools/call p99, 4 callers",
            percentile(latency_4, 99) * 1000,
            "ms",
            "cold splice run",
            cold_ms,
        ),
    ]
