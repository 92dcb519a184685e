"""Sandbox cost: a cold ``execute`` of example.hello and whole ``splice run`` processes (a
package directory, and an installed package), each against a bare ``node --permission -e 0``
measured in the same run (issue #22 target: ``splice run example.hello``, installed, ≤ 5 ×;
issue #12 asked ≤ 3 ×). The floor is shown too: a bare ``python -c pass`` of the same
interpreter (site and .pth files included). Then the breakdown of the installed run:
``bench.run_timeline`` in fresh processes, the medians of each step's wall time."""

from __future__ import annotations

import json
import os
import statistics
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
    precompile,
    ratio_row,
    splice_argv,
    time_callable,
    time_command,
    time_in_rounds,
)


def run(quick: bool = False) -> list[Row]:
    from splice_build.runtime import SpliceRuntime

    precompile()
    repeat = 5 if quick else 20
    example = REPO / "splice_build" / "skills" / "example"
    bare = bare_node(repeat=repeat)
    python = time_command([sys.executable, "-c", "pass"], repeat=repeat)
    rows = [ratio_row("python -c pass (the floor)", python, "node --permission -e 0", bare)]
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        runtime = SpliceRuntime(project_root=base, env={})
        pkg = runtime.load(example)
        execute = time_callable(lambda: runtime.execute(pkg, "hello", {"name": "x"}), repeat=repeat)
        rows.append(
            ratio_row(
                "execute example.hello (cold process)", execute, "node --permission -e 0", bare
            )
        )
        whole = time_command(
            splice_argv("run", "--dir", str(example), "example.hello", "name=x"),
            repeat=repeat,
            cwd=base,
        )
        rows.append(
            ratio_row(
                "splice run --dir <example> example.hello",
                whole,
                "node --permission -e 0",
                bare,
                "≤ 3×",
            )
        )
        env = {**os.environ, "HOME": str(base), "SPLICE_HOME": str(base / ".splice")}
        project = example_project(base, env)
        installed = time_command(
            splice_argv("run", "example.hello", "name=x"), repeat=repeat, env=env, cwd=project
        )
        rows.append(
            ratio_row(
                "splice run example.hello (installed)",
                installed,
                "node --permission -e 0",
                bare,
                "≤ 5×",
            )
        )
        # The issue #22 row: one run of each in turn, so that a shared machine's load
        # changes hit the run and its baseline alike.
        paired_run: list[float] = []
        paired_node: list[float] = []
        for _ in range(repeat):
            paired_node += bare_node(repeat=1)
            paired_run += time_command(
                splice_argv("run", "example.hello", "name=x"), repeat=1, env=env, cwd=project
            )
        rows.append(
            ratio_row(
                "splice run example.hello (installed), alternating with its baseline",
                paired_run,
                "node --permission -e 0, alternating",
                paired_node,
                "≤ 5×",
            )
        )
        rows += _breakdown(project, env, repeat)
        before_tree = os.environ.get(BEFORE_TREE_ENV)
        if before_tree:
            rows += _before_after(Path(before_tree), project, env, repeat)
    return rows


BEFORE_TREE_ENV = "SPLICE_BENCH_BEFORE_TREE"


def _tree_argv(tree: Path) -> list[str]:
    """The installed run with ``splice_build`` imported from ``tree`` first."""
    code = (
        f"import sys; sys.path.insert(0, {str(tree)!r}); "
        "from splice_build.cli.main import main; "
        "sys.exit(main(['run', 'example.hello', 'name=x']))"
    )
    return [sys.executable, "-c", code]


def _before_after(before: Path, project: Path, env: dict[str, str], repeat: int) -> list[Row]:
    """``SPLICE_BENCH_BEFORE_TREE`` (an export of an older commit, compiled like this tree)
    against this tree, alternating one run each so that load changes hit both."""
    precompile(before)
    taken = time_in_rounds(
        {
            "after": (_tree_argv(REPO), project, env),
            "before": (_tree_argv(before), project, env),
        },
        repeat,
    )
    after_samples, before_samples = taken["after"], taken["before"]
    return [
        ratio_row(
            "splice run example.hello (installed), this tree",
            after_samples,
            "the tree before",
            before_samples,
        )
    ]


def _breakdown(project: Path, env: dict[str, str], repeat: int) -> list[Row]:
    """Median milliseconds of each step of a cold installed ``splice run`` (one row each)."""
    runs: list[dict[str, float]] = []
    argv = [sys.executable, "-m", "bench.run_timeline", "run", "example.hello", "name=x"]
    child_env = {**env, "PYTHONPATH": str(REPO)}
    for i in range(repeat + 1):
        started = time.perf_counter()
        done = subprocess.run(
            argv, cwd=project, env=child_env, capture_output=True, text=True, check=True
        )
        wall = (time.perf_counter() - started) * 1000
        if i:  # the first run warms the page cache
            spans = json.loads(done.stderr.rstrip().rsplit("\n", 1)[-1])
            total = spans["script total (first line to the result)"]
            spans["Python start-up and exit (the process's wall time outside the script)"] = (
                wall - total
            )
            spans["whole process"] = wall
            runs.append(spans)
    steps = [k for k in runs[0] if k != "status"]
    return [
        Row(f"breakdown: {step}", statistics.median(r.get(step, 0.0) for r in runs), "ms")
        for step in steps
    ]
