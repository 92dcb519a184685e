"""A private embedded registry with two versions of @acme/greeter and one of @acme/other."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from testing.registry_fixtures import embedded_store, publish


@pytest.fixture
def home() -> Path:
    return Path(os.environ["SPLICE_HOME"])


@pytest.fixture
def registry(home: Path, tmp_path: Path) -> dict[str, dict]:
    store = embedded_store(home)
    work = tmp_path / "packages"
    return {
        "greeter@1.0.0": publish(store, work),
        "greeter@1.1.0": publish(store, work, version="1.1.0"),
        "greeter@2.0.0": publish(
            store, work, version="2.0.0", permissions={"network": ["api.example.com"]}
        ),
        "other@1.0.0": publish(store, work, name="other"),
    }
