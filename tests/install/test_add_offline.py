"""`add` with the registry unreachable keeps a locked version its range accepts, as TS does.

TS's ``addPackage`` falls back to the locked version when the registry cannot be reached and
the range accepts it (a bare id: any locked version), installing it from the verified cache;
``add`` here ended ``REGISTRY_UNREACHABLE`` even for the package already installed. The bytes
are still only the lock's (docs/compatibility.md#install-pipeline); a range the locked
version is outside of still needs the registry.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from splice_build.errors import SpliceError
from splice_build.sdk import Splice
from testing.crafted_registry import crafted_registry
from testing.registry_fixtures import new_project, pinned

PACKAGE = "@acme/greeter"


def test_add_keeps_the_locked_version_from_the_cache_when_the_registry_is_unreachable(
    tmp_path: Path,
) -> None:
    project = new_project(tmp_path / "p")
    with crafted_registry(tmp_path / "work") as registry:
        registry.add_version(PACKAGE, "1.0.0")
        registry.list_versions(PACKAGE, ["1.0.0"])
        Splice(project, registry=registry.url).add([PACKAGE])
    splice = Splice(project, registry=registry.url)  # nothing listens there any more
    for ref, saved in ((PACKAGE, "^1.0.0"), (f"{PACKAGE}@~1.0.0", "~1.0.0")):
        (kept,) = splice.add([ref])
        assert (kept.version, kept.already_installed) == ("1.0.0", True), ref
        assert pinned(project, PACKAGE) == ("1.0.0", saved), ref
    shutil.rmtree(project / ".splice/packages")
    (restored,) = splice.add([PACKAGE])
    assert (restored.version, restored.from_cache) == ("1.0.0", True)
    assert pinned(project, PACKAGE) == ("1.0.0", "~1.0.0")  # a bare id keeps the project's range
    assert (project / ".splice/packages" / PACKAGE / "manifest.json").is_file()
    with pytest.raises(SpliceError) as refused:
        splice.add([f"{PACKAGE}@2.0.0"])
    assert str(refused.value.code) == "REGISTRY_UNREACHABLE"
    assert pinned(project, PACKAGE) == ("1.0.0", "~1.0.0")


def test_a_registry_that_was_never_reached_is_not_remembered(tmp_path: Path) -> None:
    """`splice --registry URL add` writes URL into a splice.json that names no registry, so
    later commands ask where the packages came from. When URL could not be reached and the
    locked version was kept offline, nothing came from it: a mistyped URL was written all the
    same, and every later `outdated`, `update` and fresh clone asked a registry that never
    answered."""
    project = new_project(tmp_path / "p")
    with crafted_registry(tmp_path / "work") as registry:
        registry.add_version(PACKAGE, "1.0.0")
        registry.list_versions(PACKAGE, ["1.0.0"])
        Splice(project, registry=registry.url).add([PACKAGE])
    named = json.loads((project / "splice.json").read_text(encoding="utf-8"))
    assert named.pop("registry") == registry.url  # reached: remembered
    (project / "splice.json").write_text(json.dumps(named), encoding="utf-8")
    (kept,) = Splice(project, registry=registry.url).add([PACKAGE])  # nothing listens there now
    assert kept.offline
    assert "registry" not in json.loads((project / "splice.json").read_text(encoding="utf-8"))


def test_a_registry_on_this_machine_that_is_not_running_says_to_start_it(tmp_path: Path) -> None:
    """`splice --registry local add …` before `splice registry serve` said "Check the URL …
    and your network": a connection refused on a loopback address is a server not started."""
    import socket

    project = new_project(tmp_path / "p")
    with socket.socket() as bound:  # bound, never listening: every connection is refused
        bound.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{bound.getsockname()[1]}"
        with pytest.raises(SpliceError) as refused:
            Splice(project, registry=url).add([PACKAGE])
    assert str(refused.value.code) == "REGISTRY_UNREACHABLE"
    assert refused.value.hint == (
        f"Nothing listens at {url}: start it (`splice registry serve`), or check the URL "
        "(`splice config get registry`)."
    )
