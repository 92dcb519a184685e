"""Fixtures for registry tests: one real server per module, users and tokens made by the CLI."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from testing.registry_server import RunningRegistry, registry_server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningRegistry]:
    """A registry with rate limits on publishes and requests off (many tests share it)."""
    data = tmp_path_factory.mktemp("registry-data")
    with registry_server(data, "--publish-limit", "0", "--request-limit", "0") as running:
        yield running


@pytest.fixture
def pkg_root(tmp_path: Path) -> Path:
    return tmp_path / "packages"
