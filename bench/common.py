"""Shared pieces of the benchmarks: the row type and timing helpers (no assertions, ever)."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Row:
    name: str
    value: float
    unit: str
    baseline: str | None = None
    baseline_value: float | None = None
    target: str | None = None

    @property
    def ratio(self) -> float | None:
        if self.baseline_value in (None, 0):
            return None
        return self.value / self.baseline_value  # type: ignore[operator]


def splice_argv(*args: str) -> list[str]:
    """The installed console script (the real binary people run)."""
    exe = Path(sys.executable).with_name("splice")
    return [str(exe) if exe.exists() else "splice", *args]


def example_project(base: Path, env: Mapping[str, str]) -> Path:
    """A project with ``@splice/example`` added from the embedded registry, by the real CLI."""
    project = base / "project"
    project.mkdir()
    for args in (("init",), ("add", "@splice/example")):
        subprocess.run(splice_argv(*args), cwd=project, env=env, check=True, capture_output=True)
    return project


def precompile(tree: Path = REPO) -> None:
    """Bytecode as an installed package has it (PYTHONDONTWRITEBYTECODE would otherwise make
    every whole-process run recompile whatever changed since the last write); ``tree``: this
    checkout, or an older one timed against it."""
    import compileall

    compileall.compile_dir(tree / "splice_build", quiet=1)


def bare_node(*, repeat: int) -> list[float]:
    """The baseline of the sandbox benchmarks: ``node --permission -e 0`` with Splice's Node."""
    from splice_build.runtime.node import find_node

    node = find_node()
    return time_command([str(node.path), "--permission", "-e", "0"], repeat=repeat, env={})


def bare_node_rate(*, concurrent: int, starts: int) -> float:
    """Starts per second of ``node --permission -e 0`` (Splice's Node, an empty environment as
    a sandbox gets) with ``concurrent`` of them running at any time: the ceiling of a design
    that starts one fresh process per call (issue #22 item 1)."""
    import threading

    from splice_build.runtime.node import find_node

    argv = [str(find_node().path), "--permission", "-e", "0"]
    share = [starts // concurrent + (i < starts % concurrent) for i in range(concurrent)]

    def starter(count: int) -> None:
        for _ in range(count):
            subprocess.run(argv, env={}, stdout=subprocess.DEVNULL, check=True)

    threads = [threading.Thread(target=starter, args=(n,)) for n in share]
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return starts / (time.perf_counter() - began)


def machine_cpu_ms() -> tuple[float, float] | None:
    """CPU the whole machine has spent since boot, in ms: user (niced included) and kernel
    (system, irq, softirq), from /proc/stat; None where there is none. Kernel work no process
    is charged for (a namespace's teardown runs in kernel threads) is counted here."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            fields = [int(v) for v in f.readline().split()[1:8]]
    except (OSError, ValueError):
        return None
    tick_ms = 1000 / os.sysconf("SC_CLK_TCK")
    user, nice, system, _idle, _iowait, irq, softirq = fields
    return (user + nice) * tick_ms, (system + irq + softirq) * tick_ms


def time_command(
    argv: Sequence[str],
    *,
    repeat: int,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    warmup: int = 1,
) -> list[float]:
    """Wall-clock seconds of ``repeat`` whole-process runs (after ``warmup`` untimed ones)."""
    full_env = {**os.environ, **(env or {})}
    samples: list[float] = []
    for i in range(warmup + repeat):
        start = time.perf_counter()
        subprocess.run(
            argv,
            env=full_env,
            cwd=cwd,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=True,
        )
        if i >= warmup:
            samples.append(time.perf_counter() - start)
    return samples


def time_in_rounds(
    commands: Mapping[str, tuple[Sequence[str], Path | None, Mapping[str, str]]], rounds: int
) -> dict[str, list[float]]:
    """Wall-clock seconds of each ``name: (argv, cwd, env)``, one run of each per round after
    an untimed round 0, so that a drifting machine weighs on every command alike (before and
    after, a command and its baseline)."""
    samples: dict[str, list[float]] = {name: [] for name in commands}
    for round_ in range(rounds + 1):
        for name, (argv, cwd, env) in commands.items():
            taken = time_command(argv, repeat=1, warmup=0, env=env, cwd=cwd)
            if round_:
                samples[name] += taken
    return samples


def time_callable(fn: Callable[[], object], *, repeat: int, warmup: int = 1) -> list[float]:
    samples: list[float] = []
    for i in range(warmup + repeat):
        start = time.perf_counter()
        fn()
        if i >= warmup:
            samples.append(time.perf_counter() - start)
    return samples


def median(samples: Sequence[float]) -> float:
    return statistics.median(samples)


def percentile(samples: Sequence[float], pct: float) -> float:
    ordered = sorted(samples)
    index = min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))
    return ordered[index]


def ratio_row(
    name: str,
    samples: Sequence[float],
    baseline: str,
    baseline_samples: Sequence[float],
    target: str | None = None,
) -> Row:
    """A row comparing two medians, in milliseconds."""
    return Row(
        name, median(samples) * 1000, "ms", baseline, median(baseline_samples) * 1000, target
    )
