"""MCP `tools/call` of example.hello over stdio: calls/s with 1 and 4 callers, p50/p99 latency,
as ratios to a cold `splice run example.hello` (whole process) measured in the same run, and
the server's resident set (plus its sandbox processes).

Three servers are compared: `splice mcp` as shipped (with its warm pool of sandbox
processes), the same server without a pool (``COLD_SERVER``: one Node start per call, on the
call's path), to show what the pool buys, and `splice mcp --reuse` (opt-in: a process serves
successive calls of one package, docs/runtime.md#opt-in-reuse).

The 4-caller rows are set against the ceiling of one fresh process per call: how many
``node --permission -e 0`` the same Node starts per second, 4 at a time (issue #22 item 1:
≥ 0.8 × for the servers that start a process per call), measured in the same run; and what
the whole machine spends per call against per bare start (/proc/stat: kernel work charged to
no process counts too), with its kernel share. Last, the server's own CPU per call in a
project of 20 packages against the example project's (a call re-checks only its package).

A fourth server is a reference only: `splice mcp` with the OS layer switched off by the user
setting ``isolation = in-process``, to show how much of the gap to the ceiling is the OS
layer's and how much is the rest of a call (docs/runtime.md, "The ceiling of one process per
call")."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.common import (
    REPO,
    Row,
    bare_node_rate,
    example_project,
    machine_cpu_ms,
    median,
    percentile,
    splice_argv,
    time_command,
)

HELLO = {"name": "splice_example_hello", "arguments": {"name": "Ada"}}
COLD_SERVER = """
import os, sys
from pathlib import Path
from splice_build.mcp.backend import INSTRUCTIONS, InstalledBackend
from splice_build.mcp.interface import ServerInfo
from splice_build.mcp.protocol import Server
from splice_build.mcp.transport.stdio import claim_stdout, serve_stdio
from splice_build.sdk import Splice
splice = Splice(Path.cwd(), env=os.environ)
server = Server(InstalledBackend(splice), ServerInfo(version="bench", instructions=INSTRUCTIONS))
serve_stdio(server, sys.stdin.buffer, claim_stdout(), log=lambda message: None, max_calls=os.cpu_count() or 1)
"""


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

    def rss_mib(self) -> tuple[float, float]:
        """Resident set of the server and of all its child processes, in MiB."""
        children = _children(self._process.pid)
        return _rss(self._process.pid), sum(_rss(pid) for pid in children)

    def close(self) -> None:
        assert self._process.stdin is not None
        self._process.stdin.close()
        self._process.wait(timeout=30)


def _rss(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _children(pid: int) -> list[int]:
    """Child processes of every thread of ``pid`` (the pool's thread starts the warm ones)."""
    found: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children", encoding="utf-8") as f:
                found += [int(p) for p in f.read().split()]
    except OSError:
        pass
    return found


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


CEILING = "node --permission -e 0, 4 at a time"
CEILING_CPU = "machine CPU per start of " + CEILING
CEILING_KERNEL = "kernel CPU per start of " + CEILING


def _spent(before: tuple[float, float] | None, count: int) -> tuple[float, float] | None:
    """Machine CPU (user, kernel) per item since ``before``, in ms."""
    after = machine_cpu_ms()
    if before is None or after is None:
        return None
    return (after[0] - before[0]) / count, (after[1] - before[1]) / count


def _serve(
    label: str,
    argv: list[str],
    env: dict[str, str],
    project: Path,
    calls: int,
    cold_ms: float,
    target: str | None,
) -> list[Row]:
    """The server's rows; the 4-caller row's baseline value (the ceiling) is filled in by
    ``run`` once every server is measured."""
    client = _StdioClient(argv, env=env, cwd=project)
    try:
        client.call("initialize", {"protocolVersion": "2025-11-25"})
        client.call("tools/call", HELLO)  # warm-up
        rate_1, latency_1 = _load(client, 1, calls)
        before = machine_cpu_ms()
        rate_4, latency_4 = _load(client, 4, calls)
        spent = _spent(before, 4 * calls)
        server_rss, children_rss = client.rss_mib()
    finally:
        client.close()
    cold_rate = 1000 / cold_ms
    rows = [
        Row(f"{label}: 1 caller", rate_1, "calls/s", "cold splice run", cold_rate),
        Row(f"{label}: 4 callers", rate_4, "calls/s", CEILING, None, target),
    ]
    for callers, latencies in ((1, latency_1), (4, latency_4)):
        for name, value in (("p50", median(latencies)), ("p99", percentile(latencies, 99))):
            rows.append(
                Row(
                    f"{label}: {name}, {callers} caller(s)",
                    value * 1000,
                    "ms",
                    "cold splice run",
                    cold_ms,
                )
            )
    if spent is not None:
        rows += [
            Row(f"{label}: machine CPU per call, 4 callers", sum(spent), "ms", CEILING_CPU),
            Row(f"{label}: of which kernel", spent[1], "ms", CEILING_KERNEL),
        ]
    rows.append(Row(f"{label}: server RSS", server_rss, "MiB"))
    rows.append(Row(f"{label}: RSS of its sandbox processes", children_rss, "MiB"))
    return rows


def _server_cpu_ms(pid: int) -> float:
    """CPU time (user + system) the process itself has used, in ms."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def _per_package_cost(base: Path, env: dict[str, str], project: Path, *, calls: int) -> list[Row]:
    """The server's own CPU per call (1 caller) in a project of ``MANY`` packages, against the
    example project's: a call re-checks its own package, never the others (``calls`` is not
    cut by --quick: the kernel counts CPU in clock ticks)."""
    from testing.registry_fixtures import embedded_store, publish

    many = base / "many"
    many.mkdir()
    others = [f"@acme/pkg{i:02d}" for i in range(MANY - 1)]
    for package_id in others:
        publish(embedded_store(base / ".splice"), base / "work", name=package_id.split("/")[1])
    for args in (("init",), ("add", "@splice/example", *others)):
        subprocess.run(splice_argv(*args), cwd=many, env=env, check=True, capture_output=True)
    cost: dict[Path, list[float]] = {project: [], many: []}
    for _ in range(3):  # interleaved, as the machine drifts
        for root, samples in cost.items():
            client = _StdioClient(splice_argv("mcp"), env=env, cwd=root)
            try:
                client.call("initialize", {"protocolVersion": "2025-11-25"})
                client.call("tools/call", HELLO)
                before = _server_cpu_ms(client._process.pid)
                _load(client, 1, calls)
                samples.append((_server_cpu_ms(client._process.pid) - before) / calls)
            finally:
                client.close()
    return [
        Row(
            f"splice mcp: server CPU per call, {MANY} packages",
            median(cost[many]),
            "ms",
            "1 package",
            median(cost[project]),
            "≤ 1.2×",
        )
    ]


MANY = 20
OS_LAYER_OFF = "splice mcp (warm pool), OS layer off"


def _in_process_env(base: Path, env: dict[str, str]) -> dict[str, str]:
    """The environment of a server whose user setting switches the OS layer off
    (``isolation = in-process``, docs/runtime.md): a reference, not a way to serve. It shows
    what one fresh process per call reaches without namespaces, file view or seccomp, so the
    4-caller ceiling can be split into the OS layer's share and the rest. The home is a copy
    of the one that installed the project: a home runs only what its own cache derived from
    the artifacts (docs/security.md#the-locks-files-digest-is-derived-here)."""
    home = base / "home-in-process"
    shutil.copytree(env["SPLICE_HOME"], home, symlinks=True)
    (home / "config.json").write_text(json.dumps({"isolation": "in-process"}), encoding="utf-8")
    return {**env, "SPLICE_HOME": str(home)}


def run(quick: bool = False) -> list[Row]:
    calls = 10 if quick else 50
    with tempfile.TemporaryDirectory(prefix="bench-mcp-") as tmp:
        base = Path(tmp)
        env = {**os.environ, "HOME": str(base), "SPLICE_HOME": str(base / ".splice")}
        project = example_project(base, env)
        cold = time_command(
            splice_argv("run", "example.hello", "name=Ada"),
            repeat=3 if quick else 10,
            env=env,
            cwd=project,
        )
        cold_ms = median(cold) * 1000
        unpooled = [sys.executable, "-c", COLD_SERVER]
        unpooled_env = {**env, "PYTHONPATH": str(REPO)}
        servers = [
            ("splice mcp (warm pool)", splice_argv("mcp"), env, "≥ 0.8×"),
            ("mcp without a pool", unpooled, unpooled_env, "≥ 0.8×"),
            ("splice mcp --reuse", splice_argv("mcp", "--reuse"), env, None),
            (OS_LAYER_OFF, splice_argv("mcp"), _in_process_env(base, env), None),
        ]
        # The ceiling is measured before each server and once after the last (the median of
        # the four), so a machine whose load drifts weighs on both sides alike.
        rates: list[float] = []
        costs: list[tuple[float, float]] = []

        def measure_ceiling() -> None:
            before = machine_cpu_ms()
            rates.append(bare_node_rate(concurrent=4, starts=4 * calls))
            spent = _spent(before, 4 * calls)
            if spent is not None:
                costs.append(spent)

        measure_ceiling()
        rows: list[Row] = []
        for label, argv, server_env, target in servers:
            rows += _serve(label, argv, server_env, project, calls, cold_ms, target)
            measure_ceiling()
        ceiling = median(rates)
        rows.append(Row(f"{CEILING}: starts/s", ceiling, "starts/s"))
        baselines = {CEILING: ceiling}
        if costs:
            baselines[CEILING_CPU] = median([sum(cost) for cost in costs])
            baselines[CEILING_KERNEL] = median([cost[1] for cost in costs])
        rows += _per_package_cost(base, env, project, calls=50)
        return [
            Row(r.name, r.value, r.unit, r.baseline, baselines.get(r.baseline), r.target)
            if r.baseline in (CEILING, CEILING_CPU, CEILING_KERNEL)
            else r
            for r in rows
        ]
