"""A link in an installed package's own place (``.splice/packages/@ns/name``) is replaced or
removed without being followed, a dangling one too (project/state_dir.py: links deeper than
the scope directories are left to the checks, which find the package modified or missing).

A checkout can ship a dangling link there. The transaction asked ``Path.exists``, which
follows links, so it saw nothing in the package's place and renamed the staged copy onto
the link: `splice install` (the repair `splice list` asks for) ended in ``INTERNAL_ERROR``
(``NotADirectoryError``) every time, and `splice remove` dropped the lock entry and left the
link. Both now take the link for what is there."""

from __future__ import annotations

import os
from pathlib import Path

from splice_build.sdk import Splice
from testing.registry_fixtures import new_project

PACKAGE = "@splice/example"


def test_a_dangling_link_in_the_package_place_is_replaced_and_removed(tmp_path: Path) -> None:
    project = new_project(tmp_path / "p")
    splice = Splice(project)
    splice.add([PACKAGE])
    place = project / ".splice/packages" / PACKAGE
    victim = tmp_path / "victim"
    victim.mkdir()
    cases = [victim / "missing", victim, victim / "missing"]  # the last for remove
    for number, target in enumerate(cases):
        os.rename(place, tmp_path / f"moved-away-{number}")
        place.symlink_to(target, target_is_directory=True)
        (row,) = splice.list()
        assert row["code"] in ("NOT_INSTALLED", "INSTALLED_PACKAGE_MODIFIED"), row
        if number < 2:
            splice.install()
            assert not place.is_symlink() and [r["status"] for r in splice.list()] == ["ok"]
    splice.remove([PACKAGE])
    assert not os.path.lexists(place) and splice.list() == []
    assert os.listdir(victim) == []
