"""Build foreign and hostile package archives for tests, byte by byte.

Nothing here uses our own writer: headers are assembled field by field from the POSIX ustar
layout, so the reader is tested against archives it did not produce. ``hostile_archives()`` is
the catalogue of attacks, each named after what it tries (``zip_slip``, ``symlink``,
``pax_path_override`` ...), with the text that the rejection's details must mention.
"""

from __future__ import annotations

import base64
import json
import struct
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

BLOCK = 512


def _raw(value: bytes | str) -> bytes:
    return value.encode("utf-8") if isinstance(value, str) else value


@dataclass(frozen=True)
class RawEntry:
    """One tar entry, with every field that an attack might want to get wrong."""

    name: bytes | str
    data: bytes = b""
    typeflag: bytes = b"0"
    prefix: bytes | str = b""
    linkname: bytes | str = b""
    magic: bytes = b"ustar\0"
    version: bytes = b"00"
    declared_size: int | None = None  # size written in the header, default len(data)
    size_field: bytes | None = None  # raw 12-byte size field (e.g. GNU base-256)
    checksum_delta: int = 0  # added to the correct checksum to corrupt it
    fields: tuple[tuple[int, bytes], ...] = ()  # raw bytes written at an offset, last


def ustar_header(entry: RawEntry) -> bytes:
    """A 512-byte ustar header for ``entry`` (checksum over spaces, 6 octal digits, NUL, space)."""
    header = bytearray(BLOCK)
    name, prefix, linkname = _raw(entry.name), _raw(entry.prefix), _raw(entry.linkname)
    header[0 : len(name)] = name
    header[100:108] = b"0000644\0"
    header[108:116] = b"0000000\0"
    header[116:124] = b"0000000\0"
    size = len(entry.data) if entry.declared_size is None else entry.declared_size
    header[124:136] = entry.size_field or f"{size:011o}\0".encode("ascii")
    header[136:148] = b"00000000000\0"
    header[148:156] = b" " * 8
    header[156:157] = entry.typeflag
    header[157 : 157 + len(linkname)] = linkname
    header[257 : 257 + len(entry.magic)] = entry.magic
    header[263 : 263 + len(entry.version)] = entry.version
    header[345 : 345 + len(prefix)] = prefix
    for offset, raw in entry.fields:
        header[offset : offset + len(raw)] = raw
    checksum = sum(header) + entry.checksum_delta
    header[148:156] = f"{checksum:06o}\0 ".encode("ascii")
    return bytes(header)


def raw_tar(entries: Iterable[RawEntry], *, end_blocks: int = 2) -> bytes:
    """Headers, data padded to 512 bytes, then ``end_blocks`` zero blocks."""
    parts: list[bytes] = []
    for entry in entries:
        parts += (ustar_header(entry), entry.data, bytes(-len(entry.data) % BLOCK))
    parts.append(bytes(end_blocks * BLOCK))
    return b"".join(parts)


def gzip_bytes(data: bytes, *, level: int = 9) -> bytes:
    """A real zlib-compressed gzip member (what ``tar czf`` or ``gzip`` would produce)."""
    compressor = zlib.compressobj(level, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


def tar_gz(entries: Iterable[RawEntry]) -> bytes:
    return gzip_bytes(raw_tar(entries))


def pax_records(records: Mapping[str, str]) -> bytes:
    """PAX extended-header data: ``"<len> <key>=<value>\\n"`` where len counts itself."""
    out = b""
    for key, value in records.items():
        body = f" {key}={value}\n".encode()
        length = len(body) + 1
        while len(str(length)) + len(body) != length:
            length = len(str(length)) + len(body)
        out += str(length).encode("ascii") + body
    return out


def gzip_bomb(expanded_bytes: int, *, chunk: int = 1 << 20) -> bytes:
    """A valid single-member gzip of ``expanded_bytes`` zeros, built without holding them.

    After a full flush the compressor starts afresh, so every further chunk of zeros compresses
    to the same bytes: compress two chunks, repeat the second, end with an empty final block and
    the trailer (CRC-32 and size of the whole expansion). 1 GiB gives about 1 MiB.
    """
    assert expanded_bytes % chunk == 0 and expanded_bytes >= 2 * chunk
    zeros = bytes(chunk)
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    first = compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
    repeated = compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
    count = expanded_bytes // chunk
    crc = 0
    for _ in range(count):
        crc = zlib.crc32(zeros, crc)
    final_empty_fixed_block = b"\x03\x00"
    trailer = struct.pack("<II", crc, expanded_bytes & 0xFFFFFFFF)
    return first + repeated * (count - 1) + final_empty_fixed_block + trailer


def legacy_bundle_document(files: Mapping[str, bytes]) -> dict[str, object]:
    return {
        "format": "splice-bundle",
        "formatVersion": 1,
        "files": [
            {"path": path, "content": base64.b64encode(content).decode("ascii")}
            for path, content in sorted(files.items())
        ],
    }


def legacy_bundle(files: Mapping[str, bytes]) -> bytes:
    """A legacy JSON bundle as the TypeScript ``encodeBundle`` wrote it."""
    return json.dumps(legacy_bundle_document(files), separators=(",", ":")).encode()


def _bundle_with(path: str, content: str) -> bytes:
    files = [{"path": path, "content": content}]
    return json.dumps({"format": "splice-bundle", "formatVersion": 1, "files": files}).encode()


def _valid_gzip_with(tail: bytes) -> bytes:
    return tar_gz([RawEntry("SKILL.md", b"# x\n")]) + tail


def _corrupt_crc() -> bytes:
    data = bytearray(tar_gz([RawEntry("SKILL.md", b"# x\n")]))
    data[-8] ^= 0xFF
    return bytes(data)


def hostile_archives() -> dict[str, tuple[bytes, str]]:
    """Attack name -> (artifact bytes, text a rejection detail must contain)."""
    big = 2 * 1024 * 1024 + 1
    many = [RawEntry(f"f{i:03d}.txt", b"x") for i in range(501)]
    return {
        "zip_slip": (tar_gz([RawEntry("../../etc/passwd", b"x")]), "../../etc/passwd"),
        "zip_slip_nested": (tar_gz([RawEntry("tools/../../x.js", b"x")]), "tools/../../x.js"),
        "absolute_path": (tar_gz([RawEntry("/etc/passwd", b"x")]), "/etc/passwd"),
        "absolute_via_prefix": (tar_gz([RawEntry("passwd", b"x", prefix="/etc")]), "/etc/passwd"),
        "drive_letter": (tar_gz([RawEntry("C:/evil.js", b"x")]), "C:/evil.js"),
        "backslash_path": (tar_gz([RawEntry("tools\\..\\x.js", b"x")]), "tools\\\\..\\\\x.js"),
        "dot_segment": (tar_gz([RawEntry("tools/./x.js", b"x")]), "tools/./x.js"),
        "empty_segment": (tar_gz([RawEntry("tools//x.js", b"x")]), "tools//x.js"),
        "dot_slash_only": (tar_gz([RawEntry("./", b"x")]), 'entry ""'),
        "symlink": (tar_gz([RawEntry("link", typeflag=b"2", linkname="/etc/passwd")]), "link"),
        "hardlink": (tar_gz([RawEntry("hard", typeflag=b"1", linkname="SKILL.md")]), "hard"),
        "char_device": (tar_gz([RawEntry("tty", typeflag=b"3")]), "tty"),
        "block_device": (tar_gz([RawEntry("sda", typeflag=b"4")]), "sda"),
        "fifo": (tar_gz([RawEntry("pipe", typeflag=b"6")]), "pipe"),
        "contiguous_file": (tar_gz([RawEntry("contig", b"x", typeflag=b"7")]), "contig"),
        "pax_path_override": (
            tar_gz(
                [
                    RawEntry("PaxHeader", pax_records({"path": "../../x"}), typeflag=b"x"),
                    RawEntry("innocent.js", b"x"),
                ]
            ),
            "PaxHeader",
        ),
        "pax_global": (
            tar_gz([RawEntry("GlobalHead", pax_records({"path": "/x"}), typeflag=b"g")]),
            "GlobalHead",
        ),
        "gnu_long_name": (
            tar_gz([RawEntry("././@LongLink", b"../../x\0", typeflag=b"L")]),
            "@LongLink",
        ),
        "gnu_long_link": (
            tar_gz([RawEntry("././@LongLink", b"/etc/passwd\0", typeflag=b"K")]),
            "@LongLink",
        ),
        "unknown_type": (tar_gz([RawEntry("vendor", b"x", typeflag=b"Z")]), "vendor"),
        "case_duplicate": (
            tar_gz([RawEntry("SKILL.md", b"1"), RawEntry("skill.md", b"2")]),
            "skill.md",
        ),
        "exact_duplicate": (
            tar_gz([RawEntry("SKILL.md", b"1"), RawEntry("./SKILL.md", b"2")]),
            "SKILL.md",
        ),
        # Merged by macOS (NFC and NFD), by macOS and Windows (case: "ſ" is "s" there).
        "unicode_nfc_nfd_duplicate": (
            tar_gz([RawEntry("caf\u00e9.js", b"1"), RawEntry("cafe\u0301.js", b"2")]),
            "cafe\u0301.js",
        ),
        "unicode_long_s_duplicate": (
            tar_gz([RawEntry("s.js", b"1"), RawEntry("\u017f.js", b"2")]),
            "\u017f.js",
        ),
        # GNU tar lists "hello.js": an old GNU header has no prefix, those bytes are times.
        "gnu_header_with_prefix": (
            tar_gz([RawEntry("hello.js", b"x", prefix="tools", magic=b"ustar ", version=b" \0")]),
            'entry "tools/hello.js"',
        ),
        # GNU tar reads a directory's data as the next headers: it lists tools/evil.js.
        "directory_with_data": (
            tar_gz([RawEntry("d/", raw_tar([RawEntry("tools/evil.js", b"x")]), typeflag=b"5")]),
            'entry "d/"',
        ),
        # GNU tar skips the NUL that starts a number: a size of 1024 there, hiding the next
        # two blocks in this file's data, where a field cut at its first NUL read 0.
        "size_after_a_nul": (
            tar_gz([RawEntry("notes.txt", size_field=b"\0" + b"%011o" % 1024)]),
            'entry "notes.txt"',
        ),
        # Python's tarfile ends its listing at a header whose mode, ids, time or device
        # numbers are not a number: it listed SKILL.md alone; GNU tar fails on it.
        "mode_not_a_number": (
            tar_gz([RawEntry("SKILL.md", b"1"), RawEntry("evil.js", b"x", fields=((100, b"zz"),))]),
            'entry "evil.js"',
        ),
        "mtime_not_octal": (
            tar_gz([RawEntry("evil.js", b"x", fields=((136, b"99999999999"),))]),
            'entry "evil.js"',
        ),
        "devminor_not_a_number": (
            tar_gz([RawEntry("evil.js", b"x", fields=((337, b"x"),))]),
            'entry "evil.js"',
        ),
        # A number of blanks alone is none to GNU tar, which skips the entry: it did not list
        # notes.txt, installed here (size 0).
        "size_of_blanks": (
            tar_gz([RawEntry("notes.txt", size_field=b" " * 12), RawEntry("SKILL.md", b"1")]),
            'entry "notes.txt"',
        ),
        # The stream ends inside the padding of its last entry's data: Python's tarfile and
        # GNU tar refuse the archive ("unexpected end of data").
        "cut_in_the_padding": (
            gzip_bytes(raw_tar([RawEntry("SKILL.md", b"# x\n")], end_blocks=0)[: BLOCK + 447]),
            'entry "SKILL.md"',
        ),
        # GNU tar makes a directory entry a directory over the file of its name (it extracted
        # no lib), and fails under a file (a/b/ after a).
        "file_then_directory_entry": (
            tar_gz([RawEntry("lib", b"x"), RawEntry("lib/", typeflag=b"5")]),
            'entry "lib/"',
        ),
        "directory_entry_under_a_file": (
            tar_gz([RawEntry("a", b"x"), RawEntry("a/b/", typeflag=b"5")]),
            'entry "a/b/"',
        ),
        # Each directory entry is claimed (file_then_directory_entry): as many as a tar of
        # 16 MiB holds, 128 names deep, cost 6 s.
        "many_directory_entries": (
            tar_gz([RawEntry(f"d{i}/", typeflag=b"5") for i in range(501)]),
            'entry "d500/"',
        ),
        # Merged by Windows, which drops a name's trailing dots and spaces.
        "windows_trailing_dot_duplicate": (
            tar_gz([RawEntry("tools/x.js", b"1"), RawEntry("tools/x.js.", b"2")]),
            'entry "tools/x.js."',
        ),
        "windows_trailing_space_duplicate": (
            tar_gz([RawEntry("x.js ", b"1"), RawEntry("X.JS", b"2")]),
            'entry "X.JS"',
        ),
        # A file and a directory of one name: no file system holds both, so the install
        # would fail halfway through writing its staging copy.
        "file_then_directory": (
            tar_gz([RawEntry("lib", b"x"), RawEntry("lib/a.js", b"y")]),
            'entry "lib/a.js"',
        ),
        "directory_then_file": (
            tar_gz([RawEntry("lib/a.js", b"y"), RawEntry("lib", b"x")]),
            'entry "lib"',
        ),
        "file_then_directory_ignoring_case": (
            tar_gz([RawEntry("TOOLS", b"x"), RawEntry("tools/hello.js", b"y")]),
            'entry "tools/hello.js"',
        ),
        "deep_directory_then_file": (
            tar_gz([RawEntry("a/b/c/d.js", b"y"), RawEntry("A/B", b"x")]),
            'entry "A/B"',
        ),
        "bundle_file_and_directory": (
            legacy_bundle({"lib": b"x", "lib/a.js": b"y"}),
            'entry "lib/a.js"',
        ),
        "hidden_file": (tar_gz([RawEntry(".env", b"TOKEN=1")]), ".env"),
        "hidden_directory": (tar_gz([RawEntry(".git/config", b"x")]), ".git/config"),
        "node_modules": (tar_gz([RawEntry("node_modules/x/index.js", b"x")]), "node_modules/x"),
        "too_many_files": (tar_gz(many), "f500.txt"),
        "oversized_file": (tar_gz([RawEntry("big.bin", bytes(big))]), "big.bin"),
        "bad_checksum": (tar_gz([RawEntry("tools/x.js", b"x", checksum_delta=1)]), "tools/x.js"),
        "missing_magic": (tar_gz([RawEntry("old.js", b"x", magic=bytes(6))]), "old.js"),
        "truncated_entry": (
            gzip_bytes(raw_tar([RawEntry("cut.js", b"x" * 100, declared_size=4096)], end_blocks=0)),
            "cut.js",
        ),
        "truncated_header": (
            gzip_bytes(ustar_header(RawEntry("half.js"))[:300]),
            "half.js",
        ),
        "invalid_utf8_name": (tar_gz([RawEntry(b"caf\xe9.js", b"x")]), "caf\ufffd.js"),
        "base256_size": (
            tar_gz([RawEntry("huge.bin", b"x", size_field=b"\x80" + bytes(10) + b"\x01")]),
            "huge.bin",
        ),
        "directory_escape": (tar_gz([RawEntry("../evil/", typeflag=b"5")]), "../evil/"),
        "gzip_corrupt_crc": (_corrupt_crc(), "gzip stream"),
        "gzip_truncated": (tar_gz([RawEntry("SKILL.md", b"# x\n")])[:-12], "gzip stream"),
        "gzip_trailing_garbage": (_valid_gzip_with(b"garbage"), "gzip stream"),
        "gzip_invalid": (b"\x1f\x8b\x01\x02\x03", "gzip stream"),
        "archive_too_large": (b"\x1f\x8b" + bytes(5 * 1024 * 1024), "archive"),
        "bundle_zip_slip": (_bundle_with("../../etc/passwd", "eA=="), "../../etc/passwd"),
        "bundle_nul_path": (_bundle_with("a\0b.js", "eA=="), "a\\u0000b.js"),
        "bundle_hidden": (_bundle_with(".npmrc", "eA=="), ".npmrc"),
        # 200 characters fit the path rule, but as 401 UTF-8 bytes no file system holds the name
        "bundle_name_too_long": (_bundle_with("é" * 200 + ".md", "eA=="), "é" * 200 + ".md"),
        "bundle_invalid_base64": (_bundle_with("SKILL.md", "@@@@"), "SKILL.md"),
        "bundle_base64_bad_length": (_bundle_with("SKILL.md", "eAe=="), "SKILL.md"),
        "bundle_malformed_entry": (
            json.dumps(
                {"format": "splice-bundle", "formatVersion": 1, "files": [{"path": 1}]}
            ).encode(),
            "entry #0",
        ),
        "bundle_not_json": (b"\xff\xfe not json", "bundle"),
        "bundle_wrong_format": (json.dumps({"format": "zip"}).encode(), "bundle"),
        "bundle_too_many_files": (
            legacy_bundle({f"f{i:03d}.txt": b"x" for i in range(501)}),
            "501 files",
        ),
    }
