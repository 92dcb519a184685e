"""Fixtures for the runtime tests: a project directory and a runtime rooted at it.

Every test that runs tools through ``make_runtime`` / ``run_tool`` runs twice: ``cold`` (a
process started per call) and ``warm`` (through a ``WarmPool``: the process was started
before the call; the teardown checks that every call really took a warm process).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from splice_build.runtime import SpliceRuntime, ToolResult
from splice_build.runtime.pool import WarmPool
from testing.hostile_packages import write_package


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "splice.json").write_text('{"packages": {}}\n', encoding="utf-8")
    return root


@pytest.fixture(params=["cold", "warm"])
def make_runtime(
    request: pytest.FixtureRequest, project: Path
) -> Iterator[Callable[..., SpliceRuntime]]:
    """``make_runtime(env=None, broker=None)`` → a runtime rooted at ``project``."""
    pool = WarmPool() if request.param == "warm" else None

    def make(*, env: dict[str, str] | None = None, broker: Any = None) -> SpliceRuntime:
        return SpliceRuntime(project_root=project, env=env or {}, broker=broker, pool=pool)

    yield make
    if pool is not None:
        stats = pool.stats()
        pool.close()
        assert stats.cold == 0, f"a warm-mode call started its own process: {stats}"


@pytest.fixture
def run_tool(
    make_runtime: Callable[..., SpliceRuntime], tmp_path: Path
) -> Callable[..., ToolResult]:
    """``run_tool(body, input={}, env=None, broker=None, **package_options)`` → ToolResult."""
    counter = iter(range(1_000_000))

    def run(
        body: str,
        input: Any = None,
        *,
        env: dict[str, str] | None = None,
        broker: Any = None,
        **options: Any,
    ) -> ToolResult:
        packages = tmp_path / "packages"
        pkg_dir = write_package(packages, body, name=f"p{next(counter)}", **options)
        runtime = make_runtime(env=env, broker=broker)
        return runtime.execute(runtime.load(pkg_dir), "t", {} if input is None else input)

    return run
