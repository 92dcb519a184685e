"""One real registry server per module for the signing end-to-end tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from testing.registry_server import RunningRegistry, registry_server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningRegistry]:
    data = tmp_path_factory.mktemp("registry-data")
    with registry_server(data, "--publish-limit", "0", "--request-limit", "0") as running:
        yield running
