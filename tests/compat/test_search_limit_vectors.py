"""``GET /packages/search?limit=`` as the TypeScript registry answers it
(tests/compat/search_limit.json), asked over HTTP of the real registry server."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from splice_build.registry.client.embedded import EmbeddedRegistryClient
from splice_build.spec.pack import pack_directory
from testing.compat import load, params
from testing.packages import minimal_manifest, write_package
from testing.registry_server import RunningRegistry, registry_server

VECTORS = load("search_limit")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningRegistry]:
    base = tmp_path_factory.mktemp("search-limit")
    store = base / "store"
    client = EmbeddedRegistryClient(store)
    try:
        for index in range(VECTORS["packages"]):
            manifest = minimal_manifest(namespace="probe", name=f"limit-{index:03d}")
            directory = write_package(base / "work" / f"{index:03d}", manifest)
            client.publish(pack_directory(directory).archive)
    finally:
        client.close()
    with registry_server(store) as running:
        yield running


@pytest.mark.parametrize("case", params(VECTORS["cases"], label="query"))
def test_search_limit(case: dict[str, Any], server: RunningRegistry) -> None:
    query = "q=limit-" + (f"&{case['query']}" if case["query"] else "")
    with urllib.request.urlopen(f"{server.url}/packages/search?{query}", timeout=30) as response:
        body = json.loads(response.read())
    assert len(body["results"]) == case["results"]


def test_more_packages_match_than_any_limit() -> None:
    """Else a clamp to 100 could not be told from "every match"."""
    assert VECTORS["packages"] > max(case["results"] for case in VECTORS["cases"])
