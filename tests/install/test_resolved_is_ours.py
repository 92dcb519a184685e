"""`splice.lock` `resolved` is the registry's base URL plus the path the client downloads from,
whatever the registry's `download` field says: a registry that twists it (another host, a
`file:` URL, a path outside the registry) never gets its text into a file people commit."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from testing.cli import run_splice
from testing.counting_proxy import CountingProxy, counting_proxy
from testing.registry_fixtures import publish
from testing.registry_server import registry_server

TWISTED = [
    "file:///etc/passwd",
    "http://elsewhere.invalid/packages/acme/greeter/1.0.0/download",
    "../../../../etc/passwd",
    "/packages/acme/other/9.9.9/download",
]


def _twist(download: str):
    def rewrite(path: str, answer: Any) -> Any:
        if isinstance(answer, dict) and "download" in answer:
            answer["download"] = download
        for version in answer.get("versions", []) if isinstance(answer, dict) else []:
            if isinstance(version, dict) and "download" in version:
                version["download"] = download
        return answer

    return rewrite


@pytest.fixture
def store(tmp_path: Path) -> Path:
    store = tmp_path / "served-data"
    publish(store, tmp_path / "pkgs")
    return store


@pytest.fixture(params=TWISTED)
def twisted(request: pytest.FixtureRequest, store: Path) -> Iterator[CountingProxy]:
    with (
        registry_server(store, admin=False) as server,
        counting_proxy(server.url, _twist(request.param)) as proxy,
    ):
        yield proxy


def test_resolved_is_the_path_the_client_used(tmp_path: Path, twisted: CountingProxy) -> None:
    project = tmp_path / "project"
    project.mkdir()
    assert run_splice("init", cwd=project).code == 0
    done = run_splice("--registry", twisted.url, "add", "@acme/greeter", cwd=project)
    assert done.code == 0, done.stderr
    entry = json.loads((project / "splice.lock").read_text())["packages"]["@acme/greeter"]
    path = "/packages/acme/greeter/1.0.0/download"
    assert entry["resolved"] == twisted.url + path
    assert twisted.downloads() == [path]
