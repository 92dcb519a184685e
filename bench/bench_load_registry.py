"""`splice registry serve` (SQLite) under 64 concurrent loopback clients (issue #21 item 2):
a mix of reads as installs make them, with an occasional publish, for ``--minutes`` (default
1; the issue's soak is ``--minutes 10``), bounded by a request count too.

The mix, per request: ``GET /packages/@bench/pkg`` 35 %, ``/versions`` 20 %, one version
15 %, a download 28 %, a publish of a new version 2 % (its archive is built by the client
just before it is sent, ~2 ms). The package starts with 20 versions; every publish adds
one, so the history grows during the run as it does on a busy registry. Rate limits are off
(``--publish-limit 0 --request-limit 0``): this measures the server, not its limits.
``bench_load_registry_pg`` runs the same against PostgreSQL + S3.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.common import Row
from bench.load import Done, Failed, HttpConnection, Step, drive, interval_for, rows

CLIENTS = 64
MAX_REQUESTS = 2_000_000
SEED_VERSIONS = 20
DEFAULT_MINUTES = 1.0
QUICK_MINUTES = 0.2
PKG = "/packages/bench/pkg"
MIX = (("package", 35), ("versions", 20), ("version", 15), ("download", 28), ("publish", 2))


def _drain(stream: Any) -> None:
    """Read the server's stderr to its end, so a chatty server can never block on it."""
    threading.Thread(target=lambda: stream.read(), daemon=True).start()


def _client(
    port: int, token: str, build: Any, versions: list[str], counter: Any, seed: int
) -> Step:
    connection = HttpConnection("127.0.0.1", port)
    chooser = random.Random(seed)
    kinds = [kind for kind, _ in MIX]
    weights = [weight for _, weight in MIX]
    auth = {"authorization": f"Bearer {token}"}

    async def step() -> Done:
        kind = chooser.choices(kinds, weights)[0]
        version = chooser.choice(versions)
        method, path, body, headers, expected = "GET", PKG, b"", {}, 200
        if kind == "versions":
            path = f"{PKG}/versions"
        elif kind == "version":
            path = f"{PKG}/{version}"
        elif kind == "download":
            path = f"{PKG}/{version}/download"
        elif kind == "publish":
            method, path, headers, expected = "POST", "/publish", auth, 201
            body = build(f"2.0.{next(counter)}")
        started = time.perf_counter()
        status, _, _ = await connection.request(method, path, headers, body)
        elapsed = time.perf_counter() - started
        if status != expected:
            raise Failed(kind, f"HTTP {status}")
        return Done(kind, elapsed)

    return step


def load_run(label: str, minutes: float, backend: Any = None) -> list[Row]:
    """Seed a store, start the server, drive it; the table. ``backend``: a StoreBackend
    (PostgreSQL + S3), or None for the data directory (SQLite)."""
    import requests

    from testing.registry import artifact
    from testing.registry_server import registry_server, user_token

    with tempfile.TemporaryDirectory(prefix="bench-load-registry-") as tmp:
        root = Path(tmp)
        archives = root / "archives"
        names = itertools.count()

        def build(version: str) -> bytes:
            return artifact(archives / str(next(names)), "bench", "pkg", version)

        data = backend.data if backend is not None else root / "data"
        with registry_server(
            data, "--publish-limit", "0", "--request-limit", "0", backend=backend
        ) as server:
            _drain(server.process.stderr)
            token = user_token(server, "bench")
            versions = [f"1.0.{i}" for i in range(SEED_VERSIONS)]
            for version in versions:
                requests.post(
                    server.url + "/publish",
                    data=build(version),
                    headers={"authorization": f"Bearer {token}"},
                    timeout=60,
                ).raise_for_status()
            port = int(server.url.rsplit(":", 1)[1])
            counter = itertools.count()
            steps = [
                _client(port, token, build, versions, counter, seed) for seed in range(CLIENTS)
            ]
            seconds = minutes * 60
            run = asyncio.run(
                drive(
                    steps,
                    max_requests=MAX_REQUESTS,
                    seconds=seconds,
                    server_pid=server.process.pid,
                    interval=interval_for(seconds),
                )
            )
    return rows(f"{label}, {CLIENTS} clients, {minutes:g} min", run)


def run(quick: bool = False, minutes: float | None = None) -> list[Row]:
    return load_run("registry (SQLite)", minutes or (QUICK_MINUTES if quick else DEFAULT_MINUTES))
