"""`splice pack` and `splice validate` through the real binary."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
from pathlib import Path

import pytest

from testing.cli import run_splice
from testing.packages import minimal_manifest, write_package
from testing.registry import file_and_directory


def test_pack_writes_the_artifact_and_reports_it(tmp_path: Path) -> None:
    pkg = write_package(tmp_path / "pkg")
    result = run_splice("pack", str(pkg), "--json", cwd=tmp_path)
    assert result.code == 0, result.stderr
    data = result.json()
    artifact = tmp_path / "acme-greeter-1.0.0.tar.gz"
    raw = artifact.read_bytes()
    assert data["path"] == str(artifact)
    assert data["name"] == "@acme/greeter" and data["version"] == "1.0.0"
    assert data["files"] == 3
    assert data["size"] == len(raw)
    assert data["integrity"] == "sha256-" + hashlib.sha256(raw).hexdigest()
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(raw))) as tar:
        assert tar.getnames() == ["SKILL.md", "manifest.json", "tools/hello.js"]


def test_pack_text_output_and_out_flag(tmp_path: Path) -> None:
    pkg = write_package(tmp_path / "pkg")
    result = run_splice("pack", str(pkg), "--out", "x.tgz", cwd=tmp_path)
    assert result.code == 0, result.stderr
    assert "Packed @acme/greeter@1.0.0" in result.stdout
    assert "3 files" in result.stdout
    assert (tmp_path / "x.tgz").is_file()


def test_pack_is_deterministic_across_runs(tmp_path: Path) -> None:
    pkg = write_package(tmp_path / "pkg")
    first = run_splice("pack", str(pkg), "--json", "--out", "a.tgz", cwd=tmp_path).json()
    (pkg / "tools" / "hello.js").touch()
    second = run_splice("pack", str(pkg), "--json", "--out", "b.tgz", cwd=tmp_path).json()
    assert first["integrity"] == second["integrity"]


def test_validate_directory_and_its_archive_agree(tmp_path: Path) -> None:
    pkg = write_package(tmp_path / "pkg")
    run_splice("pack", str(pkg), "--out", "a.tgz", cwd=tmp_path)
    on_dir = run_splice("validate", str(pkg), "--json")
    on_archive = run_splice("validate", str(tmp_path / "a.tgz"), "--json")
    assert on_dir.code == on_archive.code == 0
    assert on_dir.json()["kind"] == "directory"
    assert on_archive.json()["kind"] == "archive"
    assert on_dir.json()["tools"] == on_archive.json()["tools"] == ["greeter.hello"]


def test_validate_lists_every_problem(tmp_path: Path) -> None:
    manifest = minimal_manifest(namespace="Bad NS", version="one", description="")
    pkg = write_package(tmp_path / "pkg", manifest)
    result = run_splice("validate", str(pkg))
    assert result.code == 1
    assert result.stderr.startswith("error: ")
    details = [line for line in result.stderr.splitlines() if line.startswith("  - ")]
    assert any("namespace" in d for d in details)
    assert any("version" in d for d in details)
    assert any("description" in d for d in details)


def test_validate_refuses_a_hostile_archive(tmp_path: Path) -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", format=tarfile.USTAR_FORMAT) as tar:
        info = tarfile.TarInfo("../escape.txt")
        info.size = 2
        tar.addfile(info, io.BytesIO(b"hi"))
    archive = tmp_path / "evil.tar.gz"
    archive.write_bytes(buf.getvalue())
    result = run_splice("validate", str(archive), "--json")
    assert result.code == 1
    error = result.json()["error"]
    assert error["code"] == "INVALID_PACKAGE"
    assert any("../escape.txt" in d for d in error["details"])
    assert not (tmp_path.parent / "escape.txt").exists()


def test_validate_refuses_a_file_and_a_directory_of_one_name(tmp_path: Path) -> None:
    archive = tmp_path / "clash.tar.gz"
    archive.write_bytes(file_and_directory())
    result = run_splice("validate", str(archive), "--json")
    assert result.code == 1, result.stdout + result.stderr
    error = result.json()["error"]
    assert error["code"] == "INVALID_PACKAGE"
    assert error["message"] == "File and directory of the same name in archive"
    assert error["details"] == ['entry "lib/a.js": its directory "lib" is the file "lib"']


@pytest.mark.parametrize("command", ["validate", "publish"])
def test_a_directory_macos_would_merge_is_refused_before_any_upload(
    tmp_path: Path, command: str
) -> None:
    """Linux holds ``Tools`` and ``tools/``, ``café.js`` in NFC and NFD; macOS holds neither
    pair. ``publish`` refuses it locally: the unreachable registry is never asked."""
    pkg = write_package(tmp_path / "pkg")
    (pkg / "Tools").write_bytes(b"a file")
    result = run_splice("--json", "--registry", "http://127.0.0.1:9", command, str(pkg))
    assert result.code == 1, result.stdout + result.stderr
    error = result.json()["error"]
    assert (error["code"], error["message"]) == (
        "INVALID_PACKAGE",
        "File and directory of the same name in archive",
    )
    (pkg / "Tools").unlink()
    (pkg / "caf\u00e9.js").write_bytes(b"nfc")
    (pkg / "cafe\u0301.js").write_bytes(b"nfd")
    result = run_splice("--json", "--registry", "http://127.0.0.1:9", command, str(pkg))
    assert result.code == 1, result.stdout + result.stderr
    error = result.json()["error"]
    assert (error["code"], error["message"]) == (
        "INVALID_PACKAGE",
        "Duplicate file path in archive",
    )


def test_validate_missing_target(tmp_path: Path) -> None:
    result = run_splice("validate", str(tmp_path / "nope"), "--json")
    assert result.code == 1
    assert result.json()["error"]["code"] == "INVALID_PACKAGE"
    # and a file that is no archive ("Bundle is not valid UTF-8 JSON" said only that): both
    # name what validate takes
    (tmp_path / "notes.txt").write_text("notes\n")
    other = run_splice("validate", str(tmp_path / "notes.txt"), "--json")
    assert other.code == 1
    for error in (result.json()["error"], other.json()["error"]):
        assert error["hint"] == (
            "Name a package directory (the one holding manifest.json) or the .tar.gz "
            "`splice pack` wrote."
        )


def test_pack_refuses_symlinks(tmp_path: Path) -> None:
    pkg = write_package(tmp_path / "pkg")
    (pkg / "link.js").symlink_to(pkg / "tools" / "hello.js")
    result = run_splice("pack", str(pkg), "--json", cwd=tmp_path)
    assert result.code == 1
    assert "Symbolic links" in json.dumps(result.json())
