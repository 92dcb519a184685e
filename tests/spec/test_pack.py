"""Packing a directory: walk rules, refusals, and the PackResult of a real package."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from splice_build.errors import ErrorCode, SpecError
from splice_build.spec.archive import read_archive
from splice_build.spec.digests import integrity_of
from splice_build.spec.pack import collect_package_files, pack_directory
from testing.deep_tree import nested, unnested
from testing.packages import write_package

GOLDEN = Path(__file__).parents[1] / "resources" / "packages" / "golden"
GOLDEN_INTEGRITY = "sha256-ae2773a7920cf409ebba3ea1d3fc694f6ad671947318504be1704d7fb8095896"


def _refused(directory: Path) -> SpecError:
    with pytest.raises(SpecError) as caught:
        collect_package_files(directory)
    assert caught.value.code == ErrorCode.INVALID_PACKAGE  # as the TypeScript pack reports it
    return caught.value


def test_hidden_names_and_node_modules_are_skipped_at_any_depth(tmp_path: Path) -> None:
    write_package(
        tmp_path,
        files={
            ".env": "TOKEN=secret",
            ".git/config": "[core]",
            "lib/.DS_Store": "x",
            "node_modules/dep/index.js": "x",
            "lib/node_modules/dep/index.js": "x",
            "lib/util.js": "export {}",
        },
    )
    assert list(collect_package_files(tmp_path)) == [
        "SKILL.md",
        "lib/util.js",
        "manifest.json",
        "tools/hello.js",
    ]


def test_files_are_sorted_by_utf16_code_units(tmp_path: Path) -> None:
    for name in ("\uffff.md", "\U0001f600.md", "b.md", "a.md"):
        (tmp_path / name).write_bytes(b"x")
    assert list(collect_package_files(tmp_path)) == ["a.md", "b.md", "\U0001f600.md", "\uffff.md"]


def test_symbolic_links_are_refused(tmp_path: Path) -> None:
    write_package(tmp_path)
    (tmp_path / "tools" / "link.js").symlink_to(tmp_path / "tools" / "hello.js")
    error = _refused(tmp_path)
    assert error.message == "Symbolic links are not allowed in packages"
    assert 'entry "tools/link.js"' in error.details[0]


def test_symbolic_link_to_a_directory_is_refused(tmp_path: Path) -> None:
    write_package(tmp_path)
    (tmp_path / "shared").symlink_to(tmp_path / "tools", target_is_directory=True)
    assert "shared" in _refused(tmp_path).details[0]


def test_fifo_is_refused(tmp_path: Path) -> None:
    write_package(tmp_path)
    os.mkfifo(tmp_path / "pipe")
    error = _refused(tmp_path)
    assert error.message == "Only regular files can be packed"
    assert '"pipe"' in error.details[0]


def test_more_than_500_files_is_refused(tmp_path: Path) -> None:
    for index in range(501):
        (tmp_path / f"f{index:03d}.txt").write_bytes(b"")
    error = _refused(tmp_path)
    assert "more than 500 files" in error.message
    assert "f500.txt" in error.details[0]


def test_exactly_500_files_is_accepted(tmp_path: Path) -> None:
    for index in range(500):
        (tmp_path / f"f{index:03d}.txt").write_bytes(b"")
    assert len(collect_package_files(tmp_path)) == 500


def test_file_over_2_mib_is_refused(tmp_path: Path) -> None:
    (tmp_path / "ok.bin").write_bytes(bytes(2 * 1024 * 1024))
    (tmp_path / "big.bin").write_bytes(bytes(2 * 1024 * 1024 + 1))
    assert "big.bin" in _refused(tmp_path).details[0]


def test_case_insensitive_duplicates_are_refused(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_bytes(b"1")
    (tmp_path / "readme.md").write_bytes(b"2")
    assert "README.md" in _refused(tmp_path).details[0]


def test_names_one_normalization_apart_are_refused(tmp_path: Path) -> None:
    """Linux keeps both; macOS would merge them into one file."""
    (tmp_path / "caf\u00e9.js").write_bytes(b"nfc")
    (tmp_path / "cafe\u0301.js").write_bytes(b"nfd")
    error = _refused(tmp_path)
    assert error.message == "Duplicate file path in archive"
    assert "ignoring case and Unicode normalization" in error.details[0]


def test_a_file_named_like_a_directory_ignoring_case_is_refused(tmp_path: Path) -> None:
    """Linux keeps the file ``Lib`` and the directory ``lib``; macOS and Windows cannot."""
    (tmp_path / "Lib").write_bytes(b"x")
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "a.js").write_bytes(b"y")
    error = _refused(tmp_path)
    assert error.message == "File and directory of the same name in archive"
    assert error.details == ('entry "lib/a.js": its directory "lib" is the file "Lib"',)


def test_names_that_are_not_utf8_are_refused(tmp_path: Path) -> None:
    with open(os.path.join(os.fsencode(tmp_path), b"caf\xe9.js"), "wb") as handle:
        handle.write(b"x")
    error = _refused(tmp_path)
    assert "UTF-8" in error.message


def test_unsafe_names_are_refused(tmp_path: Path) -> None:
    (tmp_path / "back\\slash.js").write_bytes(b"x")
    assert "back\\\\slash.js" in _refused(tmp_path).details[0]


def test_missing_directory_is_refused(tmp_path: Path) -> None:
    error = _refused(tmp_path / "absent")
    assert "not a directory" in error.details[0]
    # `splice pack /mistyped` said what, not which directory it wanted
    assert error.hint == "Name the package's directory, the one holding manifest.json."


def test_unreadable_file_is_refused(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip(reason="root reads files whatever their mode")
    (tmp_path / "secret.js").write_bytes(b"x")
    (tmp_path / "secret.js").chmod(0)
    assert "secret.js" in _refused(tmp_path).details[0]


def test_pack_directory_returns_the_validated_package(tmp_path: Path) -> None:
    package = shutil.copytree(GOLDEN, tmp_path / "golden")
    (package / ".gitignore").write_text("ignored\n")
    (package / "node_modules").mkdir()
    result = pack_directory(package)
    assert result.integrity == GOLDEN_INTEGRITY == integrity_of(result.archive)
    assert result.size == len(result.archive)
    assert (result.manifest.namespace, result.manifest.name) == ("golden", "archive")
    assert result.files == collect_package_files(GOLDEN)
    assert read_archive(result.archive) == result.files


def test_pack_directory_refuses_an_invalid_package(tmp_path: Path) -> None:
    write_package(tmp_path)
    (tmp_path / "SKILL.md").unlink()
    with pytest.raises(SpecError) as caught:
        pack_directory(tmp_path)
    assert any("SKILL.md" in detail for detail in caught.value.details)


def test_archive_errors_while_packing_are_invalid_package(tmp_path: Path) -> None:
    """A file name ustar cannot hold is found by the archive writer, reported as a package error."""
    write_package(tmp_path, files={"x" * 150 + ".js": "export {}"})
    with pytest.raises(SpecError) as caught:
        pack_directory(tmp_path)
    assert caught.value.code == ErrorCode.INVALID_PACKAGE
    assert caught.value.message == "Path too long for a tar archive"
    assert "cannot be split" in caught.value.details[0]


def test_a_file_swapped_for_a_fifo_after_the_walk_saw_it_is_refused_unread(
    tmp_path: Path,
) -> None:
    """The walk reads each file it listed through ``_read_regular``; by then a local attacker
    may have put a FIFO under that name. It is refused at once, never waited on."""
    from splice_build.spec.pack import _read_regular
    from testing.fifos import returns_without_waiting

    fifo = tmp_path / "tools" / "hello.js"
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    with pytest.raises(SpecError) as caught:
        returns_without_waiting(lambda: _read_regular(fifo, "tools/hello.js"), fifo)
    assert caught.value.code == ErrorCode.INVALID_PACKAGE
    assert list(caught.value.details) == ['entry "tools/hello.js": not a regular file']


def test_a_checkout_nested_thousands_of_levels_deep_is_refused_not_walked(
    tmp_path: Path,
) -> None:
    package = write_package(tmp_path / "pkg")
    nested(package, 1500)  # deeper than Python's recursion limit
    try:
        error = _refused(package)
    finally:
        unnested(package)
    assert error.message == "Package paths are at most 256 characters"
    assert list(error.details) == [
        f'entry "{"a/" * 127}a": a directory too deep for any file in it to be packed'
    ]


def test_a_file_path_of_the_full_256_characters_still_packs(tmp_path: Path) -> None:
    package = write_package(tmp_path / "pkg")
    deepest = nested(package, 127)
    (deepest / "xy").write_text("x", encoding="utf-8")
    files = collect_package_files(package)
    assert "a/" * 127 + "xy" in files and len("a/" * 127 + "xy") == 256
