"""Registry throughput: publish and download through the real server, 8 concurrent clients.

Baseline in the same run: ``GET /health`` with the same clients (the HTTP stack's floor).
Rate limits are off on the benchmark server (``--publish-limit 0 --request-limit 0``).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench.common import Row, median, percentile

CLIENTS = 8


def _throughput(name: str, jobs: list[Callable[[], object]]) -> list[Row]:
    """Run ``jobs`` on 8 threads; requests/s plus p50/p99 latency in ms."""
    latencies: list[float] = []

    def timed(job: Callable[[], object]) -> None:
        start = time.perf_counter()
        job()
        latencies.append(time.perf_counter() - start)

    start = time.perf_counter()
    with ThreadPoolExecutor(CLIENTS) as pool:
        list(pool.map(timed, jobs))
    elapsed = time.perf_counter() - start
    return [
        Row(f"{name} ({CLIENTS} clients)", len(jobs) / elapsed, "req/s"),
        Row(f"{name} p50", median(latencies) * 1000, "ms"),
        Row(f"{name} p99", percentile(latencies, 99) * 1000, "ms"),
    ]


def run(quick: bool = False) -> list[Row]:
    import requests

    from testing.registry import artifact
    from testing.registry_server import registry_server, user_token

    count = 40 if quick else 200
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        archives = [artifact(root / "pkgs", "bench", "pkg", f"1.0.{i}") for i in range(count)]
        with registry_server(
            root / "data", "--publish-limit", "0", "--request-limit", "0"
        ) as server:
            token = user_token(server, "bench")
            session_headers = {"authorization": f"Bearer {token}"}

            def publish(data: bytes) -> Callable[[], object]:
                def job() -> None:
                    response = requests.post(
                        server.url + "/publish", data=data, headers=session_headers, timeout=60
                    )
                    response.raise_for_status()

                return job

            def download(version: str) -> Callable[[], object]:
                url = f"{server.url}/packages/bench/pkg/{version}/download"
                return lambda: requests.get(url, timeout=60).raise_for_status()

            def health() -> None:
                requests.get(server.url + "/health", timeout=60).raise_for_status()

            _throughput("warm-up", [health] * CLIENTS * 4)
            rows = _throughput("health (baseline)", [health] * count)
            rows += _throughput("publish", [publish(data) for data in archives])
            rows += _throughput(
                "download", [download(f"1.0.{i % count}") for i in range(count * 2)]
            )
    baseline = rows[0].value
    for index, row in enumerate(rows):
        if row.unit == "req/s" and index:
            rows[index] = Row(row.name, row.value, row.unit, "health req/s", baseline)
    return rows
