"""Each fuzz target for a few seconds, so a regression in any parser of outside input shows up.

The real command (``python -m fuzz <target> --seconds 3``) in a subprocess: atheris where the
``test`` extra installed it (Linux x86_64), else Hypothesis — the engine reports which. A run
keeps one core busy for its budget, so the runs go two at a time (one per core of a 2-core CI
machine) when the module starts, and each test reads its target's run.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from fuzz.targets import TARGETS

ROOT = Path(__file__).resolve().parents[2]
NEEDS_NODE = {"url_diff", "files_paths", "mcp_stdio", "mcp_http", "net_walk", "net_walk_os"}
AT_ONCE = 2


def _fuzz(target: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    runs = TARGETS[target].short_runs
    budget = ["--seconds", "3"] if runs is None else ["--runs", str(runs), "--seconds", "3"]
    return subprocess.run(
        [sys.executable, "-m", "fuzz", target, *budget, "--timeout", "10"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture(scope="module")
def runs(
    request: pytest.FixtureRequest,
) -> Iterator[dict[str, Future[subprocess.CompletedProcess[str]]]]:
    """Every selected target's run, started together on ``AT_ONCE`` workers."""
    selected = sorted(
        {
            item.callspec.params["target"]
            for item in request.session.items
            if item.module is request.module
        }
    )
    # Each run gets its own copy of the environment: with none, the child's exec reads the
    # process's C environ, which pytest rewrites in the main thread (PYTEST_CURRENT_TEST) while
    # a worker thread starts a run; a reallocation in between made one start fail with EFAULT.
    env = dict(os.environ)
    with ThreadPoolExecutor(AT_ONCE) as pool:
        yield {target: pool.submit(_fuzz, target, env) for target in selected}


@pytest.mark.parametrize(
    "target",
    [
        pytest.param(name, marks=[pytest.mark.node] if name in NEEDS_NODE else [])
        for name in sorted(TARGETS)
    ],
)
def test_target_runs_clean_for_a_short_budget(
    runs: dict[str, Future[subprocess.CompletedProcess[str]]], target: str
) -> None:
    done = runs[target].result()
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    assert "Done " in output or f"fuzz {target}: " in output, output[-4000:]
