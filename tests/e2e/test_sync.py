"""`splice sync` through the real binary on a generated monorepo: 12 projects sharing 6
packages, served by the real registry server behind a counting proxy."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from splice_build.project.layout import ProjectLayout
from testing.cli import Completed, run_splice
from testing.counting_proxy import CountingProxy, counting_proxy
from testing.registry_fixtures import publish
from testing.registry_server import registry_server
from testing.workspaces import make_workspace, publish_shared, tree_snapshot

PROJECTS, PACKAGES, PER_PROJECT = 12, 6, 3


@pytest.fixture
def served(tmp_path: Path) -> Iterator[CountingProxy]:
    store = tmp_path / "served-data"
    publish_shared(store, tmp_path / "pkgs", PACKAGES)
    publish(store, tmp_path / "pkgs", name="pkg00", version="1.1.0")
    with registry_server(store, admin=False) as server, counting_proxy(server.url) as proxy:
        yield proxy


def _sync(root: Path, proxy: CountingProxy, *args: str) -> Completed:
    return run_splice("--registry", proxy.url, "--json", "sync", *args, cwd=root)


def _projects(done: Completed) -> dict[str, dict]:
    return {p["path"]: p for p in done.json()["projects"]}


def _names(entries: list[dict]) -> list[str]:
    return [e["name"] for e in entries]


def _graph_work(done: Completed) -> list[str]:
    return [t for t in done.json()["tasks"]["executed"] if t.startswith(("install", "fetch:"))]


def _state(root: Path) -> dict[str, str]:
    """Every lock and installed file of the workspace (the graph database left out)."""
    return {
        path: digest
        for path, digest in tree_snapshot(root).items()
        if path.endswith("splice.lock") or "/.splice/packages" in path
    }


def test_sync_lifecycle(tmp_path: Path, served: CountingProxy) -> None:
    root = tmp_path / "ws"
    make_workspace(root, PROJECTS, [f"@acme/pkg{i:02d}" for i in range(PACKAGES)], PER_PROJECT)

    # First sync: everything installed, each artifact downloaded exactly once.
    first = _sync(root, served)
    assert first.code == 0, first.stderr
    projects = _projects(first)
    assert len(projects) == PROJECTS
    assert all(len(p["installed"]) == PER_PROJECT for p in projects.values())
    downloads = served.downloads()
    assert len(downloads) == PACKAGES == len(set(downloads))
    assert "Installing" not in first.stderr  # progress is for people: --json prints none

    # Second sync: no install or fetch task runs, nothing is downloaded.
    second = _sync(root, served)
    assert second.code == 0
    assert _graph_work(second) == []
    assert all(len(p["unchanged"]) == PER_PROJECT for p in _projects(second).values())
    assert len(served.downloads()) == PACKAGES

    # Editing one project's range rebuilds only that project.
    spec = root / "packages" / "p00" / "splice.json"
    data = json.loads(spec.read_text())
    data["packages"]["@acme/pkg00"] = "1.0.0"  # the first sync took 1.1.0
    spec.write_text(json.dumps(data))
    edited = _sync(root, served)
    assert edited.code == 0, edited.stderr
    assert _graph_work(edited) == ["fetch:@acme/pkg00", "install:packages/p00"]
    p00 = _projects(edited)["packages/p00"]
    assert p00["installed"] == [{"name": "@acme/pkg00", "version": "1.0.0"}]
    assert len(p00["unchanged"]) == PER_PROJECT - 1

    # A tampered installed file in one project is restored and reported.
    hello = ProjectLayout(root / "packages" / "p05").package_dir("@acme/pkg05") / "tools/hello.js"
    hello.write_text("export default () => ({ message: 'pwned' });\n")
    repaired = run_splice("--registry", served.url, "sync", cwd=root)
    assert repaired.code == 0, repaired.stderr
    assert "packages/p05: 1 restored, 2 unchanged" in repaired.stdout
    assert "[packages/p05] Installing .splice/packages/@acme/pkg05..." in repaired.stderr
    assert "pwned" not in hello.read_text()
    assert _graph_work(_sync(root, served)) == []


def test_check_changes_no_byte_and_frozen_fails_on_stale_lock(
    tmp_path: Path, served: CountingProxy
) -> None:
    root = tmp_path / "ws"
    make_workspace(root, PROJECTS, [f"@acme/pkg{i:02d}" for i in range(PACKAGES)], PER_PROJECT)
    assert _sync(root, served).code == 0
    layout = ProjectLayout(root / "packages" / "p03")
    shutil.rmtree(layout.package_dir("@acme/pkg03"))
    (layout.package_dir("@acme/pkg04") / ".hidden").write_text("x")
    spec = root / "packages" / "p07" / "splice.json"
    data = json.loads(spec.read_text())
    data["packages"]["@acme/pkg00"] = "^1.0.0"  # p07 uses pkg01..pkg03: unlocked now
    spec.write_text(json.dumps(data))

    before = tree_snapshot(tmp_path)
    checked = _sync(root, served, "--check")
    assert checked.code == 1
    assert tree_snapshot(tmp_path) == before
    changes = {path: p["changes"] for path, p in _projects(checked).items() if p["changes"]}
    assert {
        path: [(c["name"], c["action"]) for c in c_list] for path, c_list in changes.items()
    } == {
        "packages/p03": [("@acme/pkg03", "install"), ("@acme/pkg04", "restore")],
        "packages/p07": [("@acme/pkg00", "resolve")],
    }
    text = run_splice("--registry", served.url, "sync", "--check", cwd=root)
    assert "packages/p03: would install @acme/pkg03@1.0.0, restore @acme/pkg04@1.0.0" in text.stdout

    frozen = _sync(root, served, "--frozen")
    assert frozen.code == 1
    projects = _projects(frozen)
    assert projects["packages/p07"]["error"]["code"] == "LOCK_MISMATCH"
    assert projects["packages/p03"]["status"] == "ok"  # the others still synced
    assert _names(projects["packages/p03"]["restored"]) == ["@acme/pkg04"]
    assert _names(projects["packages/p03"]["installed"]) == ["@acme/pkg03"]


def test_parallel_sync_reaches_the_same_state(tmp_path: Path, served: CountingProxy) -> None:
    ids = [f"@acme/pkg{i:02d}" for i in range(PACKAGES)]
    serial, parallel = tmp_path / "serial", tmp_path / "parallel"
    make_workspace(serial, PROJECTS, ids, PER_PROJECT)
    make_workspace(parallel, PROJECTS, ids, PER_PROJECT)
    assert _sync(serial, served, "-j", "1").code == 0
    done = _sync(parallel, served, "-j", "4")
    assert done.code == 0, done.stderr
    assert _state(parallel) == _state(serial)
    assert len(_state(serial)) > PROJECTS


def test_sync_records_the_fields_an_incomplete_lock_lacks(
    tmp_path: Path, served: CountingProxy
) -> None:
    """docs/security.md#incomplete-lock-entries: sync, like install, re-derives them."""
    root = tmp_path / "ws"
    make_workspace(root, 2, [f"@acme/pkg{i:02d}" for i in range(2)], 2)
    assert _sync(root, served).code == 0
    locks = sorted(root.glob("packages/*/splice.lock"))
    complete = {path: path.read_bytes() for path in locks}
    for path, field in zip(locks, ("files", "permissions"), strict=True):
        lock = json.loads(path.read_text())
        for entry in lock["packages"].values():
            del entry[field]
        path.write_text(json.dumps(lock, indent=2) + "\n")
        refused = run_splice("--json", "list", cwd=path.parent).json()
        assert {row["code"] for row in refused} == {"LOCK_INCOMPLETE"}
    synced = _sync(root, served)
    assert synced.code == 0, synced.stderr
    assert {path: path.read_bytes() for path in locks} == complete
    assert all(len(p["restored"]) == 2 for p in _projects(synced).values())
