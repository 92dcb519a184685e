"""`splice pack` never packs its own output (docs/packages.md#the-artifact-a-deterministic-targz).

Run in the package directory, pack used to write `acme-greeter-1.0.0.tar.gz` there, and the
next pack (or publish) took it in: each archive held the one before it, and a release held
the previous release. The real binary, on a real package directory.
"""

from __future__ import annotations

import gzip
import io
import shutil
import tarfile
from pathlib import Path

import pytest

from testing.cli import run_splice
from testing.packages import write_package


def _pack(cwd: Path, *args: str) -> dict[str, object]:
    done = run_splice("pack", *args, "--json", cwd=cwd)
    assert done.code == 0, (done.stdout, done.stderr)
    result: dict[str, object] = done.json()
    return result


def test_packing_twice_in_the_package_packs_the_same_files(tmp_path: Path) -> None:
    pkg = write_package(tmp_path / "pkg")
    first = _pack(pkg)
    second = _pack(pkg)
    assert first["path"] == second["path"] == str(tmp_path / "acme-greeter-1.0.0.tar.gz")
    assert first["files"] == second["files"] == 3
    assert first["integrity"] == second["integrity"]
    assert sorted(path.name for path in pkg.iterdir()) == ["SKILL.md", "manifest.json", "tools"]


def test_packing_from_outside_writes_here(tmp_path: Path) -> None:
    pkg = write_package(tmp_path / "pkg")
    (tmp_path / "out").mkdir()
    assert _pack(tmp_path / "out", str(pkg))["path"] == str(
        tmp_path / "out" / "acme-greeter-1.0.0.tar.gz"
    )


@pytest.mark.parametrize("name", ["acme-greeter-1.0.0.tar.gz", "tools/notes.bin", "x"])
def test_an_earlier_archive_in_the_package_is_refused_whatever_its_name(
    tmp_path: Path, name: str
) -> None:
    pkg = write_package(tmp_path / "pkg")
    earlier = Path(str(_pack(tmp_path, str(pkg))["path"]))
    shutil.copyfile(earlier, pkg / name)
    for command in (["pack", str(pkg)], ["publish", str(pkg), "--dry-run"]):
        done = run_splice(*command, "--json", cwd=tmp_path)
        assert done.code == 1, (command, done.stdout, done.stderr)
        error = done.json()["error"]
        assert error["code"] == "INVALID_PACKAGE"
        assert error["message"] == "A package cannot contain a packed package archive"
        assert error["details"] == [f'entry "{name}": an archive `splice pack` wrote']


def test_another_tools_gzip_file_is_packed(tmp_path: Path) -> None:
    """Only Splice's own artifact is refused: a fixture made by tar and gzip is content."""
    pkg = write_package(tmp_path / "pkg")
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        info = tarfile.TarInfo("a.txt")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"a"))
    (pkg / "fixture.tar.gz").write_bytes(gzip.compress(raw.getvalue(), mtime=0))
    assert _pack(tmp_path, str(pkg))["files"] == 4


@pytest.mark.parametrize("out", ["pkg/x.tgz", "pkg/tools/x.tgz", "pkg/tools/../x.tgz"])
def test_out_inside_the_package_is_usage(tmp_path: Path, out: str) -> None:
    pkg = write_package(tmp_path / "pkg")
    done = run_splice("pack", str(pkg), "--out", out, "--json", cwd=tmp_path)
    assert done.code == 2, (done.stdout, done.stderr)
    error = done.json()["error"]
    assert error["code"] == "USAGE"
    assert "the next pack would include it" in error["message"]
    assert sorted(path.name for path in pkg.iterdir()) == ["SKILL.md", "manifest.json", "tools"]


@pytest.mark.parametrize("out", ["pkg/.dist/x.tgz", "pkg/node_modules/x.tgz"])
def test_out_where_the_walk_never_looks_is_allowed(tmp_path: Path, out: str) -> None:
    pkg = write_package(tmp_path / "pkg")
    (tmp_path / out).parent.mkdir()
    _pack(tmp_path, str(pkg), "--out", out)
    assert _pack(tmp_path, str(pkg), "--out", "again.tgz")["files"] == 3
