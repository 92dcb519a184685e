"""Registry at scale: publish and download throughput, 1 and 2 server processes, on
SQLite + files and on PostgreSQL + S3.

Each configuration gets a fresh store and the same pre-built artifacts; 8 client threads
spread their requests round-robin over the server processes. Rate limits are off. The
baseline of every row is the same operation on SQLite with one server, measured in the same
run. PostgreSQL is a throw-away local cluster with fsync off and S3 is moto's server (a
test double, itself a Python process on the same cores, about 10 ms per GET), so the
PostgreSQL + S3 figures show the overhead and the scaling of our tier, not of a production
bucket; "PostgreSQL+files" (artifacts in the data directory) isolates the database. Skipped (no rows)
when PostgreSQL or moto is missing (``testing.services.missing_services``).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path

from bench.common import Row

CLIENTS = 8
CONFIGS = (
    ("SQLite", 1),
    ("SQLite", 2),
    ("PostgreSQL+files", 1),
    ("PostgreSQL+files", 2),
    ("PostgreSQL+S3", 1),
    ("PostgreSQL+S3", 2),
)


def _rate(jobs: list[Callable[[], object]]) -> float:
    start = time.perf_counter()
    with ThreadPoolExecutor(CLIENTS) as pool:
        list(pool.map(lambda job: job(), jobs))
    return len(jobs) / (time.perf_counter() - start)


@contextmanager
def _services(wanted: bool) -> Iterator[object | None]:
    from testing.registry_backends import ScaleServices
    from testing.services import missing_services, postgres_server, s3_server

    if not wanted or missing_services() is not None:
        yield None
        return
    with postgres_server() as postgres, s3_server() as s3:
        yield ScaleServices(postgres, s3)


def _measure(backend, processes: int, archives: list[bytes]) -> dict[str, float]:
    import requests

    from testing.registry_server import registry_server, user_token

    with ExitStack() as stack:
        servers = [
            stack.enter_context(
                registry_server(
                    backend.data, "--publish-limit", "0", "--request-limit", "0", backend=backend
                )
            )
            for _ in range(processes)
        ]
        headers = {"authorization": f"Bearer {user_token(servers[0], 'bench')}"}

        def publish(i: int) -> Callable[[], object]:
            url = servers[i % processes].url + "/publish"
            return lambda: requests.post(
                url, data=archives[i], headers=headers, timeout=60
            ).raise_for_status()

        def download(i: int) -> Callable[[], object]:
            version = f"1.0.{i % len(archives)}"
            url = f"{servers[i % processes].url}/packages/bench/pkg/{version}/download"
            return lambda: requests.get(url, timeout=60).raise_for_status()

        return {
            "publish": _rate([publish(i) for i in range(len(archives))]),
            "download": _rate([download(i) for i in range(2 * len(archives))]),
        }


def run(quick: bool = False) -> list[Row]:
    from testing.registry import artifact
    from testing.registry_backends import make_backend

    count = 40 if quick else 200
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp, _services(True) as services:
        root = Path(tmp)
        archives = [artifact(root / "pkgs", "bench", "pkg", f"1.0.{i}") for i in range(count)]
        results: dict[tuple[str, int], dict[str, float]] = {}
        for index, (store, processes) in enumerate(CONFIGS):
            if store != "SQLite" and services is None:
                continue
            kind = "sqlite" if store == "SQLite" else "postgres"
            backend = make_backend(kind, root / f"store{index}", services)  # type: ignore[arg-type]
            if store == "PostgreSQL+files":
                backend.env.pop("SPLICE_REGISTRY_ARTIFACTS")
            results[(store, processes)] = _measure(backend, processes, archives)
    base = results[("SQLite", 1)]
    for (store, processes), figures in results.items():
        for operation in ("publish", "download"):
            name = f"{operation}, {store}, {processes} server{'s' if processes > 1 else ''}"
            baseline = None if (store, processes) == ("SQLite", 1) else f"{operation}, SQLite, 1"
            rows.append(
                Row(
                    f"{name} ({CLIENTS} clients)",
                    figures[operation],
                    "req/s",
                    baseline,
                    base[operation] if baseline else None,
                )
            )
    return rows
