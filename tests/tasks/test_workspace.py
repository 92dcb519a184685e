"""The workspace graph in process: per-project failure isolation, check mode, shared work."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from splice_build.errors import ErrorCode, SpliceError
from splice_build.install.installed import check_installed
from splice_build.project.layout import ProjectLayout
from splice_build.project.lockfile import load_lockfile
from splice_build.sdk import Splice
from splice_build.tasks.sync import SyncResult
from testing.registry_fixtures import new_project
from testing.workspaces import sync_in_place, tree_snapshot

GREETER = "@acme/greeter"
OTHER = "@acme/other"


def _status(result: SyncResult) -> dict[str, str]:
    return {p.path: p.status for p in result.projects}


def test_one_failing_project_does_not_stop_the_others(tmp_path: Path, registry: dict) -> None:
    new_project(tmp_path / "good", {GREETER: "^1.0.0", OTHER: "^1.0.0"})
    new_project(tmp_path / "asks", {GREETER: "^2.0.0"})  # declares network access
    broken = new_project(tmp_path / "broken")
    (broken / "splice.json").write_text("{not json")
    result = sync_in_place(tmp_path, jobs=2)
    assert _status(result) == {"asks": "failed", "broken": "failed", "good": "ok"}
    errors = {p.path: p.error.code for p in result.projects if p.error is not None}
    assert errors == {
        "asks": ErrorCode.PERMISSIONS_NOT_ACCEPTED,
        "broken": ErrorCode.INVALID_PROJECT,
    }
    assert not result.ok
    assert [p["status"] for p in Splice(tmp_path / "good").list()] == ["ok", "ok"]
    assert not ProjectLayout(tmp_path / "asks").packages_dir.exists()
    accepted = sync_in_place(tmp_path, accept_permissions=True)
    assert _status(accepted)["asks"] == "ok"
    assert [p.name for p in accepted.projects[0].installed] == [GREETER]


def test_check_on_a_fresh_workspace_writes_nothing(tmp_path: Path, registry: dict) -> None:
    new_project(tmp_path / "a", {GREETER: "^1.0.0"})
    new_project(tmp_path / "b", {OTHER: "^1.0.0"})
    before = tree_snapshot(tmp_path)
    result = sync_in_place(tmp_path, check=True)
    assert tree_snapshot(tmp_path) == before  # not even .splice/ or a graph database
    assert _status(result) == {"a": "changes", "b": "changes"}
    assert [(c.package_id, c.action, c.version) for c in result.projects[0].changes] == [
        (GREETER, "resolve", "^1.0.0")
    ]
    assert _status(sync_in_place(tmp_path)) == {"a": "ok", "b": "ok"}
    assert _status(sync_in_place(tmp_path, check=True)) == {"a": "ok", "b": "ok"}


def test_shared_package_is_fetched_once_and_each_lock_is_pinned(
    tmp_path: Path, registry: dict, home: Path
) -> None:
    for name in ("a", "b", "c"):
        new_project(tmp_path / name, {GREETER: "^1.0.0"})
    result = sync_in_place(tmp_path)
    assert [t for t in result.tasks.executed if t.startswith("fetch:")] == [f"fetch:{GREETER}"]
    locks = {json.dumps(load_lockfile(tmp_path / n).get(GREETER).to_json()) for n in "abc"}
    assert len(locks) == 1
    artifacts = [p for p in (home / "cache" / "artifacts" / "sha256").rglob("*") if p.is_file()]
    assert len(artifacts) == 1
    records = list((home / "cache" / "artifacts" / "signatures").iterdir())
    assert [r.name for r in records] == [artifacts[0].name + ".json"], "its checked signatures"


def test_remembered_manifest_never_skips_the_files_digest(tmp_path: Path, registry: dict) -> None:
    for name in ("a", "b"):
        new_project(tmp_path / name, {GREETER: "1.0.0"})
    sync_in_place(tmp_path)
    a, b = ProjectLayout(tmp_path / "a"), ProjectLayout(tmp_path / "b")
    entry = load_lockfile(a.root).get(GREETER)
    check_installed(a, GREETER, entry)  # parsed and remembered for this files digest
    manifest = b.package_dir(GREETER) / "manifest.json"
    data = json.loads(manifest.read_text())
    data["permissions"] = {"network": ["evil.example.com"]}
    manifest.write_text(json.dumps(data))
    with pytest.raises(SpliceError) as info:
        check_installed(b, GREETER, load_lockfile(b.root).get(GREETER))
    assert info.value.code is ErrorCode.INSTALLED_PACKAGE_MODIFIED
    restored = sync_in_place(tmp_path)
    assert [p.name for p in restored.projects[1].restored] == [GREETER]
