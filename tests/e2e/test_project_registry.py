"""A project remembers the registry its packages came from: `splice --registry URL add` in a
project created without one writes splice.json's ``registry``, so a later `outdated` and
`update` (no flag) ask that registry, not the embedded one; a project made before that falls
back to the registry of each lock entry. ``--registry`` and ``SPLICE_REGISTRY`` still win."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from splice_build.project.lockfile import load_lockfile
from testing.cli import run_splice
from testing.registry_fixtures import publish
from testing.registry_server import RunningRegistry, registry_server

GREETER = "@acme/greeter"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[RunningRegistry]:
    """A served registry with @acme/greeter 1.0.0 (the embedded one has nothing)."""
    store = tmp_path / "served-data"
    publish(store, tmp_path / "pkgs")
    with registry_server(store, admin=False) as server:
        yield server


def _project_json(project: Path) -> dict:
    return json.loads((project / "splice.json").read_text(encoding="utf-8"))


def _added_from(served: RunningRegistry, tmp_path: Path) -> Path:
    project = tmp_path / "app"
    project.mkdir()
    assert run_splice("init", cwd=project).code == 0
    added = run_splice("--registry", served.url, "add", f"{GREETER}@^1.0.0", cwd=project)
    assert added.code == 0, added.stderr
    publish(served.data, tmp_path / "pkgs", version="1.1.0")  # a newer version appears
    return project


def _outdated(project: Path, *args: str, env: dict[str, str] | None = None) -> dict:
    done = run_splice(*args, "--json", "outdated", cwd=project, env=env)
    assert done.code == 0, done.stderr
    [row] = done.json()
    return row


def test_add_with_a_registry_remembers_it_for_outdated_and_update(
    served: RunningRegistry, tmp_path: Path
) -> None:
    project = _added_from(served, tmp_path)
    assert _project_json(project) == {
        "specVersion": 1,
        "registry": served.url,
        "packages": {GREETER: "^1.0.0"},
    }
    row = _outdated(project)
    assert (row["current"], row["wanted"], row["status"]) == ("1.0.0", "1.1.0", "update-available")
    updated = run_splice("--json", "update", cwd=project)
    assert updated.code == 0, updated.stderr
    assert [(r["from"], r["to"], r["status"]) for r in updated.json()] == [
        ("1.0.0", "1.1.0", "updated")
    ]
    entry = load_lockfile(project).get(GREETER)
    assert entry is not None and (entry.version, entry.registry) == ("1.1.0", served.url)
    assert _project_json(project)["packages"] == {GREETER: "^1.0.0"}  # ranges never change


def test_without_a_project_registry_the_lock_entry_s_registry_is_asked(
    served: RunningRegistry, tmp_path: Path
) -> None:
    project = _added_from(served, tmp_path)
    legacy = _project_json(project)
    del legacy["registry"]  # as a project made before splice.json remembered it
    (project / "splice.json").write_text(json.dumps(legacy), encoding="utf-8")
    assert _outdated(project)["status"] == "update-available"
    updated = run_splice("--json", "update", cwd=project)
    assert updated.code == 0, updated.stderr
    assert updated.json()[0]["to"] == "1.1.0"
    # SPLICE_REGISTRY (and --registry) come before the lock: the embedded registry is asked.
    for args, env in (((), {"SPLICE_REGISTRY": "embedded"}), (("--registry", "embedded"), None)):
        done = run_splice(*args, "--json", "outdated", cwd=project, env=env)
        assert done.code == 1 and done.json()["error"]["code"] == "PACKAGE_NOT_FOUND", done.stdout


def test_a_project_registry_is_never_replaced_by_a_flag(
    served: RunningRegistry, tmp_path: Path
) -> None:
    project = tmp_path / "app"
    project.mkdir()
    assert run_splice("--registry", "local", "init", cwd=project).code == 0
    added = run_splice("--registry", served.url, "add", f"{GREETER}@^1.0.0", cwd=project)
    assert added.code == 0, added.stderr
    assert _project_json(project)["registry"] == "local"
