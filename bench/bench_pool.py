"""The warm pool: a call's cost through ``SpliceRuntime(pool=WarmPool())`` and the SDK's
``Splice.run`` against a bare ``node --permission -e 0`` start-up measured in the same run
(target: median below 0.5 ×), and memory: the resident set of a pooled parent holding 20
loaded packages with a warm process each, and of one warm process.

Back-to-back calls take a process whose replacement was started by the previous call
(still booting when the machine is busy); "paced" calls leave 50 ms between calls, the
way an agent's calls usually arrive.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import (
    REPO,
    Row,
    bare_node,
    example_project,
    median,
    precompile,
    ratio_row,
    time_callable,
)

PACKAGES = 20
_HOLDER = """
import sys, time
from pathlib import Path
from splice_build.runtime import SpliceRuntime
from splice_build.runtime.pool import WarmPool
import splice_build.mcp.protocol, splice_build.mcp.backend, splice_build.sdk  # what `splice mcp` holds
root = Path(sys.argv[1])
runtime = SpliceRuntime(project_root=root, env={}, pool=WarmPool(max_size=int(sys.argv[2])))
for pkg_dir in sorted((root / "pkgs").iterdir()):
    runtime.prewarm(runtime.load(pkg_dir), wait=True)
print(" ".join(map(str, runtime._pool.idle_pids())), flush=True)
sys.stdin.read()
"""


def _rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status", encoding="utf-8") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _write_packages(root: Path) -> None:
    from testing.hostile_packages import tool_returning, write_package

    for i in range(PACKAGES):
        write_package(root / "pkgs", tool_returning("input"), name=f"bench{i}")


def _memory(root: Path) -> list[Row]:
    _write_packages(root)
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(root), str(PACKAGES)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    assert holder.stdout is not None and holder.stdin is not None
    pids = [int(p) for p in holder.stdout.readline().split()]
    time.sleep(1.0)  # let every host finish booting
    parent = _rss_mib(holder.pid)
    per_process = [_rss_mib(pid) for pid in pids]
    holder.stdin.close()
    holder.wait(timeout=30)
    warm_total = sum(per_process)
    return [
        Row(f"pooled parent RSS ({PACKAGES} packages loaded)", parent, "MiB"),
        Row("warm process RSS (median)", median(per_process), "MiB"),
        Row(f"parent + {len(pids)} warm processes RSS", parent + warm_total, "MiB"),
    ]


def run(quick: bool = False) -> list[Row]:
    from splice_build.runtime import SpliceRuntime
    from splice_build.runtime.pool import WarmPool

    precompile()
    repeat = 10 if quick else 40
    example = REPO / "splice_build" / "skills" / "example"
    bare = bare_node(repeat=repeat)
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="bench-pool-") as tmp:
        base = Path(tmp)
        cold_runtime = SpliceRuntime(project_root=base, env={})
        pkg = cold_runtime.load(example)
        cold = time_callable(
            lambda: cold_runtime.execute(pkg, "hello", {"name": "x"}), repeat=repeat
        )
        with SpliceRuntime(project_root=base, env={}, pool=WarmPool()) as pooled:
            warm_pkg = pooled.load(example)
            pooled.prewarm(warm_pkg, wait=True)
            time.sleep(0.3)

            def call() -> None:
                result = pooled.execute(warm_pkg, "hello", {"name": "x"})
                assert result.ok, result.to_json()

            def paced() -> None:
                time.sleep(0.05)
                start = time.perf_counter()
                call()
                paced_samples.append(time.perf_counter() - start)

            back_to_back = time_callable(call, repeat=repeat)
            paced_samples: list[float] = []
            time_callable(paced, repeat=repeat)
            rows += [
                ratio_row("execute, cold process", cold, "node --permission -e 0", bare),
                ratio_row(
                    "execute through the pool, back-to-back",
                    back_to_back,
                    "node --permission -e 0",
                    bare,
                    "< 0.5×",
                ),
                ratio_row(
                    "execute through the pool, paced 50 ms",
                    paced_samples[1:],
                    "node --permission -e 0",
                    bare,
                    "< 0.5×",
                ),
            ]
        env = {**os.environ, "HOME": str(base), "SPLICE_HOME": str(base / ".splice")}
        rows.append(_sdk_row(example_project(base, env), env, repeat, bare))
        rows += _memory(base / "memory")
    return rows


def _sdk_row(project: Path, env: dict[str, str], repeat: int, bare: list[float]) -> Row:
    """``Splice.run`` (resolve, re-verify from bytes, load, execute) with a pooled runtime."""
    from splice_build.runtime.pool import WarmPool
    from splice_build.sdk import Splice

    with Splice(project, env=env, pool=WarmPool()) as splice:
        samples: list[float] = []

        def paced() -> None:
            time.sleep(0.05)
            start = time.perf_counter()
            result = splice.run("example.hello", {"name": "x"})
            samples.append(time.perf_counter() - start)
            assert result.ok, result.to_json()

        time_callable(paced, repeat=repeat)
    return ratio_row(
        "Splice.run through the pool, paced 50 ms",
        samples[1:],
        "node --permission -e 0",
        bare,
        "< 0.5×",
    )
