"""Opt-in reuse against a fresh process per call, in the same run: calls/s of
``example.hello`` through ``SpliceRuntime(reuse=ReusePolicy())`` and through the warm pool
(the fastest fresh-process path), one call at a time and 4 in flight (target: ≥ 10 × the
fresh-process calls/s), and the p50 of one reused call — everything between ``execute`` and
its result: the from-bytes digest check, input validation, the job over the pipe, the tool,
the result's decoding and sanitizing (target: ≤ 2 ms), and the parent's CPU time per call
(the Python part alone: on a loaded machine the wall time also waits for a core).
``Splice.run`` with reuse adds the SDK's own from-bytes verification of the installed
package and its lock entry.
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from bench.common import REPO, Row, example_project, percentile, precompile, time_callable

IN_FLIGHT = 4


def _calls_per_second(call: Callable[[], None], calls: int, threads: int) -> float:
    """Calls per second for ``calls`` calls made by ``threads`` threads at once."""
    remaining = [calls]
    lock = threading.Lock()

    def worker() -> None:
        while True:
            with lock:
                if remaining[0] == 0:
                    return
                remaining[0] -= 1
            call()

    pool = [threading.Thread(target=worker) for _ in range(threads)]
    start = time.perf_counter()
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    return calls / (time.perf_counter() - start)


def _runtime_call(runtime: object, pkg: object) -> Callable[[], None]:
    def call() -> None:
        result = runtime.execute(pkg, "hello", {"name": "x"})  # type: ignore[attr-defined]
        assert result.ok, result.to_json()

    return call


def run(quick: bool = False) -> list[Row]:
    from splice_build.runtime import SpliceRuntime
    from splice_build.runtime.pool import WarmPool
    from splice_build.spec.reuse import ReusePolicy

    precompile()
    fresh_calls = 20 if quick else 60
    reused_calls = 200 if quick else 1000
    example = REPO / "splice_build" / "skills" / "example"
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="bench-reuse-") as tmp:
        base = Path(tmp)
        rates: dict[tuple[str, int], float] = {}
        policy = ReusePolicy(max_calls=100_000, max_idle=IN_FLIGHT)
        for name, options in (("fresh", {"pool": WarmPool()}), ("reuse", {"reuse": policy})):
            with SpliceRuntime(project_root=base, env={}, **options) as runtime:  # type: ignore[arg-type]
                pkg = runtime.load(example)
                runtime.prewarm(pkg, wait=True)
                call = _runtime_call(runtime, pkg)
                time_callable(call, repeat=3)  # the first reused process, imports, caches
                calls = fresh_calls if name == "fresh" else reused_calls
                for threads in (1, IN_FLIGHT):
                    rates[name, threads] = _calls_per_second(call, calls, threads)
                if name == "reuse":
                    cpu = time.process_time()
                    latency = time_callable(call, repeat=reused_calls, warmup=0)
                    cpu_per_call = (time.process_time() - cpu) / reused_calls
        for threads in (1, IN_FLIGHT):
            rows.append(
                Row(
                    f"reuse: calls/s, {threads} in flight",
                    rates["reuse", threads],
                    "calls/s",
                    "fresh process per call (warm pool)",
                    rates["fresh", threads],
                    "≥ 10×",
                )
            )
        rows += [
            Row("reuse: one execute, p50", percentile(latency, 50) * 1000, "ms", target="≤ 2 ms"),
            Row("reuse: one execute, p90", percentile(latency, 90) * 1000, "ms"),
            Row("reuse: parent CPU per execute (all threads)", cpu_per_call * 1000, "ms"),
        ]
        env = {**os.environ, "HOME": str(base), "SPLICE_HOME": str(base / ".splice")}
        rows.append(_sdk_row(example_project(base, env), env, reused_calls // 4))
    return rows


def _sdk_row(project: Path, env: dict[str, str], repeat: int) -> Row:
    """``Splice.run`` (resolve, re-verify from bytes, load, execute) with reuse on."""
    from splice_build.sdk import Splice

    with Splice(project, env=env, reuse=True) as splice:

        def call() -> None:
            result = splice.run("example.hello", {"name": "x"})
            assert result.ok, result.to_json()

        time_callable(call, repeat=3)
        samples = time_callable(call, repeat=repeat)
    return Row("reuse: Splice.run, p50", percentile(samples, 50) * 1000, "ms")
