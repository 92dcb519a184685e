"""splice.lock, splice.json and the files digest as the TypeScript CLI reads and writes them
(tests/compat/lock.json): the texts are TS's bytes, and ours must be the same bytes."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from splice_build.errors import ErrorCode, ProjectError
from splice_build.project.lockfile import (
    UNKNOWN,
    LockEntry,
    Lockfile,
    load_lockfile,
    save_lockfile,
)
from splice_build.project.project_file import (
    ProjectFile,
    init_project,
    load_project_file,
    save_project_file,
)
from splice_build.spec.digests import files_digest
from splice_build.spec.permissions import Permissions
from splice_build.spec.tree_digest import tree_digest
from testing.compat import load, params

VECTORS = load("lock")
VALID_ENTRY = {
    "version": "1.0.0",
    "integrity": "sha256-" + "a" * 64,
    "registry": "http://r.test",
    "resolved": "http://r.test/packages/acme/tool/1.0.0/download",
}


def _text(lines: list[str]) -> str:
    return "\n".join(lines) + "\n"


def _write_lock(root: Path, document: Any) -> None:
    (root / "splice.lock").write_text(json.dumps(document), encoding="utf-8")


@pytest.mark.parametrize("case", params(VECTORS["filesDigest"], label="digest"))
def test_files_digest(case: dict[str, Any], tmp_path: Path) -> None:
    files = {path: text.encode() for path, text in case["files"].items()}
    assert files_digest(files) == case["digest"]
    for path, data in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_bytes(data)
    assert tree_digest(tmp_path) == case["digest"], "recomputed from the bytes on disk"


def test_a_lock_written_by_ts_is_read_and_written_back_byte_for_byte(tmp_path: Path) -> None:
    text = _text(VECTORS["lockText"])
    (tmp_path / "splice.lock").write_text(text, encoding="utf-8")
    lock = load_lockfile(tmp_path)
    (tmp_path / "splice.lock").unlink()
    save_lockfile(tmp_path, lock)
    assert (tmp_path / "splice.lock").read_text(encoding="utf-8") == text


def test_the_same_entries_are_written_as_ts_writes_them(tmp_path: Path) -> None:
    """Built from values (in another id order), not read from TS's text."""
    document = json.loads(_text(VECTORS["lockText"]))
    entries = {}
    for package_id, raw in reversed(document["packages"].items()):
        entries[package_id] = LockEntry(
            version=raw["version"],
            integrity=raw["integrity"],
            resolved=raw["resolved"],
            registry=raw["registry"],
            size=raw.get("size", UNKNOWN),
            files=raw.get("files", UNKNOWN),
            permissions=Permissions.from_json(raw["permissions"]),
            signed_by=raw.get("signedBy"),
        )
    save_lockfile(tmp_path, Lockfile(entries))
    assert (tmp_path / "splice.lock").read_text(encoding="utf-8") == _text(VECTORS["lockText"])


@pytest.mark.parametrize("case", params(VECTORS["entries"], label="name"))
def test_entries(case: dict[str, Any], tmp_path: Path) -> None:
    _write_lock(tmp_path, {"lockfileVersion": 1, "packages": {"@acme/tool": case["entry"]}})
    entry = load_lockfile(tmp_path).get("@acme/tool")
    assert entry is not None
    assert entry.registry == case["registry"]
    if "size" in case:
        assert entry.size == case["size"] and type(entry.size) is int
    save_lockfile(tmp_path, load_lockfile(tmp_path))
    written = json.loads((tmp_path / "splice.lock").read_text())["packages"]["@acme/tool"]
    if "writtenKeys" in case:
        assert list(written) == case["writtenKeys"]
    assert written["registry"] == case["registry"]


@pytest.mark.parametrize("case", params(VECTORS["malformed"], label="name"))
def test_malformed_entries(case: dict[str, Any], tmp_path: Path) -> None:
    entry = copy.deepcopy(VALID_ENTRY) | case.get("set", {})
    for key in case.get("drop", ()):
        del entry[key]
    _write_lock(tmp_path, {"lockfileVersion": 1, "packages": {case.get("id", "@acme/tool"): entry}})
    with pytest.raises(ProjectError) as caught:
        load_lockfile(tmp_path)
    assert caught.value.code is ErrorCode.INVALID_PROJECT
    assert "splice.lock" in caught.value.message


@pytest.mark.parametrize("case", params(VECTORS["malformedFiles"], label="name"))
def test_malformed_lock_files(case: dict[str, Any], tmp_path: Path) -> None:
    text = case.get("text") or json.dumps(case["document"])
    (tmp_path / "splice.lock").write_text(text, encoding="utf-8")
    with pytest.raises(ProjectError) as caught:
        load_lockfile(tmp_path)
    assert caught.value.code is ErrorCode.INVALID_PROJECT


def test_splice_json_written_by_init(tmp_path: Path) -> None:
    spec = VECTORS["projectFile"]
    init_project(tmp_path / "plain")
    assert (tmp_path / "plain" / "splice.json").read_text() == _text(spec["init"])
    with_registry = spec["initWithRegistry"]
    init_project(tmp_path / "reg", registry=with_registry["registry"])
    assert (tmp_path / "reg" / "splice.json").read_text() == _text(with_registry["lines"])


def test_splice_json_with_packages(tmp_path: Path) -> None:
    spec = VECTORS["projectFile"]["withPackages"]
    save_project_file(tmp_path, ProjectFile(spec["packages"], spec["registry"]))
    text = (tmp_path / "splice.json").read_text()
    assert text == _text(spec["lines"])
    save_project_file(tmp_path, load_project_file(tmp_path))
    assert (tmp_path / "splice.json").read_text() == text


@pytest.mark.parametrize("case", params(VECTORS["projectFile"]["invalid"], label="name"))
def test_invalid_splice_json(case: dict[str, Any], tmp_path: Path) -> None:
    (tmp_path / "splice.json").write_text(json.dumps(case["document"]), encoding="utf-8")
    with pytest.raises(ProjectError) as caught:
        load_project_file(tmp_path)
    assert caught.value.code is ErrorCode.INVALID_PROJECT
