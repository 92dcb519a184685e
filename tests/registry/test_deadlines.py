"""Every registry request has one deadline for connect, headers and body: a registry on
127.0.0.1 that sends one byte at a time (on metadata, on the headers, on a download) is
refused with ``REGISTRY_UNAVAILABLE`` once the deadline passes, and the project is unchanged."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from testing.cli import run_splice
from testing.counting_proxy import Drip, counting_proxy
from testing.project_state import state_bytes
from testing.registry_fixtures import publish
from testing.registry_server import registry_server

# One second for a request, and a download rate no real link misses: a byte every 50 ms
# (20 B/s) cannot finish any of these answers in time.
FAST = {"SPLICE_REGISTRY_DEADLINE": "1", "SPLICE_REGISTRY_MIN_RATE": "1000000"}
PACKAGE = "/packages/acme/greeter"


def _download(path: str) -> bool:
    return path.endswith("/download")


def _metadata(path: str) -> bool:
    return path == PACKAGE


def _version(path: str) -> bool:
    return path == PACKAGE + "/1.0.0"


def _search(path: str) -> bool:
    return path == "/packages/search"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The store every test reads (none publishes): written once for the module."""
    work = tmp_path_factory.mktemp("deadlines")
    store = work / "served-data"
    publish(store, work / "pkgs")
    publish(store, work / "pkgs", name="other")
    return store


@pytest.fixture(scope="module")
def served(store: Path) -> Iterator[str]:
    """One registry server for the module: each test puts its own stalling proxy before it."""
    with registry_server(store, admin=False) as server:
        yield server.url


@pytest.fixture
def project(tmp_path: Path, served: str) -> Path:
    """A project with one package installed, so there is state to keep."""
    project = tmp_path / "project"
    project.mkdir()
    assert run_splice("init", cwd=project).code == 0
    added = run_splice("--registry", served, "add", "@acme/other", cwd=project)
    assert added.code == 0, added.stderr
    return project


def _served(served: str, drip: Drip) -> Iterator[str]:
    with counting_proxy(served, drip=drip) as proxy:
        yield proxy.url


CASES = {
    "package-body": (Drip(_metadata, "body"), ["add", "@acme/greeter"]),
    "package-headers": (Drip(_metadata, "headers"), ["add", "@acme/greeter"]),
    "version-body": (Drip(_version, "body"), ["add", "@acme/greeter"]),
    "download-body": (Drip(_download, "body"), ["add", "@acme/greeter"]),
    "download-headers": (Drip(_download, "headers"), ["add", "@acme/greeter"]),
    "info-body": (Drip(_metadata, "body"), ["info", "@acme/greeter"]),
    "search-headers": (Drip(_search, "headers"), ["search", "greeter"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_stalling_registry_hits_the_deadline(served: str, project: Path, case: str) -> None:
    drip, command = CASES[case]
    before = state_bytes(project)
    for url in _served(served, drip):
        done = run_splice("--json", "--registry", url, *command, cwd=project, env=FAST, timeout=60)
        assert done.code == 1, done.stdout + done.stderr
        error = done.json()["error"]
        assert error["code"] == "REGISTRY_UNAVAILABLE", error
        assert "did not answer" in error["message"]
        assert "Traceback" not in done.stderr
    assert state_bytes(project) == before


def test_a_download_that_stops_after_its_headers_hits_the_deadline(
    served: str, project: Path
) -> None:
    """Headers, then nothing: the download's deadline (extended by its size at a rate of 2 kB/s,
    so more than a second past the request's: the artifact is 4 kB) ends it, not the socket's
    read timeout, which would be REGISTRY_UNREACHABLE (docs/registry.md#deadlines)."""
    slow_link = {"SPLICE_REGISTRY_DEADLINE": "1", "SPLICE_REGISTRY_MIN_RATE": "2000"}
    before = state_bytes(project)
    for url in _served(served, Drip(_download, "body", interval=60)):
        done = run_splice(
            "--json", "--registry", url, "add", "@acme/greeter", cwd=project, env=slow_link
        )
        assert done.code == 1, done.stdout + done.stderr
        error = done.json()["error"]
        assert error["code"] == "REGISTRY_UNAVAILABLE", error
        assert "did not answer" in error["message"] and "/download" in error["message"]
    assert state_bytes(project) == before


def test_the_same_registry_answers_in_time_without_the_stall(served: str, project: Path) -> None:
    """The control: the proxy and the short deadline alone do not refuse anything."""
    for url in _served(served, Drip(lambda path: False, "body")):
        done = run_splice("--registry", url, "add", "@acme/greeter", cwd=project, env=FAST)
        assert done.code == 0, done.stderr
    assert (project / "splice.lock").exists()


@pytest.mark.parametrize(
    "value", ["0", "-1", "soon", "1e9", "nan"], ids=["zero", "negative", "word", "huge", "nan"]
)
def test_a_malformed_deadline_is_a_config_error(project: Path, served: str, value: str) -> None:
    for url in _served(served, Drip(lambda path: False, "body")):
        env = {"SPLICE_REGISTRY_DEADLINE": value}
        done = run_splice(
            "--json", "--registry", url, "info", "@acme/greeter", cwd=project, env=env
        )
        assert done.code == 2, done.stdout + done.stderr
        assert done.json()["error"]["code"] == "INVALID_CONFIG"


def test_a_refused_value_is_told_the_form_and_the_exact_limit() -> None:
    """The bounds docs/registry.md#deadlines gives (a day, 1 GiB/s) are named exactly: the
    rate's read 'up to 1.07374e+09', a number no one can type back as the limit. And the
    message says the form cli.md gives: it read "must be a positive number", of 1.5 bytes/s,
    1e3 s or .5 s, each a positive number to whoever typed it."""
    from splice_build.errors import ProjectError
    from splice_build.registry.client.deadline import Deadlines

    seconds = "seconds as N or N.N in ASCII digits, above 0 and up to 86400"
    rate = "whole bytes per second in ASCII digits, from 1 to 1073741824"
    for name, value, wanted in (
        ("SPLICE_REGISTRY_DEADLINE", "86401", seconds),
        ("SPLICE_REGISTRY_DEADLINE", "1e3", seconds),
        ("SPLICE_REGISTRY_DEADLINE", ".5", seconds),
        ("SPLICE_REGISTRY_MIN_RATE", "2000000000", rate),
        ("SPLICE_REGISTRY_MIN_RATE", "1.5", rate),
    ):
        with pytest.raises(ProjectError) as caught:
            Deadlines.from_env({name: value})
        assert caught.value.code.value == "INVALID_CONFIG"
        assert caught.value.message == f"{name} must be {wanted}, not {value!r}"
    assert Deadlines.from_env({"SPLICE_REGISTRY_MIN_RATE": "1073741824"}).min_rate == 1024**3


def test_the_client_answers_again_after_a_deadline(served: str) -> None:
    """A long-lived client (SDK, MCP server) is not stuck with the abandoned request."""
    from splice_build.errors import ErrorCode, RegistryError
    from splice_build.registry.client.deadline import Deadlines
    from splice_build.registry.client.http import HttpRegistryClient

    stalled = {"on": True}
    drip = Drip(lambda path: stalled["on"] and path == PACKAGE, "headers")
    with counting_proxy(served, drip=drip) as p:
        client = HttpRegistryClient(p.url, deadlines=Deadlines(request=1))
        try:
            with pytest.raises(RegistryError) as caught:
                client.package("@acme/greeter")
            assert caught.value.code is ErrorCode.REGISTRY_UNAVAILABLE
            stalled["on"] = False
            assert client.package("@acme/greeter")["name"] == "@acme/greeter"
        finally:
            client.close()


def test_an_abandoned_request_ends_its_thread_and_connection(tmp_path: Path) -> None:
    """A registry that keeps sending ``100 Continue`` heads (http.client skips any number) never
    lets a read of the head wait out its socket timeout. The request is abandoned at its
    deadline, and its thread and connection end with it (registry/client/sockets.py): they
    read on for as long as the registry sent, in the SDK's process (main: until the drip
    ended, 8 s), and each retry left one more."""
    from splice_build.errors import ErrorCode, RegistryError
    from splice_build.sdk import Splice
    from testing.netservers import drip_server
    from testing.registry_fixtures import new_project

    project = new_project(tmp_path / "project")
    with drip_server([b"HTTP/1.1 100 Continue\r\n\r\n"] * 400, 0.02) as drip:
        splice = Splice(
            project,
            registry=f"http://127.0.0.1:{drip.port}",
            env={**FAST, "SPLICE_REGISTRY_DEADLINE": "0.5"},
            home=tmp_path / "home",
        )
        with pytest.raises(RegistryError) as caught:
            splice.add(["@acme/greeter"])
        assert caught.value.code is ErrorCode.REGISTRY_UNAVAILABLE
        ends = time.monotonic() + 3
        while _requests_running() and time.monotonic() < ends:
            time.sleep(0.05)
        assert not _requests_running()
        assert not drip.finished.is_set()
        splice.close()


def _requests_running() -> bool:
    return any(t.name == "splice-registry-request" for t in threading.enumerate())
