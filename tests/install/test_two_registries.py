"""Commands of a project whose lock pins packages from two registries.

A project whose splice.json names no registry finds each locked package again through the
registry its lock entry came from (docs/cli.md#which-registry). ``splice update`` ran one
graph, so one transaction, per registry: a refusal among the second registry's packages
(``PERMISSIONS_NOT_ACCEPTED``, "nothing changes") came after the first registry's packages
had been installed and locked. Now every package, from every registry, is checked before any
is swapped in. ``splice verify`` asked the project's registry for a package locked from
another one: its report was about another registry's bytes (or none at all); it now asks the
entry's own registry, as ``outdated`` and ``update`` do. ``splice install`` and ``sync`` of a
fresh clone asked one registry for every locked package (``LOCK_MISMATCH``, "the registry no
longer has this version", for the other registry's): each is now fetched from its entry's
registry unless ``--registry``, ``SPLICE_REGISTRY`` or splice.json names one. Both
registries are crafted ones on 127.0.0.1 (testing/crafted_registry.py).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from splice_build.errors import ErrorCode, SpliceError
from splice_build.project.home import SpliceHome
from splice_build.project.workspace import find_workspace
from splice_build.sdk import Splice
from splice_build.tasks.sync import sync_workspace
from testing.crafted_registry import CraftedRegistry, crafted_registry
from testing.project_state import state_bytes
from testing.registry_fixtures import new_project

NETWORK = {"fs": {"read": [], "write": []}, "network": ["api.example.com"], "env": []}


def _through(registry_url: str) -> dict[str, str]:
    """The environment of a command run with ``SPLICE_REGISTRY`` (never written to splice.json)."""
    return {**os.environ, "SPLICE_REGISTRY": registry_url}


def _locked_from_both(directory: Path, first: CraftedRegistry, second: CraftedRegistry) -> Path:
    """A project locking ``@acme/first@1.0.0`` from ``first`` and ``@beta/second@1.0.0`` from
    ``second`` (each added through ``SPLICE_REGISTRY``)."""
    first.add_version("@acme/first", "1.0.0")
    first.list_versions("@acme/first", ["1.0.0"])
    second.add_version("@beta/second", "1.0.0")
    second.list_versions("@beta/second", ["1.0.0"])
    project = new_project(directory)
    Splice(project, env=_through(first.url)).add(["@acme/first"])
    Splice(project, env=_through(second.url)).add(["@beta/second"])
    return project


def test_update_across_registries_is_all_or_nothing(tmp_path: Path) -> None:
    with (
        crafted_registry(tmp_path / "a") as first,
        crafted_registry(tmp_path / "b") as second,
    ):
        project = _locked_from_both(tmp_path / "p", first, second)
        first.add_version("@acme/first", "1.1.0")
        first.list_versions("@acme/first", ["1.0.0", "1.1.0"])
        second.add_version("@beta/second", "1.1.0", permissions=NETWORK)
        second.list_versions("@beta/second", ["1.0.0", "1.1.0"])
        splice = Splice(project)
        before = state_bytes(project)
        with pytest.raises(SpliceError) as refused:
            splice.update()
        assert refused.value.code is ErrorCode.PERMISSIONS_NOT_ACCEPTED
        assert state_bytes(project) == before
        rows = splice.update(accept_permissions=True)
        assert [(r["id"], r["to"], r["status"]) for r in rows] == [
            ("@acme/first", "1.1.0", "updated"),
            ("@beta/second", "1.1.0", "updated"),
        ]
        lock = (project / "splice.lock").read_text(encoding="utf-8")
        assert first.url in lock and second.url in lock


def test_verify_asks_the_registry_of_the_lock_entry(tmp_path: Path) -> None:
    with (
        crafted_registry(tmp_path / "a") as first,
        crafted_registry(tmp_path / "b") as second,
    ):
        second.add_version("@beta/second", "1.0.0")
        second.list_versions("@beta/second", ["1.0.0"])
        # The user's registry has other bytes under the same name and version.
        first.add_version("@beta/second", "1.0.0", files={"README.md": "another package"})
        first.list_versions("@beta/second", ["1.0.0"])
        project = new_project(tmp_path / "p")
        Splice(project, env=_through(second.url)).add(["@beta/second"])
        splice = Splice(project)
        splice.home.config_file.write_text(json.dumps({"registry": first.url}), encoding="utf-8")
        report = splice.verify("@beta/second")
        assert report["verified"], report["checks"]
        assert [c["status"] for c in report["checks"] if c["id"] in ("pinned", "installed")] == [
            "passed",
            "passed",
        ]


def test_a_fresh_clone_installs_from_the_registry_of_each_lock_entry(tmp_path: Path) -> None:
    with (
        crafted_registry(tmp_path / "a") as first,
        crafted_registry(tmp_path / "b") as second,
    ):
        project = _locked_from_both(tmp_path / "p", first, second)
        clone, synced = tmp_path / "clone", tmp_path / "synced"
        for directory in (clone, synced):
            directory.mkdir()
            for name in ("splice.json", "splice.lock"):
                shutil.copyfile(project / name, directory / name)
        committed = state_bytes(clone)
        # SPLICE_REGISTRY comes before the lock: the other registry's package is not there.
        with pytest.raises(SpliceError) as refused:
            Splice(clone, home=tmp_path / "h1", env=_through(first.url)).install()
        assert refused.value.code is ErrorCode.LOCK_MISMATCH
        assert state_bytes(clone) == committed
        splice = Splice(clone, home=tmp_path / "h2")
        splice.install()
        assert [(r["name"], r["status"]) for r in splice.list()] == [
            ("@acme/first", "ok"),
            ("@beta/second", "ok"),
        ]
        assert (clone / "splice.lock").read_bytes() == committed["splice.lock"]
        workspace = find_workspace(synced, root=None, remember=False)
        result = sync_workspace(workspace, home=SpliceHome(tmp_path / "h3"), env=os.environ)
        assert result.ok, result.text()
        assert [r["status"] for r in Splice(synced, home=tmp_path / "h3").list()] == ["ok"] * 2
