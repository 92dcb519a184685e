"""Fixtures for the runtime tests: a project directory and a runtime rooted at it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from splice_build.runtime import SpliceRuntime, ToolResult
from testing.hostile_packages import write_package


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "splice.json").write_text('{"packages": {}}\n', encoding="utf-8")
    return root


@pytest.fixture
def run_tool(project: Path, tmp_path: Path) -> Callable[..., ToolResult]:
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
        runtime = SpliceRuntime(project_root=project, env=env or {}, broker=broker)
        return runtime.execute(runtime.load(pkg_dir), "t", {} if input is None else input)

    return run
