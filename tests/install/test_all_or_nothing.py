"""A command installing several packages changes nothing when one of them is refused.

`splice update` (or `splice add a b`) where one new version asks for a permission nobody
accepted ended with ``PERMISSIONS_NOT_ACCEPTED`` ("nothing changes", docs/cli.md), yet the
packages before it had been swapped in and locked, and the error said nothing of them: each
was checked and installed in turn. Every package is now checked (verified, its signer
trusted, its permissions consented to) before any is swapped in (tasks/loader.py). The
registry is a crafted one on 127.0.0.1 (testing/crafted_registry.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from splice_build.errors import ErrorCode, SpliceError
from splice_build.sdk import Splice
from testing.crafted_registry import crafted_registry
from testing.project_state import state_bytes
from testing.registry_fixtures import new_project

NETWORK = {"fs": {"read": [], "write": []}, "network": ["api.example.com"], "env": []}


def test_one_refused_package_leaves_every_other_as_it_was(tmp_path: Path) -> None:
    with crafted_registry(tmp_path / "work") as registry:
        for name in ("@acme/first", "@acme/second"):
            registry.add_version(name, "1.0.0")
            registry.list_versions(name, ["1.0.0"])
        project = new_project(tmp_path / "p")
        splice = Splice(project, registry=registry.url)
        splice.add(["@acme/first", "@acme/second"])
        registry.add_version("@acme/first", "1.1.0")
        registry.add_version("@acme/second", "1.1.0", permissions=NETWORK)
        registry.add_version("@acme/third", "1.0.0")
        registry.add_version("@acme/fourth", "1.0.0", permissions=NETWORK)
        for name in ("@acme/first", "@acme/second"):
            registry.list_versions(name, ["1.0.0", "1.1.0"])
        for name in ("@acme/third", "@acme/fourth"):
            registry.list_versions(name, ["1.0.0"])
        before = state_bytes(project)
        for command in (splice.update, lambda: splice.add(["@acme/third", "@acme/fourth"])):
            with pytest.raises(SpliceError) as refused:
                command()
            assert refused.value.code is ErrorCode.PERMISSIONS_NOT_ACCEPTED
            assert state_bytes(project) == before


def test_a_file_as_a_scope_directory_is_refused_before_anything_changes(tmp_path: Path) -> None:
    """A file at ``.splice/packages/@beta`` (a checkout can ship one) made the swap of the
    second package fail ``INTERNAL_ERROR`` FileExistsError once the first had been swapped
    in and locked; it is refused up front, ``NOT_WRITABLE`` naming it, as a link there is."""
    with crafted_registry(tmp_path / "work") as registry:
        for name in ("@acme/first", "@beta/second"):
            registry.add_version(name, "1.0.0")
            registry.list_versions(name, ["1.0.0"])
        project = new_project(tmp_path / "p")
        scope = project / ".splice" / "packages" / "@beta"
        scope.parent.mkdir(parents=True)
        scope.write_text("not a scope\n")
        before = state_bytes(project)
        with pytest.raises(SpliceError) as refused:
            Splice(project, registry=registry.url).add(["@acme/first", "@beta/second"])
        assert refused.value.code is ErrorCode.NOT_WRITABLE
        assert str(scope) in refused.value.message
        assert state_bytes(project) == before
