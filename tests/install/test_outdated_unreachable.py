"""``outdated`` and ``update`` name the package whose registry could not be asked.

A project whose lock pins packages from two registries asks each package's own
(docs/cli.md#which-registry). With one of them down, both commands stopped with
``REGISTRY_UNREACHABLE`` "Cannot reach the registry at URL" and nothing said which package
was asked there, nor that the URL came from its ``splice.lock`` entry (the hint points at
``splice config get registry``, which does not hold it).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from splice_build.errors import ErrorCode, RegistryError
from splice_build.sdk import Splice
from testing.crafted_registry import crafted_registry
from testing.registry_fixtures import new_project

UP = "@acme/greeter"
DOWN = "@beta/other"


def test_a_registry_down_for_one_package_is_named_with_that_package(tmp_path: Path) -> None:
    project = new_project(tmp_path / "p")
    with crafted_registry(tmp_path / "up") as up:
        up.add_version(UP, "1.0.0")
        up.list_versions(UP, ["1.0.0"])
        with crafted_registry(tmp_path / "down") as down:
            down.add_version(DOWN, "1.0.0")
            down.list_versions(DOWN, ["1.0.0"])
            Splice(project, env={"SPLICE_REGISTRY": down.url}).add([DOWN])
            Splice(project, env={"SPLICE_REGISTRY": up.url}).add([UP])
        lock = (project / "splice.lock").read_bytes()
        splice = Splice(project, env={})
        for command in (splice.outdated, splice.update):
            with pytest.raises(RegistryError) as refused:
                command()
            error = refused.value
            assert error.code is ErrorCode.REGISTRY_UNREACHABLE, command
            assert error.message == f"Cannot reach the registry at {down.url}"
            assert f"asked for {DOWN}: the registry its splice.lock entry names" in error.details
            assert error.hint == (
                "Check that this registry is up and your network: it is the one splice.lock "
                f"records for {DOWN}, not the one `splice config get registry` names."
            )
            assert (project / "splice.lock").read_bytes() == lock
