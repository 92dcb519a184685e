"""The installed-files digest is read from bytes and refuses links and special files."""

from __future__ import annotations

import os
from pathlib import Path

from splice_build.spec.digests import files_digest
from splice_build.spec.tree_digest import tree_digest


def _tree(root: Path) -> Path:
    (root / "tools").mkdir(parents=True)
    (root / "manifest.json").write_bytes(b"{}")
    (root / "tools" / "a.js").write_bytes(b"a")
    return root


def test_equals_the_archive_digest(tmp_path: Path) -> None:
    root = _tree(tmp_path / "p")
    assert tree_digest(root) == files_digest({"manifest.json": b"{}", "tools/a.js": b"a"})


def test_hidden_files_count(tmp_path: Path) -> None:
    root = _tree(tmp_path / "p")
    before = tree_digest(root)
    (root / ".hidden").write_bytes(b"")
    assert tree_digest(root) != before


def test_same_bytes_new_mtime_same_digest(tmp_path: Path) -> None:
    root = _tree(tmp_path / "p")
    before = tree_digest(root)
    os.utime(root / "tools" / "a.js", (1, 1))
    assert tree_digest(root) == before


def test_links_and_missing_dirs_have_no_digest(tmp_path: Path) -> None:
    root = _tree(tmp_path / "p")
    (root / "link.js").symlink_to(root / "tools" / "a.js")
    assert tree_digest(root) is None
    assert tree_digest(tmp_path / "absent") is None
