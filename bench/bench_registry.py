"""Registry throughput through the real server, 8 concurrent clients, 1 against 2 workers.

Two servers run side by side on fresh data directories, ``splice registry serve --workers
1`` and ``--workers 2``, and every workload (health, publish, download, package read, a page
of 1,000 versions) is measured in rounds that alternate between them (1, 2, 2, 1, ...), so a change of the
machine's load during the run weighs on both alike; a row is the median of its rounds, and
"2 ÷ 1 workers" is the median of each round pair's own ratio (the two halves of a pair ran
back to back, so it is the figure least moved by the other users of the machine). Each
request is on a fresh connection (``http.client``, lighter on the client's CPU than
``requests``), as the kernel then spreads connections over the workers. Baselines in the
same run: ``GET /health`` (the HTTP stack's floor) for the one-worker rows, the same row
with one worker for the two-worker rows. "server CPU per request" is the CPU time of the
server's processes (``/proc``) over its requests. Rate limits are off (``--publish-limit 0
--request-limit 0``). The clients are threads of this process, on the same cores.
"""

from __future__ import annotations

import http.client
import os
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from urllib.parse import urlsplit

from bench.common import Row, median, percentile

CLIENTS = 8
WORKERS = (1, 2)
VERSIONS_PAGE = "/packages/bench/pkg/versions?limit=1000"
Job = Callable[[], object]


def _request(url: str, method: str, path: str, body: bytes | None, headers: dict[str, str]) -> None:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    try:
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        response.read()
        if response.status not in (200, 201):
            raise AssertionError(f"{method} {path}: HTTP {response.status}")
    finally:
        conn.close()


def _round(jobs: list[Job]) -> tuple[float, list[float]]:
    """Run ``jobs`` on ``CLIENTS`` threads: (requests/s, latencies in s)."""
    latencies: list[float] = []

    def timed(job: Job) -> None:
        start = time.perf_counter()
        job()
        latencies.append(time.perf_counter() - start)

    start = time.perf_counter()
    with ThreadPoolExecutor(CLIENTS) as pool:
        list(pool.map(timed, jobs))
    return len(jobs) / (time.perf_counter() - start), latencies


def server_cpu(pid: int) -> float:
    """CPU seconds (user + system) used so far by a server and its worker processes."""
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    total = 0
    for process in [pid, *map(int, children)]:
        fields = Path(f"/proc/{process}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime in clock ticks
    return total / os.sysconf("SC_CLK_TCK")


def _alternate(
    name: str, rounds: list[dict[int, list[Job]]], pids: dict[int, int]
) -> dict[int, list[Row]]:
    """Each round's jobs per worker count, in alternating order; rows per worker count.

    ``pids`` are the servers' processes, whose CPU time per request is a row of its own: it
    is what the machine's load does not change, so it tells how far throughput can grow
    with the cores that are free.
    """
    rates: dict[int, list[float]] = {n: [] for n in WORKERS}
    latencies: dict[int, list[float]] = {n: [] for n in WORKERS}
    cpu = dict.fromkeys(WORKERS, 0.0)
    for index, jobs in enumerate(rounds):
        for workers in WORKERS if index % 2 == 0 else reversed(WORKERS):
            before = server_cpu(pids[workers])
            rate, seen = _round(jobs[workers])
            cpu[workers] += server_cpu(pids[workers]) - before
            rates[workers].append(rate)
            latencies[workers] += seen
    one, two = WORKERS
    paired = [b / a for a, b in zip(rates[one], rates[two], strict=True)]
    rows = {}
    for workers in WORKERS:
        label = f"{name}, {workers} worker{'s' if workers > 1 else ''}"
        rows[workers] = [
            Row(f"{label} ({CLIENTS} clients)", median(rates[workers]), "req/s"),
            Row(f"{label} p50", median(latencies[workers]) * 1000, "ms"),
            Row(f"{label} p99", percentile(latencies[workers], 99) * 1000, "ms"),
            Row(
                f"{label} server CPU per request",
                cpu[workers] / len(latencies[workers]) * 1e6,
                "µs",
            ),
        ]
    pairs = f"{name}, {two} ÷ {one} workers, paired rounds"
    rows[two].append(Row(pairs, median(paired) * 100, "%"))
    return rows


def run(quick: bool = False) -> list[Row]:
    from testing.registry import artifact
    from testing.registry_server import registry_server, user_token

    count, rounds = (40, 4) if quick else (150, 12)
    limits_off = ("--publish-limit", "0", "--request-limit", "0")
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        root = Path(tmp)
        archives = [
            artifact(root / "pkgs", "bench", "pkg", f"1.0.{i}") for i in range(count * rounds)
        ]
        servers = {
            n: stack.enter_context(
                registry_server(root / f"data-{n}", "--workers", str(n), *limits_off)
            )
            for n in WORKERS
        }
        auth = {
            n: {"authorization": f"Bearer {user_token(s, 'bench')}"} for n, s in servers.items()
        }

        def get(n: int, path: str) -> Job:
            return lambda: _request(servers[n].url, "GET", path, None, {})

        def publish(n: int, data: bytes) -> Job:
            return lambda: _request(servers[n].url, "POST", "/publish", data, auth[n])

        def each(make: Callable[[int, int], Job], size: int) -> list[dict[int, list[Job]]]:
            return [
                {n: [make(n, r * size + i) for i in range(size)] for n in WORKERS}
                for r in range(rounds)
            ]

        download = "/packages/bench/pkg/1.0.{}/download"
        pids = {n: s.process.pid for n, s in servers.items()}
        _alternate("warm-up", each(lambda n, i: get(n, "/health"), CLIENTS * 4)[:2], pids)
        measured = [
            _alternate("health", each(lambda n, i: get(n, "/health"), count), pids),
            _alternate("publish", each(lambda n, i: publish(n, archives[i]), count), pids),
            _alternate(
                "download",
                each(lambda n, i: get(n, download.format(i % (count * rounds))), count),
                pids,
            ),
            _alternate("package", each(lambda n, i: get(n, "/packages/bench/pkg"), count), pids),
            # The server's work per request far above the client's (a page of 1,000 versions
            # built as JSON, read back as bytes): the workload that has a core to scale onto
            # when the clients share the machine's two.
            _alternate("versions page", each(lambda n, i: get(n, VERSIONS_PAGE), count), pids),
        ]
    return _with_baselines(measured)


def _with_baselines(measured: list[dict[int, list[Row]]]) -> list[Row]:
    one, two = WORKERS
    health = measured[0][one][0]
    rows: list[Row] = []
    for workers in WORKERS:
        for topic in measured:
            rate, *rest = topic[workers]
            if workers == two:
                base = topic[one][0]
                rate = Row(rate.name, rate.value, rate.unit, base.name, base.value)
                cpu, base_cpu = rest[2], topic[one][3]
                rest[2] = Row(cpu.name, cpu.value, cpu.unit, "1 worker", base_cpu.value)
                rest[-1] = Row(rest[-1].name, rest[-1].value, rest[-1].unit, target="> 100 %")
            elif rate is not health:
                rate = Row(rate.name, rate.value, rate.unit, "health req/s", health.value)
            rows += [rate, *rest]
    return rows
