"""The seeds of the format parsers' targets are read as what they stand for, in today's format.

A seed in a format the code no longer reads is refused at its first field, and so is every
mutation of it: the statcache seeds of format version 6 (the code reads 8) kept libFuzzer at
78 edges of the version check, never reaching the records, and two frame seeds named fields
the protocol had renamed. Each parser here refuses an input as a whole, so a stale seed is
seen at once.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from fuzz.engine import CORPUS
from fuzz.state_targets import _OTHER, _TOKEN
from splice_build.install.consent_record import read_record, record_path
from splice_build.install.statcache import _parse
from splice_build.install.transaction import JOURNAL, _read_journal
from splice_build.project import walk_record
from splice_build.project.layout import ProjectLayout
from splice_build.project.lockfile import load_lockfile
from splice_build.project.project_file import load_project_file
from splice_build.project.workspace import _load_memo
from splice_build.runtime.protocol import parse_child_message
from splice_build.spec.git_links import gitlinks
from splice_build.spec.manifest import Manifest

# Seeds that stand for a refusal (an input that once found a defect).
REFUSALS = {"frames": {"redirect-object.json"}, "install_journal": {"traversal.json"}}


def _statcache(data: bytes, tmp_path: Path) -> None:
    assert _parse(data, written_ns=2**63) is not None


def _frame(data: bytes, tmp_path: Path) -> None:
    parse_child_message(data)


def _written(name: str, load: Callable[[Path], object]) -> Callable[[bytes, Path], None]:
    def read(data: bytes, tmp_path: Path) -> None:
        (tmp_path / name).write_bytes(data)
        load(tmp_path)

    return read


def _manifest(data: bytes, tmp_path: Path) -> None:
    Manifest.from_json(data.decode())


def _consent_record(data: bytes, tmp_path: Path) -> None:
    """After the target's first byte (whose user owns the file), a record of the project."""
    home, root = tmp_path / "home", tmp_path / "project"
    root.mkdir()
    path = record_path(home, root)
    path.parent.mkdir(parents=True)
    home.chmod(0o700)
    path.write_bytes(data[1:].replace(b"@ROOT@", json.dumps(str(root.resolve()))[1:-1].encode()))
    record = read_record(home, root)
    assert record is not None and not record.corrupt


def _git_index(data: bytes, tmp_path: Path) -> None:
    """The body of an index git wrote (the target appends its checksum): every seed lists
    the submodule ``vendor/lib``."""
    (tmp_path / "index").write_bytes(data + hashlib.sha1(data).digest())
    assert gitlinks(str(tmp_path)) == ("vendor/lib",)


def _walk_records(data: bytes, tmp_path: Path) -> None:
    """A record of the target's tree (``ws`` and its ``a`` and ``b``) as a walk took it:
    every walk it holds is read."""
    granted = tmp_path / "ws"
    for below in ("a", "b"):
        (granted / below).mkdir(parents=True)
    (tmp_path / ".splice").mkdir(mode=0o700)
    for mark, path in (("WS", granted), ("A", granted / "a"), ("B", granted / "b")):
        info = path.stat()
        data = data.replace(f"@{mark}@".encode(), str(path).encode())
        data = data.replace(f"@INO_{mark}@".encode(), str(info.st_ino).encode())
        data = data.replace(f"@CT_{mark}@".encode(), str(info.st_ctime_ns).encode())
    data = data.replace(b"@DEV@", str(granted.stat().st_dev).encode())
    (tmp_path / ".splice" / "walks.json").write_bytes(data)
    (tmp_path / ".splice" / "walks.json").chmod(0o600)
    walks, indexes = walk_record.read_record(tmp_path)
    assert (len(walks), len(indexes)) == (len(json.loads(data)["walks"]), 1)


def _install_journal(data: bytes, tmp_path: Path) -> None:
    """A journal of the target's two staging tokens (``@LOCK@``: any lock)."""
    layout = ProjectLayout(tmp_path)
    layout.tmp_dir.mkdir(parents=True)
    for mark, value in ((b"@LOCK@", "{}"), (b"@TOKEN@", _TOKEN), (b"@OTHER@", _OTHER)):
        data = data.replace(mark, value.encode())
    (layout.tmp_dir / JOURNAL).write_bytes(data)
    assert _read_journal(layout) is not None


def _workspace_memo(data: bytes, tmp_path: Path) -> None:
    """A memo of the current version, whatever file it names."""
    memo = tmp_path / "workspace.json"
    memo.write_bytes(data.replace(b"@PYPROJECT@", b"x").replace(b"@FILE@", b"[1, 2, 3]"))
    assert _load_memo(memo) != {}


READERS: dict[str, Callable[[bytes, Path], None]] = {
    "statcache": _statcache,
    "frames": _frame,
    "splice_lock": _written("splice.lock", load_lockfile),
    "splice_json": _written("splice.json", load_project_file),
    "manifest": _manifest,
    "consent_record": _consent_record,
    "git_index": _git_index,
    "walk_records": _walk_records,
    "install_journal": _install_journal,
    "workspace_memo": _workspace_memo,
}


@pytest.mark.parametrize(
    ("target", "seed"),
    [
        (target, seed)
        for target in sorted(READERS)
        for seed in sorted((CORPUS / target).iterdir())
        if seed.name not in REFUSALS.get(target, set())
    ],
    ids=lambda value: getattr(value, "name", value),
)
def test_a_seed_is_read_as_valid_input(target: str, seed: Path, tmp_path: Path) -> None:
    READERS[target](seed.read_bytes(), tmp_path)
