"""The journaled swap: apply, roll back on failure, and recover after a crash at any step."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from splice_build.install import transaction
from splice_build.project.layout import ProjectLayout
from splice_build.project.lockfile import LockEntry, Lockfile, load_lockfile
from testing.registry_fixtures import new_project

INTEGRITY = "sha256-" + "a" * 64


def _entry(version: str) -> LockEntry:
    return LockEntry(
        version=version, integrity=INTEGRITY, resolved="embedded:/x", registry="embedded:"
    )


def _staged(layout: ProjectLayout, text: str) -> Path:
    staged = transaction.staging_dir(layout, "@acme/tool")
    (staged / "f.txt").write_text(text)
    return staged


def _setup(tmp_path: Path) -> ProjectLayout:
    layout = ProjectLayout(new_project(tmp_path / "p"))
    swap = transaction.swap_for(layout, "@acme/tool", _staged(layout, "old"))
    transaction.apply(layout, [swap], Lockfile({"@acme/tool": _entry("1.0.0")}), None)
    return layout


def test_apply_installs_and_cleans_up(tmp_path: Path) -> None:
    layout = _setup(tmp_path)
    assert (layout.package_dir("@acme/tool") / "f.txt").read_text() == "old"
    assert load_lockfile(layout.root).get("@acme/tool") == _entry("1.0.0")
    assert not layout.tmp_dir.exists()


def test_failed_commit_rolls_back(tmp_path: Path) -> None:
    layout = _setup(tmp_path)
    swap = transaction.swap_for(layout, "@acme/tool", _staged(layout, "new"))
    saved = layout.lock_file.read_bytes()
    layout.lock_file.unlink()
    layout.lock_file.mkdir()  # the commit (replacing splice.lock) fails
    with pytest.raises(OSError):
        transaction.apply(layout, [swap], Lockfile({"@acme/tool": _entry("2.0.0")}), None)
    assert (layout.package_dir("@acme/tool") / "f.txt").read_text() == "old"
    assert not (layout.tmp_dir / transaction.JOURNAL).exists()
    layout.lock_file.rmdir()
    layout.lock_file.write_bytes(saved)
    assert load_lockfile(layout.root).get("@acme/tool") == _entry("1.0.0")


@pytest.mark.parametrize("committed", [False, True])
@pytest.mark.parametrize("moved", ["none", "backup", "both"])
def test_recover_after_a_crash(tmp_path: Path, committed: bool, moved: str) -> None:
    layout = _setup(tmp_path)
    after = Lockfile({"@acme/tool": _entry("2.0.0")})
    swap = transaction.swap_for(layout, "@acme/tool", _staged(layout, "new"))
    journal = {"swaps": [swap.to_json()], "lock": after.to_json(), "project": None}
    (layout.tmp_dir / transaction.JOURNAL).write_text(json.dumps(journal))
    if moved in ("backup", "both"):
        swap.final.rename(swap.backup)
    if moved == "both":
        assert swap.staged is not None
        swap.staged.rename(swap.final)
    if committed:
        layout.lock_file.write_text(json.dumps(after.to_json()))
    assert transaction.recover(layout)
    expected = "new" if committed else "old"
    assert (layout.package_dir("@acme/tool") / "f.txt").read_text() == expected
    assert load_lockfile(layout.root).get("@acme/tool") == (
        after if committed else Lockfile({"@acme/tool": _entry("1.0.0")})
    ).get("@acme/tool")
    assert not layout.tmp_dir.exists()
    assert not transaction.recover(layout)


def test_removal(tmp_path: Path) -> None:
    layout = _setup(tmp_path)
    swap = transaction.swap_for(layout, "@acme/tool", None)
    transaction.apply(layout, [swap], Lockfile({}), None)
    assert not layout.package_dir("@acme/tool").exists()
    assert not layout.packages_dir.exists()
    assert not layout.lock_file.exists()
