"""`splice registry serve` on PostgreSQL + S3 under 64 concurrent loopback clients: the load
of ``bench_load_registry`` against a throw-away PostgreSQL cluster and moto's S3 server
(``testing.services``, the servers the registry tests use). Skipped, with the reason as its
only row, where they are missing.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from bench.bench_load_registry import DEFAULT_MINUTES, QUICK_MINUTES, load_run
from bench.common import Row


def run(quick: bool = False, minutes: float | None = None) -> list[Row]:
    from testing.registry_backends import ScaleServices, make_backend
    from testing.services import missing_services, postgres_server, s3_server

    why = missing_services()
    if why is not None:
        return [Row(f"registry (PostgreSQL + S3) skipped: {why}", 0, "")]
    minutes = minutes or (QUICK_MINUTES if quick else DEFAULT_MINUTES)
    with (
        tempfile.TemporaryDirectory(prefix="bench-load-registry-pg-") as tmp,
        postgres_server() as postgres,
        s3_server() as s3,
    ):
        backend = make_backend("postgres", Path(tmp) / "data", ScaleServices(postgres, s3))
        return load_run("registry (PostgreSQL + S3)", minutes, backend)
