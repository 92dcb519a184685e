"""The no-op judge takes every real path of a run through one memo (spec/project_state.py
``RunMemo.real``), each name resolved below its parent's real path, the members' shared
parents once: the answer must be ``os.path.realpath``'s for every kind of name, a link, a
link to a link, a dangling link, a loop, a missing name, ``..``, below a real parent and
below a linked one, relative or not."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from splice_build.spec.project_state import RunMemo


def test_real_paths_are_realpath_for_every_kind_of_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
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
    paths = [parent / name for parent in parents for name in names]
    paths += [parent / name / "below" for parent in parents for name in names]
    paths += [tmp_path / "linked" / "up" / "real" / "plain", Path("/")]
    paths += [tmp_path / "linked" / "link" / ".." / "plain", tmp_path / "linked" / "up" / ".."]
    monkeypatch.chdir(parents[1])
    paths += [Path("plain"), Path("link") / "x", Path("up") / "real", Path(".")]
    memo = RunMemo()
    assert [memo.real(p) for p in paths] == [Path(os.path.realpath(p)) for p in paths]
    with pytest.raises(OSError) as raised:
        memo.real_grant(parents[1] / "loop-a")
    assert raised.value.errno == errno.ELOOP
