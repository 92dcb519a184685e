"""Package artifacts: the deterministic ``.tar.gz`` writer and the safe reader (docs/compatibility.md#archive-format).

Writer: files sorted by path in UTF-16 code-unit order, one ustar header per file (mode 0644,
uid/gid 0, mtime 0, empty user and group names, no directory entries), data padded to 512
bytes, two zero blocks, wrapped in stored-deflate gzip (``gzip_stream.gzip_stored``). The same
files give the same bytes, and so the same SHA-256, here and in the TypeScript Splice.

Reader: untrusted bytes in, ``{path: content}`` out, in memory only; nothing is ever written
to disk. The size limit is checked first; ``1f 8b`` selects tar.gz, anything else is read as a
legacy JSON bundle. Inflation stops at 16 MiB. Every rejection is SpecError(INVALID_PACKAGE)
with a detail naming the offending entry (or the gzip stream / bundle when there is none).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal

from splice_build.errors import ErrorCode, SpecError
from splice_build.spec.entry_rules import PackageFiles, quote_path
from splice_build.spec.gzip_stream import GZIP_MAGIC, gunzip_bounded, gzip_stored, starts_stored
from splice_build.spec.legacy_bundle import iter_bundle_files
from splice_build.spec.limits import MAX_ARCHIVE_BYTES, MAX_EXPANDED_BYTES
from splice_build.spec.paths import utf16_sort_key
from splice_build.spec.tar_reader import BLOCK, iter_tar_files

ArchiveFormat = Literal["tar.gz", "json-bundle"]

_NAME_BYTES = 100  # ustar name field
_PREFIX_BYTES = 155  # ustar prefix field


def _octal_field(value: int, length: int) -> bytes:
    """``length - 1`` zero-padded octal digits and a NUL (docs/compatibility.md#archive-format)."""
    return format(value, "o").zfill(length - 1).encode("ascii") + b"\0"


def _split_path(path: str) -> tuple[bytes, bytes]:
    """ustar ``(prefix, name)``: the shortest prefix at a ``/`` with prefix ≤155 and name ≤100."""
    encoded = path.encode("utf-8")
    if len(encoded) <= _NAME_BYTES:
        return b"", encoded
    parts = encoded.split(b"/")
    for index in range(1, len(parts)):
        prefix, name = b"/".join(parts[:index]), b"/".join(parts[index:])
        if len(prefix) <= _PREFIX_BYTES and len(name) <= _NAME_BYTES:
            return prefix, name
    raise SpecError(
        ErrorCode.INVALID_BUNDLE,
        "Path too long for a tar archive",
        details=[
            f"entry {quote_path(path)}: {len(encoded)} bytes cannot be split into"
            f" a prefix of at most {_PREFIX_BYTES} and a name of at most {_NAME_BYTES}"
        ],
    )


def _ustar_header(path: str, size: int) -> bytes:
    prefix, name = _split_path(path)
    header = bytearray(BLOCK)
    header[0 : len(name)] = name
    header[100:108] = _octal_field(0o644, 8)  # mode
    header[108:116] = _octal_field(0, 8)  # uid
    header[116:124] = _octal_field(0, 8)  # gid
    header[124:136] = _octal_field(size, 12)
    header[136:148] = _octal_field(0, 12)  # mtime
    header[148:156] = b" " * 8  # checksum is computed over spaces in its own field
    header[156:157] = b"0"  # regular file
    header[257:263] = b"ustar\0"
    header[263:265] = b"00"
    header[345 : 345 + len(prefix)] = prefix
    header[148:156] = format(sum(header), "o").zfill(6).encode("ascii") + b"\0 "
    return bytes(header)


def _tar(files: Mapping[str, bytes]) -> bytes:
    parts: list[bytes] = []
    for path in sorted(files, key=utf16_sort_key):
        content = files[path]
        parts += (_ustar_header(path, len(content)), content, bytes(-len(content) % BLOCK))
    parts.append(bytes(2 * BLOCK))
    return b"".join(parts)


def is_packed_archive(data: bytes) -> bool:
    """``data`` starts as ``pack_archive`` writes: the fixed stored-gzip header, then a ustar
    header. No other tool writes that gzip header (mtime 0, XFL 0, OS 255) with stored
    blocks, so this names an artifact of ``splice pack``, whatever the file is called."""
    inner = starts_stored(data)
    return inner is not None and inner[257:263] == b"ustar\0"


def pack_archive(files: Mapping[str, bytes]) -> bytes:
    """The deterministic ``.tar.gz`` of ``path -> content``.

    Refuses (SpecError INVALID_BUNDLE, naming the entry) anything ``read_archive`` would refuse:
    unsafe, hidden or ``node_modules`` paths, case-insensitive duplicates, more than 500 files,
    a file over 2 MiB, a path that does not fit a ustar header, an archive over 5 MiB.
    """
    accepted = PackageFiles(ErrorCode.INVALID_BUNDLE)
    for path, content in files.items():
        accepted.add(path, content)
    archive = gzip_stored(_tar(accepted.files))
    if len(archive) > MAX_ARCHIVE_BYTES:
        raise SpecError(
            ErrorCode.INVALID_BUNDLE,
            f"Archive is {len(archive)} bytes (max {MAX_ARCHIVE_BYTES})",
            details=[f"archive: {len(accepted.files)} files, {len(archive)} bytes"],
        )
    return archive


def archive_format(data: bytes) -> ArchiveFormat:
    """``"tar.gz"`` when ``data`` starts with the gzip magic, else ``"json-bundle"``."""
    return "tar.gz" if data[:2] == GZIP_MAGIC else "json-bundle"


def read_archive(data: bytes) -> dict[str, bytes]:
    """Safely read an untrusted artifact (tar.gz or legacy JSON bundle) into memory.

    Returns ``{path: content}`` in archive order. Raises SpecError(INVALID_PACKAGE) with a
    detail naming the offending entry; writes nothing anywhere.
    """
    if len(data) > MAX_ARCHIVE_BYTES:
        raise SpecError(
            ErrorCode.INVALID_PACKAGE,
            f"Archive is {len(data)} bytes (max {MAX_ARCHIVE_BYTES})",
            details=[f"archive: {len(data)} bytes"],
        )
    entries: Iterable[tuple[str, bytes | memoryview | None]]
    if archive_format(data) == "tar.gz":
        entries = iter_tar_files(gunzip_bounded(data, limit=MAX_EXPANDED_BYTES))
    else:
        entries = iter_bundle_files(data)
    accepted = PackageFiles(ErrorCode.INVALID_PACKAGE)
    for path, content in entries:
        if content is None:
            accepted.add_directory(path)
        else:
            accepted.add(path, content)
    return accepted.files
