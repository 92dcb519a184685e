"""The warm pool through many calls (issue #21 item 2: 100,000): ``Splice.run`` of
``example.hello`` with ``WarmPool()`` in this process, from as many callers as there are
cores, back to back, until 100,000 calls or ``--minutes`` (default 1) have passed.

Sampled every 10 s: this process's resident set and open fds (the SDK, the runtime and the
pool live here; the driver adds little) and the processes below it (the pool's warm
processes and the running calls): none of them may grow with the number of calls.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from pathlib import Path

from bench.common import Row, example_project
from bench.load import Done, Failed, Step, drive, interval_for, rows

MAX_CALLS = 100_000
DEFAULT_MINUTES = 1.0
QUICK_MINUTES = 0.2


def _caller(splice: object) -> Step:
    async def step() -> Done:
        started = time.perf_counter()
        result = await asyncio.to_thread(splice.run, "example.hello", {"name": "Ada"})  # type: ignore[attr-defined]
        elapsed = time.perf_counter() - started
        if not result.ok:
            raise Failed("Splice.run", str(result.to_json())[:80])
        return Done("Splice.run through the pool", elapsed)

    return step


def run(quick: bool = False, minutes: float | None = None) -> list[Row]:
    from splice_build.runtime.pool import WarmPool
    from splice_build.sdk import Splice

    minutes = minutes or (QUICK_MINUTES if quick else DEFAULT_MINUTES)
    callers = os.cpu_count() or 1
    with tempfile.TemporaryDirectory(prefix="bench-soak-pool-") as tmp:
        base = Path(tmp)
        env = {**os.environ, "HOME": str(base), "SPLICE_HOME": str(base / ".splice")}
        project = example_project(base, env)
        pool = WarmPool()
        with Splice(project, env=env, pool=pool) as splice:
            seconds = minutes * 60
            result = asyncio.run(
                drive(
                    [_caller(splice) for _ in range(callers)],
                    max_requests=MAX_CALLS,
                    seconds=seconds,
                    server_pid=os.getpid(),
                    interval=interval_for(seconds),
                )
            )
            stats = pool.stats()
    label = f"warm pool, {callers} callers, {minutes:g} min"
    return [
        *rows(label, result),
        Row(f"{label}: pool max size", pool.max_size, "processes"),
        Row(f"{label}: pool hits", stats.hits, "calls"),
        Row(f"{label}: pool cold starts", stats.cold, "calls"),
        Row(f"{label}: pool processes started", stats.started, "processes"),
        Row(f"{label}: warm processes found dead", stats.discarded, "processes", target="0"),
    ]
