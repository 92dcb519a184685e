"""A version the registry lists but does not serve is named in the refusal.

A registry (a mirror that is behind on artifacts, a hostile one: testing/crafted_registry.py)
can list a version and answer 404 for its version answer or its download. ``update`` then
stopped with ``PACKAGE_NOT_FOUND`` and the registry's own 404 text as the whole message
("not here"): neither the package nor the version, though an update covers every package of
the project. The refusal names ``id@version`` and the registry, keeps the registry's text as
a detail, and nothing is changed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from splice_build.errors import ErrorCode, RegistryError
from splice_build.sdk import Splice
from testing.crafted_registry import crafted_registry, package_path
from testing.registry_fixtures import new_project

SERVED = "@acme/other"
UNSERVED = "@acme/greeter"


def test_an_update_to_a_listed_version_that_is_not_served_names_it(tmp_path: Path) -> None:
    with crafted_registry(tmp_path / "work") as registry:
        for package_id in (SERVED, UNSERVED):
            registry.add_version(package_id, "1.0.0")
            registry.add_version(package_id, "1.1.0")
            registry.list_versions(package_id, ["1.0.0"])
        project = new_project(tmp_path / "p")
        splice = Splice(project, registry=registry.url)
        splice.add([SERVED, UNSERVED])
        lock = (project / "splice.lock").read_bytes()
        for package_id in (SERVED, UNSERVED):
            registry.list_versions(package_id, ["1.0.0", "1.1.0"])
        answers = {
            "version answer": package_path(UNSERVED, "1.1.0"),
            "download": package_path(UNSERVED, "1.1.0", "download"),
        }
        for missing, path in reversed(answers.items()):  # the download first, then both
            registry.withdraw(path)
            with pytest.raises(RegistryError) as refused:
                splice.update()
            error = refused.value
            assert error.code is ErrorCode.PACKAGE_NOT_FOUND, missing
            assert error.message == (
                f"{UNSERVED}@1.1.0 is listed by {registry.url} but its {missing} was not found"
            )
            assert "registry: not here" in error.details, error.details
            assert error.hint is not None and f"splice add {UNSERVED}@<version>" in error.hint
            assert (project / "splice.lock").read_bytes() == lock, missing
            assert json.loads(lock)["packages"][SERVED]["version"] == "1.0.0"
