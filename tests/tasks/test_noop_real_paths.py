"""The no-op judge compares each member's recorded root with its real path, resolving the
members' shared parents once (tasks/noop.py ``_real_paths``): the answer must be
``os.path.realpath``'s for every kind of name, a link, a link to a link, a dangling link, a
loop, a missing name, below a real parent and below a linked one."""

from __future__ import annotations

import os
from pathlib import Path

from splice_build.tasks.noop import _real_paths


def test_real_paths_are_realpath_for_every_kind_of_name(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.mkdir()
    parents = [tmp_path / "real", tmp_path / "linked"]
    parents[0].mkdir()
    os.symlink(parents[0], parents[1])
    (parents[0] / "plain").mkdir()
    os.symlink(target, parents[0] / "link")
    os.symlink(parents[0] / "link", parents[0] / "link-to-link")
    os.symlink(tmp_path / "nowhere", parents[0] / "dangling")
    os.symlink(parents[0] / "loop-b", parents[0] / "loop-a")
    os.symlink(parents[0] / "loop-a", parents[0] / "loop-b")
    os.symlink("..", parents[0] / "up")
    names = ["plain", "link", "link-to-link", "dangling", "loop-a", "missing", "up"]
    members = [parent / name for parent in parents for name in names]
    members += [tmp_path / "linked" / "up" / "real" / "plain", Path("/")]
    assert _real_paths(members) == {m: os.path.realpath(m) for m in members}
