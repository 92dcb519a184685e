"""`add @ns/name` (or `@latest`) takes the newest stable version, as TS's ``addPackage`` does.

TS keeps a locked version only for a range the user gave (``hasExplicitRange``, ``latest``
excepted): a bare id asks for the newest stable version and records ``^<it>``
(docs/compatibility.md#install-pipeline). Here a bare id kept the locked 1.0.0 while 1.1.0
was listed, and rewrote the range to ``^1.0.0``. ``outdated`` reported the registry's own
``latest`` pointer (a crafted registry names an older listed version) where TS computes
``latestVersion`` from the list. A rollback is still refused: the locked version is kept
when every listed match is older (tests/install/test_rollback.py).
"""

from __future__ import annotations

from pathlib import Path

from splice_build.sdk import Splice
from testing.crafted_registry import crafted_registry
from testing.registry_fixtures import new_project, pinned

PACKAGE = "@acme/greeter"


def test_a_bare_id_takes_the_newest_stable_version_a_given_range_keeps_the_lock(
    tmp_path: Path,
) -> None:
    with crafted_registry(tmp_path / "work") as registry:
        for version in ("1.0.0", "1.1.0", "1.2.0-rc.1"):
            registry.add_version(PACKAGE, version)
        registry.list_versions(PACKAGE, ["1.0.0"])
        # (what is added, the lock and range after it); @latest is the bare id's range
        asked = {
            PACKAGE: ("1.1.0", "^1.1.0"),
            f"{PACKAGE}@*": ("1.0.0", "^1.0.0"),
        }
        projects = {}
        for number, ref in enumerate(asked):
            project = new_project(tmp_path / f"p{number}")
            Splice(project, registry=registry.url).add([f"{PACKAGE}@1.0.0"])
            projects[ref] = project
        # 1.1.0 published; the registry's own pointer still names 1.0.0 (listed last)
        registry.list_versions(PACKAGE, ["1.2.0-rc.1", "1.1.0", "1.0.0"])
        (row,) = Splice(projects[PACKAGE], registry=registry.url).outdated()
        assert (row["current"], row["wanted"], row["latest"]) == ("1.0.0", "1.0.0", "1.1.0")
        for ref, expected in asked.items():
            (report,) = Splice(projects[ref], registry=registry.url).add([ref])
            assert pinned(projects[ref], PACKAGE) == expected, ref
            assert report.version == expected[0], ref
