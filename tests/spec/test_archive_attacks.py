"""The safe reader against hostile archives, each one built byte by byte in testing/archives.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import unicodedata
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from splice_build.errors import ErrorCode, SpecError
from splice_build.spec.archive import read_archive
from splice_build.spec.entry_rules import quote_path
from splice_build.spec.package import validate_package_files
from testing.archives import RawEntry, gzip_bomb, gzip_bytes, hostile_archives, raw_tar, tar_gz
from testing.manifests import package_files

REPO = Path(__file__).parents[2]
HOSTILE = hostile_archives()
MIB = 1024 * 1024


def _tree(root: Path) -> list[str]:
    return sorted(str(path.relative_to(root)) for path in root.rglob("*"))


@pytest.mark.parametrize("attack", sorted(HOSTILE))
def test_hostile_archive_is_refused_naming_the_entry(
    attack: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, named = HOSTILE[attack]
    monkeypatch.chdir(tmp_path)
    (tmp_path / "marker").write_text("before")
    before = _tree(tmp_path)
    with pytest.raises(SpecError) as caught:
        read_archive(data)
    assert caught.value.code == ErrorCode.INVALID_PACKAGE
    assert any(named in detail for detail in caught.value.details), caught.value.details
    assert _tree(tmp_path) == before


def test_reader_writes_nothing_anywhere(tmp_path: Path) -> None:
    """All attacks in a process whose cwd, TMPDIR and HOME are one watched directory."""
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    for attack, (data, _) in HOSTILE.items():
        (inputs / attack).write_bytes(data)
    watched = tmp_path / "watched"
    watched.mkdir()
    script = """
import json, sys
from pathlib import Path
from splice_build.errors import SpecError
from splice_build.spec.archive import read_archive
codes = {}
for path in sorted(Path(sys.argv[1]).iterdir()):
    try:
        read_archive(path.read_bytes())
        codes[path.name] = "accepted"
    except SpecError as exc:
        codes[path.name] = str(exc.code)
print(json.dumps(codes))
"""
    env = {**os.environ, "TMPDIR": str(watched), "HOME": str(watched), "PYTHONPATH": str(REPO)}
    result = subprocess.run(
        [sys.executable, "-c", script, str(inputs)],
        cwd=watched,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(result.stdout) == dict.fromkeys(HOSTILE, "INVALID_PACKAGE")
    assert _tree(watched) == []


MEMORY_PROBE = """
import json, re, resource, sys, tracemalloc
from pathlib import Path
from splice_build.errors import SpecError
from splice_build.spec.archive import read_archive

STATUS = Path("/proc/self/status")

def kib(field):
    return int(re.search(field + r":\\s+(\\d+) kB", STATUS.read_text()).group(1))

data = open(sys.argv[1], "rb").read()
# ru_maxrss survives exec (it starts at the parent's size), so on Linux the peak is the
# process's own high-water mark (VmHWM) minus its resident size before the read: an upper bound.
linux = STATUS.exists()
before = kib("VmRSS") if linux else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
tracemalloc.start()
try:
    read_archive(data)
    outcome = "accepted"
except SpecError as exc:
    outcome = exc.message
traced_peak = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
after = kib("VmHWM") if linux else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"outcome": outcome, "traced_peak": traced_peak, "rss_delta": (after - before) * 1024}))
"""


def _measure(tmp_path: Path, data: bytes) -> dict[str, object]:
    artifact = tmp_path / "artifact"
    artifact.write_bytes(data)
    result = subprocess.run(
        [sys.executable, "-c", MEMORY_PROBE, str(artifact)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    measured: dict[str, object] = json.loads(result.stdout)
    return measured


def test_one_gib_gzip_bomb_is_refused_in_bounded_memory(tmp_path: Path) -> None:
    bomb = gzip_bomb(1024 * MIB)
    assert len(bomb) < 2 * MIB  # passes the 5 MiB artifact limit: inflation must stop it
    measured = _measure(tmp_path, bomb)
    assert measured["outcome"] == "Archive expands beyond 16777216 bytes"
    assert isinstance(measured["traced_peak"], int) and measured["traced_peak"] < 64 * MIB
    assert isinstance(measured["rss_delta"], int) and measured["rss_delta"] < 64 * MIB


def test_gzip_bomb_helper_builds_a_valid_stream() -> None:
    import gzip

    assert gzip.decompress(gzip_bomb(4 * MIB)) == bytes(4 * MIB)


def test_multi_member_bomb_is_bounded_across_members(tmp_path: Path) -> None:
    member = gzip_bytes(bytes(MIB))
    header = gzip_bytes(raw_tar([RawEntry("big.bin", declared_size=1024 * MIB)], end_blocks=0))
    bomb = b"".join([header, *[member] * 1024])
    measured = _measure(tmp_path, bomb)
    assert measured["outcome"] == "Archive expands beyond 16777216 bytes"
    assert isinstance(measured["traced_peak"], int) and measured["traced_peak"] < 64 * MIB


def test_many_legal_files_that_expand_beyond_16_mib_are_refused() -> None:
    entries = [RawEntry(f"part{i}.bin", bytes(2 * MIB)) for i in range(9)]
    with pytest.raises(SpecError) as caught:
        read_archive(tar_gz(entries))
    assert caught.value.code == ErrorCode.INVALID_PACKAGE
    assert "expands beyond" in caught.value.message


def test_exactly_16_mib_of_tar_is_still_read() -> None:
    # 7 files of 2 MiB plus headers and end blocks, padded with a final file to exactly 16 MiB.
    entries = [RawEntry(f"part{i}.bin", bytes(2 * MIB)) for i in range(7)]
    used = 7 * (512 + 2 * MIB) + 512 + 1024
    entries.append(RawEntry("rest.bin", bytes(16 * MIB - used)))
    tar_bytes = raw_tar(entries)
    assert len(tar_bytes) == 16 * MIB
    assert len(read_archive(gzip_bytes(tar_bytes))) == 8


# Paths built from names that file systems merge (case; NFC and NFD; the long s, which is "s"
# in upper case) or nest (a name used as a file and as a directory, at two depths).
NAMES = ("lib", "Lib", "LIB", "caf\u00e9", "cafe\u0301", "CAF\u00c9", "s", "\u017f", "S")
PATHS = sorted({*NAMES, *(f"{n}/a.js" for n in NAMES), "lib/a.js/b.js", "LIB/A.JS/b.js"})
# How each file system stores a name, written independently of the reader's own folding:
# as given (Linux), decomposed and lower-cased (macOS), upper-cased (Windows).
FILE_SYSTEMS: dict[str, Callable[[str], str]] = {
    "linux": lambda name: name,
    "macos": lambda name: unicodedata.normalize("NFD", name).lower(),
    "windows": str.upper,
}


def _holds(paths: Sequence[str], stored_as: Callable[[str], str], root: Path) -> bool:
    """Whether one real directory takes every path, each name stored as ``stored_as`` makes
    it, written as an install writes its staging copy (parents made, each file created new)."""
    directory = Path(tempfile.mkdtemp(dir=root))
    try:
        for path in paths:
            target = directory.joinpath(*(stored_as(name) for name in path.split("/")))
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "xb"):
                pass
    except OSError:  # FileExistsError, NotADirectoryError: one name taken twice
        return False
    return True


@pytest.mark.parametrize("first", PATHS)
def test_two_paths_are_accepted_exactly_when_every_file_system_holds_both(
    first: str, tmp_path: Path
) -> None:
    """Every ordered pair: the reader (and package validation) refuses a pair, naming the later
    entry, exactly when writing both into a directory fails on one of the file systems."""
    for second in PATHS:
        held = all(_holds([first, second], fs, tmp_path) for fs in FILE_SYSTEMS.values())
        try:
            read_archive(tar_gz([RawEntry(first, b"1"), RawEntry(second, b"2")]))
        except SpecError as exc:
            assert exc.code == ErrorCode.INVALID_PACKAGE
            assert exc.details[0].startswith(f"entry {quote_path(second)}: "), exc.details
            assert not held, (first, second, exc.details)
        else:
            assert held, (first, second)
        if first == second:
            continue
        try:
            validate_package_files(package_files(extra={first: b"1", second: b"2"}))
        except SpecError as exc:
            assert not held and len(exc.details) == 1, (first, second, exc.details)
            assert exc.details[0].startswith(("duplicate file path", "file and directory"))
        else:
            assert held, (first, second)


def test_validation_refuses_a_name_no_file_system_holds() -> None:
    """A file name of 256 bytes fits the 256-character path rule but fails every write
    (ENAMETOOLONG): refused as a package rule, never an internal error at install."""
    files = {**package_files(), "é" * 128 + ".md": b"x"}
    with pytest.raises(SpecError) as caught:
        validate_package_files(files)
    assert caught.value.code == ErrorCode.INVALID_PACKAGE
    assert any("longer than 255 bytes" in d for d in caught.value.details), caught.value.details
