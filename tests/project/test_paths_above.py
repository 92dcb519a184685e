"""The entries on the way to a path, by the path given and by its real path
(project/paths_above.py): each owner check walks them."""

from __future__ import annotations

import os
from pathlib import Path

from splice_build.project.paths_above import entries_above


def test_a_link_on_the_way_adds_the_entries_on_the_way_to_its_target(tmp_path: Path) -> None:
    """The directory a link reaches can be replaced by whoever may rename an entry on the
    way to it; those entries are walked once each, after the path's own."""
    (tmp_path / "real" / "home").mkdir(parents=True)
    (tmp_path / "way").mkdir()
    (tmp_path / "way" / "link").symlink_to(tmp_path / "real")
    given = tmp_path / "way" / "link" / "home"
    steps = list(entries_above(given))
    way = [
        (str(tmp_path / "way" / "link"), str(given)),
        (str(tmp_path / "way"), str(tmp_path / "way" / "link")),
    ]
    assert steps[:2] == way
    real = os.path.realpath(given)
    assert (str(tmp_path / "real"), real) in steps
    assert (str(tmp_path), str(tmp_path / "real")) in steps
    assert len(steps) == len(set(steps))
    assert steps[-1] == (str(tmp_path), real.rsplit("/", 1)[0])  # the rest was walked
    assert ("/", "/" + given.parts[1]) in steps
    assert [entry for _, entry in steps].count(str(tmp_path)) == 1
