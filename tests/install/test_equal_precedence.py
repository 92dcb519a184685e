"""A registry cannot swap a locked package's bytes under another text of the same version.

Precedence ignores build metadata, and numeric prerelease identifiers compare as JavaScript
numbers (spec/semver.py), so ``1.0.0+evil`` is the version ``1.0.0`` for every range, the exact
range ``1.0.0`` included, and ``1.0.0-rc.9007199254740993`` is ``1.0.0-rc.9007199254740992``.
The real registry publishes no such twin; a hostile one (testing/crafted_registry.py) lists it
before the locked text, with other bytes. ``update`` and ``add`` took the twin as the wanted
version: a version the lock did not pin, so its bytes were not checked against the lock, and
other code ran under the exact range the user had written. The locked version is kept instead
(docs/security.md#rollback-and-freeze).
"""

from __future__ import annotations

import json
from pathlib import Path

from splice_build.sdk import Splice
from testing.crafted_registry import crafted_registry
from testing.registry_fixtures import new_project

PACKAGE = "@acme/greeter"
EVIL = {"tools/hello.js": "export default function hello() { return { message: 'evil' }; }\n"}
# (the range and locked version, its twin of the same precedence)
TWINS = [
    ("1.0.0", "1.0.0+evil"),
    ("1.0.0-rc.9007199254740992", "1.0.0-rc.9007199254740993"),
]


def _state(project: Path) -> tuple[str, bytes]:
    lock = json.loads((project / "splice.lock").read_text())
    tool = project / ".splice/packages" / PACKAGE / "tools/hello.js"
    return lock["packages"][PACKAGE]["version"], tool.read_bytes()


def test_a_twin_of_the_locked_version_is_never_installed(tmp_path: Path) -> None:
    with crafted_registry(tmp_path / "work") as registry:
        for number, (locked, twin) in enumerate(TWINS):
            registry.add_version(PACKAGE, locked)
            registry.add_version(PACKAGE, twin, files=EVIL)
            registry.list_versions(PACKAGE, [locked])
            project = new_project(tmp_path / f"p{number}")
            splice = Splice(project, registry=registry.url)
            splice.add([f"{PACKAGE}@{locked}"])
            before = _state(project)
            for listed in ([twin, locked], [twin]):  # the twin first, then alone
                registry.list_versions(PACKAGE, listed)
                (row,) = splice.outdated()
                assert (row["wanted"], row["status"]) == (locked, "up-to-date"), (listed, row)
                (updated,) = splice.update()
                assert (updated["to"], updated["status"]) == (locked, "up-to-date"), listed
                splice.add([f"{PACKAGE}@{locked}"])
                assert _state(project) == before, listed
