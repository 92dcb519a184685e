"""`splice login` sends the token only to a registry the user named
(docs/registry.md#where-a-token-goes): inside someone else's checkout, whose `splice.json`
names a server of its own, the token piped or typed in for the user's real registry is not
sent there. The real server on 127.0.0.1 behind a proxy that records every request carrying
an `Authorization` header; the real `splice` binary."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from testing.cli import run_splice
from testing.counting_proxy import CountingProxy, counting_proxy
from testing.registry_server import registry_server, user_token


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[CountingProxy, str]]:
    root = tmp_path_factory.mktemp("login-choice")
    with registry_server(root / "data") as server, counting_proxy(server.url) as proxy:
        yield proxy, user_token(server, "alice")


def _checkout(root: Path, registry_url: str) -> Path:
    checkout = root / "cloned"
    checkout.mkdir()
    project = {"specVersion": 1, "registry": registry_url, "packages": {}}
    (checkout / "splice.json").write_text(json.dumps(project), encoding="utf-8")
    return checkout


def _credentials() -> Path:
    return Path(os.environ["SPLICE_HOME"]) / "credentials.json"


def test_a_registry_only_the_checkout_names_gets_no_token(
    registry: tuple[CountingProxy, str], tmp_path: Path
) -> None:
    proxy, token = registry
    before = len(proxy.authorized)
    checkout = _checkout(tmp_path, proxy.url)
    done = run_splice("--json", "login", cwd=checkout, input=token + "\n")
    assert done.code == 2, (done.stdout, done.stderr)
    error = done.json()["error"]
    assert error["code"] == "USAGE"
    assert "named only by this project's splice.json" in error["message"]
    assert f"splice login --registry {proxy.url}" in error["hint"]
    assert len(proxy.authorized) == before
    assert not _credentials().exists()
    assert token not in done.stdout + done.stderr


@pytest.mark.parametrize("named_by", ["flag", "env", "user-config"])
def test_a_registry_the_user_names_as_well_is_logged_in_to(
    registry: tuple[CountingProxy, str], tmp_path: Path, named_by: str
) -> None:
    proxy, token = registry
    checkout = _checkout(tmp_path, proxy.url)
    args: list[str] = ["--registry", proxy.url] if named_by == "flag" else []
    env = {"SPLICE_REGISTRY": proxy.url} if named_by == "env" else {}
    if named_by == "user-config":
        assert run_splice("config", "set", "registry", proxy.url).code == 0
    done = run_splice("--json", "login", *args, cwd=checkout, input=token + "\n", env=env)
    assert done.code == 0, (done.stdout, done.stderr)
    assert done.json() == {"registry": proxy.url, "user": "alice"}
    assert proxy.url in json.loads(_credentials().read_text(encoding="utf-8"))["registries"]
