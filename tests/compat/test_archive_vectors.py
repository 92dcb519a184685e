"""The deterministic archive and its safe reader, as the TypeScript Splice's archive tests check
them (tests/compat/archive.json). Foreign and hostile archives come from testing/archives.py, a
separate ustar writer, so the reader never only reads what our writer produced."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from typing import Any

import pytest

from splice_build.errors import ErrorCode, SpecError
from splice_build.spec.archive import archive_format, pack_archive, read_archive
from splice_build.spec.digests import integrity_of
from testing.archives import RawEntry, gzip_bomb, gzip_bytes, legacy_bundle, raw_tar
from testing.compat import load, params

VECTORS = load("archive")
REPO = Path(__file__).resolve().parents[2]


def _files() -> dict[str, bytes]:
    files = {path: text.encode() for path, text in VECTORS["files"].items()}
    files["manifest.json"] = json.dumps(VECTORS["manifest"], separators=(",", ":")).encode()
    return files


def _entries(specs: list[dict[str, str]]) -> list[RawEntry]:
    return [
        RawEntry(s["name"], s.get("data", "").encode(), typeflag=s.get("type", "0").encode())
        for s in specs
    ]


def _refused(data: bytes) -> SpecError:
    with pytest.raises(SpecError) as caught:
        read_archive(data)
    assert caught.value.code is ErrorCode.INVALID_PACKAGE
    return caught.value


def test_deterministic_whatever_the_input_order() -> None:
    files = _files()
    forward = pack_archive(files)
    backward = pack_archive(dict(reversed(list(files.items()))))
    assert forward == backward
    assert integrity_of(forward) == integrity_of(backward)
    assert archive_format(forward) == "tar.gz"


def test_round_trip_and_layout() -> None:
    archive = pack_archive(_files())
    decoded = read_archive(archive)
    assert list(decoded) == VECTORS["decodedPaths"]
    assert decoded["tools/hello.ts"] == VECTORS["files"]["tools/hello.ts"].encode()
    layout = VECTORS["layout"]
    assert archive[:10].hex() == layout["gzipHeaderHex"]
    tar = gzip.decompress(archive)
    assert len(tar) % 512 == 0
    assert tar[257:262].decode() == layout["magicAt257"]
    assert tar[: len(layout["firstName"])].decode() == layout["firstName"]


def test_golden_archive_bytes() -> None:
    golden = VECTORS["golden"]
    directory = REPO / golden["directory"]
    files = {
        path.relative_to(directory).as_posix(): path.read_bytes()
        for path in directory.rglob("*")
        if path.is_file()
    }
    archive = pack_archive(files)
    assert (integrity_of(archive), len(archive)) == (golden["integrity"], golden["size"])


def test_long_paths_and_multi_block_files() -> None:
    spec = VECTORS["longPath"]
    big = bytes(i % spec["bigFileModulo"] for i in range(spec["bigFileBytes"]))
    decoded = read_archive(pack_archive({spec["path"]: b"\x01\x02\x03", "big.bin": big}))
    assert len(decoded[spec["path"]]) == 3
    assert decoded["big.bin"] == big


def test_archives_from_other_gzip_writers() -> None:
    foreign = VECTORS["foreign"]
    decoded = read_archive(gzip_bytes(raw_tar(_entries(foreign["entries"]))))
    assert list(decoded) == foreign["decodedPaths"]


def test_legacy_json_bundles_are_still_read() -> None:
    bundle = legacy_bundle(_files())
    assert archive_format(bundle) == "json-bundle"
    assert len(read_archive(bundle)) == len(_files())


@pytest.mark.parametrize("case", params(VECTORS["hostile"], label="name"))
def test_hostile_archives(case: dict[str, Any]) -> None:
    _refused(gzip_bytes(raw_tar(_entries(case["entries"]))))


@pytest.mark.parametrize("case", params(VECTORS["corrupt"], label="name"))
def test_corrupt_archives(case: dict[str, Any]) -> None:
    if "flipByte" in case:
        data = bytearray(pack_archive(_files()))
        data[case["flipByte"]] ^= 0xFF
    else:
        data = bytearray.fromhex(case["hex"])
    error = _refused(bytes(data))
    if "messageMatch" in case:
        assert re.search(case["messageMatch"], error.message, re.IGNORECASE), error.message


def test_decompression_bombs() -> None:
    spec = VECTORS["bomb"]
    bomb = gzip_bomb(spec["zeroBytes"])
    assert len(bomb) < spec["maxCompressed"]
    assert re.search(spec["messageMatch"], _refused(bomb).message)


@pytest.mark.parametrize("case", params(VECTORS["encodeRefuses"], label="name"))
def test_the_writer_refuses(case: dict[str, Any]) -> None:
    with pytest.raises(SpecError) as caught:
        pack_archive({path: text.encode() for path, text in case["files"].items()})
    assert caught.value.code is ErrorCode.INVALID_BUNDLE
    assert re.search(case["messageMatch"], caught.value.message)


@pytest.mark.parametrize("case", params(VECTORS["legacyBundle"]["refused"], label="name"))
def test_malformed_legacy_bundles(case: dict[str, Any]) -> None:
    text = case["text"] if "text" in case else json.dumps(case["document"])
    error = _refused(text.encode())
    assert re.search(case["messageMatch"], error.message), error.message
