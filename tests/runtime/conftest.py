"""Fixtures for the runtime tests: a project directory and a runtime rooted at it.

Every test that runs tools through ``make_runtime`` / ``run_tool`` runs twice: ``cold`` (a
process started per call) and ``warm`` (through a ``WarmPool``: the process was started
before the call; the teardown checks that every call really took a warm process). Both use
the default isolation (``auto``: the OS layer where the kernel allows it, issue #14). The
adversarial modules run a third time, ``in-process`` (cold, OS layer off): the in-process
guards must hold on their own.
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


# Modules whose tools also run with the OS layer off.
IN_PROCESS_TOO = frozenset(
    {
        "test_adversarial",
        "test_net_guard_adversarial",
        "test_module_guard",
        "test_file_access",
        "test_fs_surface",
        "test_descriptors",
        "test_async_failure",
    }
)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "runtime_variant" in metafunc.fixturenames:
        variants = ["cold", "warm"]
        if metafunc.module.__name__.rsplit(".", 1)[-1] in IN_PROCESS_TOO:
            variants.append("in-process")
        metafunc.parametrize("runtime_variant", variants)


@pytest.fixture
def make_runtime(runtime_variant: str, project: Path) -> Iterator[Callable[..., SpliceRuntime]]:
    """``make_runtime(env=None, broker=None)`` → a runtime rooted at ``project``."""
    pool = WarmPool() if runtime_variant == "warm" else None
    isolation = "in-process" if runtime_variant == "in-process" else "auto"

    def make(*, env: dict[str, str] | None = None, broker: Any = None) -> SpliceRuntime:
        return SpliceRuntime(
            project_root=project, env=env or {}, broker=broker, pool=pool, isolation=isolation
        )

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
