"""The journaled swap: apply, roll back on failure, and recover after a crash at any step."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
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
    transaction.apply(layout, [swap], Lockfile({"@acme/tool": _entry("1.0.0")}), {})
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
        transaction.apply(layout, [swap], Lockfile({"@acme/tool": _entry("2.0.0")}), {})
    assert (layout.package_dir("@acme/tool") / "f.txt").read_text() == "old"
    assert not (layout.tmp_dir / transaction.JOURNAL).exists()
    layout.lock_file.rmdir()
    layout.lock_file.write_bytes(saved)
    assert load_lockfile(layout.root).get("@acme/tool") == _entry("1.0.0")


def test_a_failure_after_the_commit_point_is_finished_not_undone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """splice.lock renamed into place, then the fsync of its directory fails (EIO, or a
    file system that refuses it): undoing the swaps then would leave the new lock over the
    old files. The journal stays instead, and the recovery finishes the change."""
    import errno

    from splice_build.project import atomic

    layout = _setup(tmp_path)
    swap = transaction.swap_for(layout, "@acme/tool", _staged(layout, "new"))
    real = atomic.fsync_directory

    def failing(directory: Path) -> None:
        if directory == layout.root and b"2.0.0" in layout.lock_file.read_bytes():
            raise OSError(errno.EIO, "injected", str(directory))
        real(directory)

    monkeypatch.setattr(atomic, "fsync_directory", failing)
    with pytest.raises(OSError):
        transaction.apply(layout, [swap], Lockfile({"@acme/tool": _entry("2.0.0")}), {})
    monkeypatch.setattr(atomic, "fsync_directory", real)
    assert load_lockfile(layout.root).get("@acme/tool") == _entry("2.0.0")
    assert (layout.package_dir("@acme/tool") / "f.txt").read_text() == "new"
    assert (layout.tmp_dir / transaction.JOURNAL).exists()

    assert transaction.recover(layout)

    assert (layout.package_dir("@acme/tool") / "f.txt").read_text() == "new"
    assert not layout.tmp_dir.exists()


@pytest.mark.parametrize("committed", [False, True])
@pytest.mark.parametrize("moved", ["none", "backup", "both"])
def test_recover_after_a_crash(tmp_path: Path, committed: bool, moved: str) -> None:
    layout = _setup(tmp_path)
    after = Lockfile({"@acme/tool": _entry("2.0.0")})
    swap = transaction.swap_for(layout, "@acme/tool", _staged(layout, "new"))
    journal = {"swaps": [swap.to_json()], "lock": after.to_json(), "ranges": {}}
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
    transaction.apply(layout, [swap], Lockfile({}), {})
    assert not layout.package_dir("@acme/tool").exists()
    assert not layout.packages_dir.exists()
    assert not layout.lock_file.exists()


def _victim(root: Path) -> Path:
    victim = root / "victim"
    (victim / "projects" / "work").mkdir(parents=True)
    (victim / "projects" / "work" / "main.c").write_text("int main;\n")
    (victim / ".bashrc").write_text("ORIGINAL\n")
    return victim


def _tree(root: Path) -> dict[str, bytes | None]:
    return {
        str(p.relative_to(root)): None if p.is_dir() else p.read_bytes()
        for p in sorted(root.rglob("*"))
    }


def _good_swap(layout: ProjectLayout) -> dict[str, object]:
    return transaction.swap_for(layout, "@acme/tool", _staged(layout, "new")).to_json()


# No swaps (a removal of packages none of which is installed), any lock (it is only compared
# with splice.lock), and no range change.
_OTHER_VALID_SHAPES = {("swaps", "[]"), ("lock", "{}"), ("ranges", "{}")}


def _journals(layout: ProjectLayout, victim: Path) -> dict[str, object]:
    """Every way of breaking the journal's shape, one change at a time from a good one, and
    the journal of an earlier format that named paths (pointing at the victim)."""
    lock = Lockfile({"@acme/tool": _entry("2.0.0")}).to_json()
    swap = _good_swap(layout)
    good = {"swaps": [swap], "lock": lock, "ranges": {"@acme/tool": "^2.0.0"}}
    cases: dict[str, object] = {"not an object": [good], "null": None, "text": "journal"}
    for key in good:
        cases[f"without {key}"] = {k: v for k, v in good.items() if k != key}
        for value in (None, 1, "x", [], {}, True):
            if value != good[key] and (key, repr(value)) not in _OTHER_VALID_SHAPES:
                cases[f"{key}={value!r}"] = {**good, key: value}
    cases["an extra key"] = {**good, "paths": []}
    cases["a whole splice.json (an earlier format)"] = {
        "swaps": [swap],
        "lock": lock,
        "project": {"specVersion": 1, "packages": {}},
    }
    for ranges in (
        {"acme/tool": "1.0.0"},
        {"@ACME/tool": None},
        {"@acme/tool": 5},
        {"@acme/tool": "not a range"},
        {"@acme/tool": ["1.0.0"]},
    ):
        cases[f"ranges {ranges!r}"] = {**good, "ranges": ranges}
    for key in swap:
        cases[f"a swap without {key}"] = {
            **good,
            "swaps": [{k: v for k, v in swap.items() if k != key}],
        }
        for value in (None, 1, 1.5, [], {}, "", "../..", str(victim)):
            cases[f"a swap's {key}={value!r}"] = {**good, "swaps": [{**swap, key: value}]}
    for token in ("a" * 11, "a" * 13, "A" * 12, "../" + "a" * 9, "a" * 11 + "/", "a" * 11 + "\n"):
        cases[f"token {token!r}"] = {**good, "swaps": [{**swap, "token": token}]}
    for package in ("acme/tool", "@acme/../tool", "@ACME/tool", "@acme/tool/x", "@acme", "/abs"):
        cases[f"package {package!r}"] = {**good, "swaps": [{**swap, "package": package}]}
    cases["an extra swap key"] = {**good, "swaps": [{**swap, "final": str(victim)}]}
    for committed in (False, True):
        cases[f"paths, lock {'equal' if committed else 'different'}"] = {
            "swaps": [
                {
                    "final": str(victim / ".bashrc"),
                    "backup": str(victim / "projects"),
                    "staged": str(victim / "projects" / "work"),
                }
            ],
            "lock": load_lockfile(layout.root).to_json() if committed else lock,
            "ranges": {},
        }
    return cases


def test_a_journal_of_any_other_shape_is_refused_and_nothing_moves(tmp_path: Path) -> None:
    from splice_build.errors import ErrorCode, ProjectError

    layout = _setup(tmp_path)
    victim = _victim(tmp_path)
    cases = _journals(layout, victim)
    assert len(cases) > 60
    for name, journal in cases.items():
        (layout.tmp_dir / transaction.JOURNAL).write_text(json.dumps(journal))
        project = _tree(layout.root)
        before = _tree(victim)
        with pytest.raises(ProjectError) as refused:
            transaction.recover(layout)
        assert refused.value.code == ErrorCode.NOT_WRITABLE, name
        assert "not a journal" in refused.value.message, name
        assert _tree(victim) == before, name
        assert _tree(layout.root) == project, name


def test_a_journal_that_is_not_json_is_refused(tmp_path: Path) -> None:
    from splice_build.errors import ErrorCode, ProjectError

    layout = _setup(tmp_path)
    layout.tmp_dir.mkdir()
    (layout.tmp_dir / transaction.JOURNAL).write_bytes(b"{garbage")
    with pytest.raises(ProjectError) as refused:
        transaction.recover(layout)
    assert refused.value.code == ErrorCode.NOT_WRITABLE
    assert "is not JSON" in refused.value.message


def test_recovery_applies_the_journaled_ranges_to_splice_json_as_edited_since(
    tmp_path: Path,
) -> None:
    """Killed after the commit point; splice.json edited by hand before the next command:
    the recovery sets the journal's ranges and keeps every edit."""
    layout = _setup(tmp_path)
    after = Lockfile({"@acme/tool": _entry("2.0.0")})
    swap = transaction.swap_for(layout, "@acme/tool", _staged(layout, "new"))
    journal = {
        "swaps": [swap.to_json()],
        "lock": after.to_json(),
        "ranges": {"@acme/tool": "^2.0.0", "@acme/gone": None},
    }
    (layout.tmp_dir / transaction.JOURNAL).write_text(json.dumps(journal))
    layout.lock_file.write_text(json.dumps(after.to_json()))
    edited = {
        "specVersion": 1,
        "packages": {"@acme/gone": "1.0.0", "@acme/mine": "^3.0.0"},
        "requireSignatures": ["acme"],
        "editorSetting": [1, 2],
    }
    layout.project_file.write_text(json.dumps(edited))

    assert transaction.recover(layout)

    assert json.loads(layout.project_file.read_text()) == {
        **edited,
        "packages": {"@acme/mine": "^3.0.0", "@acme/tool": "^2.0.0"},
    }
    assert not layout.tmp_dir.exists()


def test_a_journal_from_a_checkout_cannot_replace_its_reviewed_splice_json(
    tmp_path: Path,
) -> None:
    """A checkout ships ``.splice/tmp/journal.json`` whose lock is the one it ships too: the
    recovery rolls it forward, and an earlier format's whole ``splice.json`` (another
    registry, no ``requireSignatures``) is refused, the reviewed file left as it is."""
    from splice_build.errors import ErrorCode, ProjectError

    layout = _setup(tmp_path)
    reviewed = {"specVersion": 1, "packages": {}, "requireSignatures": ["acme"]}
    layout.project_file.write_text(json.dumps(reviewed))
    layout.tmp_dir.mkdir()
    journal = {
        "swaps": [],
        "lock": load_lockfile(layout.root).to_json(),
        "project": {"specVersion": 1, "packages": {}, "registry": "http://127.0.0.1:9"},
    }
    (layout.tmp_dir / transaction.JOURNAL).write_text(json.dumps(journal))

    with pytest.raises(ProjectError) as refused:
        transaction.recover(layout)

    assert refused.value.code == ErrorCode.NOT_WRITABLE
    assert json.loads(layout.project_file.read_text()) == reviewed


def test_remove_tree_lists_each_directory_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A directory of n subdirectories is listed once, not once after each of them (n²/2
    entries read: a checkout's ``.splice/tmp`` of 50,000 made recovery take many minutes)."""
    tree = tmp_path / "tree"
    for index in range(60):
        (tree / f"d{index}").mkdir(parents=True)
        (tree / f"d{index}" / "f").write_bytes(b"")
    listed = []
    scandir = os.scandir

    @contextlib.contextmanager
    def counted(fd: int) -> Iterator[list[os.DirEntry[str]]]:
        with scandir(fd) as entries:
            found = list(entries)
        listed.extend(entry.name for entry in found)
        yield found

    monkeypatch.setattr(transaction.os, "scandir", counted)
    transaction.remove_tree(tree)
    assert not tree.exists()
    assert len(listed) == 120  # every directory and file, once
