"""Where a token goes (docs/registry.md#where-a-token-goes): a CI job with ``SPLICE_TOKEN``
that installs an untrusted checkout must not hand the token to the registry the checkout's
``splice.json`` names. The registry here is the real server behind a proxy on 127.0.0.1 that
records every request carrying an ``Authorization`` header.

- Reads and downloads never carry a token, whoever chose the registry.
- ``SPLICE_TOKEN`` goes only to a registry the user named (``--registry``,
  ``SPLICE_REGISTRY``, the user config); one that only ``splice.json`` names gets none, and a
  command that needs one says why (``NOT_LOGGED_IN``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from splice_build.project.home import SpliceHome
from splice_build.registry.client.open import resolve_token
from testing.cli import run_splice
from testing.counting_proxy import CountingProxy, counting_proxy
from testing.registry import package_dir
from testing.registry_fixtures import publish
from testing.registry_server import RunningRegistry, registry_server, user_token


@dataclass(frozen=True)
class Served:
    server: RunningRegistry
    proxy: CountingProxy
    token: str


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("token-scope")
    publish(root / "data", root / "pkgs")
    with (
        registry_server(root / "data", "--publish-limit", "0", "--request-limit", "0") as server,
        counting_proxy(server.url) as proxy,
    ):
        yield Served(server, proxy, user_token(server, "ci"))


def _project(root: Path, registry: str) -> Path:
    """A checkout whose splice.json names ``registry`` (the one under test)."""
    root.mkdir(parents=True)
    text = {"specVersion": 1, "packages": {}, "registry": registry}
    (root / "splice.json").write_text(json.dumps(text, indent=2) + "\n", encoding="utf-8")
    return root


def _home(tmp_path: Path, registry: str | None = None) -> dict[str, str]:
    """A fresh SPLICE_HOME, its user config naming ``registry`` when given."""
    home = tmp_path / "home"
    home.mkdir()
    if registry is not None:
        (home / "config.json").write_text(json.dumps({"registry": registry}), encoding="utf-8")
    return {"SPLICE_HOME": str(home)}


def test_installing_a_checkout_that_names_a_registry_sends_no_token(
    served: Served, tmp_path: Path
) -> None:
    project = _project(tmp_path / "checkout", served.proxy.url)
    env = {**_home(tmp_path), "SPLICE_TOKEN": served.token}
    first, authorized = len(served.proxy.requests), len(served.proxy.authorized)
    done = run_splice("add", "@acme/greeter", cwd=project, env=env)
    assert done.code == 0, done.stderr
    asked = served.proxy.requests[first:]
    assert ("GET", "/packages/acme/greeter/1.0.0/download") in asked
    assert served.proxy.authorized[authorized:] == []


def test_reads_carry_no_token_even_to_the_registry_the_user_named(
    served: Served, tmp_path: Path
) -> None:
    project = _project(tmp_path / "checkout", served.proxy.url)
    env = {**_home(tmp_path), "SPLICE_TOKEN": served.token}
    authorized = len(served.proxy.authorized)
    for command in (["add", "@acme/greeter"], ["info", "@acme/greeter"], ["search", "greeter"]):
        done = run_splice("--registry", served.proxy.url, *command, cwd=project, env=env)
        assert done.code == 0, done.stderr
    assert served.proxy.authorized[authorized:] == []


def test_a_registry_only_splice_json_names_gets_no_token_to_publish(
    served: Served, tmp_path: Path
) -> None:
    project = _project(tmp_path / "checkout", served.proxy.url)
    env = {**_home(tmp_path), "SPLICE_TOKEN": served.token}
    source = package_dir(tmp_path / "src", "ci", "tool")
    first, authorized = len(served.proxy.requests), len(served.proxy.authorized)
    for command in (["publish", str(source)], ["whoami"], ["token", "list"]):
        done = run_splice("--json", *command, cwd=project, env=env)
        assert done.code == 1, done.stdout + done.stderr
        error = done.json()["error"]
        assert error["code"] == "NOT_LOGGED_IN", error
        assert error["details"] == [
            "SPLICE_TOKEN is not sent to a registry that only splice.json names"
        ]
        assert f"--registry {served.proxy.url}" in error["hint"]
    assert served.proxy.requests[first:] == []
    assert served.proxy.authorized[authorized:] == []


@pytest.mark.parametrize("named_by", ["flag", "env", "user"])
def test_the_token_goes_to_the_registry_the_user_named_on_user_routes_only(
    served: Served, tmp_path: Path, named_by: str
) -> None:
    url = served.proxy.url
    project = _project(tmp_path / "checkout", url)
    env = {**_home(tmp_path, url if named_by == "user" else None), "SPLICE_TOKEN": served.token}
    flag = ["--registry", url] if named_by == "flag" else []
    if named_by == "env":
        env["SPLICE_REGISTRY"] = url
    source = package_dir(tmp_path / "src", "ci", f"tool-{named_by}")
    first = len(served.proxy.authorized)
    done = run_splice(*flag, "publish", str(source), cwd=project, env=env)
    assert done.code == 0, done.stderr
    who = run_splice(*flag, "--json", "whoami", cwd=project, env=env)
    assert who.code == 0, who.stderr
    assert who.json()["tokenSource"] == "env"
    assert served.proxy.authorized[first:] == [("POST", "/publish"), ("GET", "/auth/whoami")]


def test_a_netrc_password_goes_nowhere(served: Served, tmp_path: Path) -> None:
    """``requests`` would add ``~/.netrc``'s password for the registry's host (or its
    ``default``, any host) as ``Authorization: Basic`` to every request: a checkout naming a
    registry would receive it, and it would replace the user's own token on a user route."""
    home = tmp_path / "user"
    home.mkdir()
    netrc = home / ".netrc"
    netrc.write_text("default login alice password hunter2\n", encoding="utf-8")
    netrc.chmod(0o600)
    project = _project(tmp_path / "checkout", served.proxy.url)
    env = {**_home(tmp_path), "HOME": str(home), "SPLICE_TOKEN": served.token}
    first, authorized = len(served.proxy.requests), len(served.proxy.authorized)
    done = run_splice("add", "@acme/greeter", cwd=project, env=env)
    assert done.code == 0, done.stderr
    assert ("GET", "/packages/acme/greeter/1.0.0/download") in served.proxy.requests[first:]
    assert served.proxy.authorized[authorized:] == []
    who = run_splice("--registry", served.proxy.url, "--json", "whoami", cwd=project, env=env)
    assert who.code == 0, who.stdout + who.stderr  # the token, not the netrc password
    assert who.json()["tokenSource"] == "env"


def test_the_rule_in_one_place(tmp_path: Path) -> None:
    """``resolve_token`` alone: SPLICE_TOKEN only for the registry the user's own settings pick."""
    home = SpliceHome(tmp_path / "home")
    theirs, ours = "https://registry.example.net", "https://registry.example.com"
    token = {"SPLICE_TOKEN": "splice_" + "A" * 43}

    def source(url: str, flag: str | None = None, **env: str) -> str | None:
        return resolve_token(url, home=home, env={**token, **env}, flag=flag).source

    assert source(theirs) is None
    assert resolve_token(theirs, home=home, env=token).env_withheld
    assert source(theirs, SPLICE_REGISTRY=ours) is None
    assert source(ours, flag=ours) == "env"
    assert source(ours, flag=ours + "/") == "env"  # the same registry, spelled differently
    assert source(ours, SPLICE_REGISTRY=ours) == "env"
    assert source(ours, flag=theirs, SPLICE_REGISTRY=ours) is None  # the flag decides
    home.path.mkdir(parents=True)
    (home.path / "config.json").write_text(json.dumps({"registry": ours}), encoding="utf-8")
    assert source(ours) == "env"
    assert source(theirs) is None
    assert source("embedded:", flag="embedded:") is None  # never the embedded registry
