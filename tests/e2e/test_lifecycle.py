"""The real `splice` binary through the package lifecycle, against the embedded registry and a
served one: init → add → list → run (SDK) → verify → remove, fresh clones, tampering, repair."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from splice_build.project.layout import ProjectLayout
from splice_build.sdk import Splice
from testing.cli import run_splice
from testing.registry_fixtures import embedded_store, find_stored_artifact, new_project, publish
from testing.registry_server import RunningRegistry, registry_server

GREETER = "@acme/greeter"


@pytest.fixture(params=["embedded", "served"])
def registry(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[str, Path, RunningRegistry | None]]:
    """(registry URL, store directory, server or None) with @acme/greeter 1.0.0 published."""
    home = Path(os.environ["SPLICE_HOME"])
    if request.param == "embedded":
        store = embedded_store(home)
        publish(store, tmp_path / "pkgs")
        yield "embedded:", store, None
        return
    store = tmp_path / "served-data"
    publish(store, tmp_path / "pkgs")
    with registry_server(store, admin=False) as server:
        yield server.url, store, server


def _splice(project: Path, url: str, *args: str):
    return run_splice("--registry", url, *args, cwd=project)


def test_lifecycle(tmp_path: Path, registry: tuple[str, Path, RunningRegistry | None]) -> None:
    url, _, _ = registry
    project = tmp_path / "p"
    project.mkdir()
    assert _splice(project, url, "init").code == 0
    assert sorted(p.name for p in project.iterdir()) == ["splice.json"]
    added = _splice(project, url, "--json", "add", GREETER)
    assert added.code == 0, added.stderr
    [report] = json.loads(added.stdout)
    assert (report["name"], report["version"], report["alreadyInstalled"]) == (
        GREETER,
        "1.0.0",
        False,
    )
    assert added.stderr == ""  # progress is for people: --json prints none (as the TS CLI)
    again = _splice(project, url, "add", GREETER)
    assert "is already installed" in again.stdout
    listed = _splice(project, url, "--json", "list")
    assert json.loads(listed.stdout) == [
        {"name": GREETER, "version": "1.0.0", "range": "^1.0.0", "status": "ok"}
    ]
    result = Splice(project, registry=url).run("greeter.hello", {"name": "Dim"})
    assert result.to_json()["output"] == {"message": "Hello, Dim."}
    verified = _splice(project, url, "--json", "verify", GREETER)
    assert verified.code == 0, verified.stdout
    checks = {c["id"]: c["status"] for c in json.loads(verified.stdout)["checks"]}
    assert (
        checks["sha256"]
        == checks["package"]
        == checks["metadata"]
        == checks["installed"]
        == "passed"
    )
    removed = _splice(project, url, "remove", GREETER)
    assert removed.code == 0 and f"Removed {GREETER}@1.0.0" in removed.stdout
    assert json.loads(_splice(project, url, "--json", "list").stdout) == []
    assert _splice(project, url, "install", "extra").code == 2
    assert _splice(project, url, "add").code == 2


def test_fresh_clone_tamper_and_offline_repair(
    tmp_path: Path, registry: tuple[str, Path, RunningRegistry | None]
) -> None:
    url, _, server = registry
    first = new_project(tmp_path / "a")
    added = _splice(first, url, "add", GREETER)
    assert added.code == 0
    for line in (
        "Resolving @acme/greeter",
        "Downloading @acme/greeter@1.0.0",
        "Verifying sha256-",
        "Installing .splice/packages/@acme/greeter",
    ):
        assert line in added.stderr
    clone = new_project(tmp_path / "b")
    shutil.copy(first / "splice.json", clone / "splice.json")
    shutil.copy(first / "splice.lock", clone / "splice.lock")
    done = _splice(clone, url, "install")
    assert done.code == 0, done.stderr
    assert (clone / "splice.lock").read_bytes() == (first / "splice.lock").read_bytes()

    # An edited installed file: refused, then restored by `splice install` with the registry gone.
    hello = ProjectLayout(clone).package_dir(GREETER) / "tools" / "hello.js"
    hello.write_text("export default () => ({ message: 'pwned' });\n")
    assert json.loads(_splice(clone, url, "--json", "list").stdout)[0]["status"] == "invalid"
    if server is not None:
        server.stop()
        offline_url = url
    else:
        offline_url = "http://127.0.0.1:9"  # nothing listens: only the cache can help
    repaired = _splice(clone, offline_url, "install")
    assert repaired.code == 0, repaired.stderr
    assert json.loads(_splice(clone, offline_url, "--json", "list").stdout)[0]["status"] == "ok"


def test_registry_bytes_changed_under_a_lock(
    tmp_path: Path, registry: tuple[str, Path, RunningRegistry | None]
) -> None:
    url, store, _ = registry
    project = new_project(tmp_path / "p")
    assert _splice(project, url, "add", GREETER).code == 0
    lock = json.loads((project / "splice.lock").read_text())
    cache = Path(os.environ["SPLICE_HOME"]) / "cache" / "artifacts" / "sha256"
    artifact = (cache / lock["packages"][GREETER]["integrity"].removeprefix("sha256-")).read_bytes()
    stored = find_stored_artifact(store, artifact)
    tampered = bytearray(artifact)
    tampered[-20] ^= 0xFF
    stored.write_bytes(bytes(tampered))
    shutil.rmtree(cache)
    shutil.rmtree(ProjectLayout(project).packages_dir)
    before = (project / "splice.lock").read_bytes()
    done = _splice(project, url, "--json", "install")
    assert done.code == 1
    assert json.loads(done.stdout)["error"]["code"] == "LOCK_MISMATCH"
    assert (project / "splice.lock").read_bytes() == before
    assert not ProjectLayout(project).packages_dir.exists()
