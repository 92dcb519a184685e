"""A strict ustar parser for untrusted package archives (docs/compatibility.md#archive-format, reader side).

Written for this job instead of ``tarfile``: it parses each 512-byte header itself, accepts
only what a package can contain, and never touches the file system. It yields regular files
as ``(path, bytes)``, and directory entries as ``(path, None)`` (after a path check); every other entry
type is refused: hard and symbolic links, devices, FIFOs, contiguous files, and the PAX (``x``,
``g``) and GNU (``L``, ``K``, ...) extension headers that could rename a later entry. Each header
must carry a correct checksum and the ``ustar`` magic, and only a POSIX header (``ustar\\0``) a
prefix; every number field must be one (octal, read whole); names must be valid UTF-8; an
entry whose data or padding runs past the end of the stream is refused. Parsing stops at the
first all-zero block. What it accepts, Python's ``tarfile`` and GNU tar list alike
(``fuzz/tar_targets.py``).

The package rules that do not depend on the container (hidden files, limits, duplicates) are
applied by the caller through ``entry_rules.PackageFiles``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from splice_build.errors import ErrorCode, SpecError
from splice_build.records import dataclass
from splice_build.spec.entry_rules import quote_path
from splice_build.spec.paths import is_safe_relative_path

BLOCK = 512
_ZERO_BLOCK = bytes(BLOCK)
# A number field as a whole: blanks, octal digits, then only blanks and NULs to its end, or
# only NULs (0). Not cut at its first NUL: GNU tar skips a NUL that starts a field (written by
# a tar whose previous field overflowed), so "\0" + "00000002000" is a size of 1024 there and 0
# when cut; and a field of blanks alone is no number to GNU tar, which skips the entry.
_OCTAL = re.compile(rb"[ \t\n\v\f\r]*([0-7]+)[ \t\n\v\f\r\0]*|\0*")

# Header layout (POSIX ustar): (offset, length) of the fields the reader uses.
_NAME = (0, 100)
_SIZE = (124, 12)
_CHECKSUM = (148, 8)
# Every number field, read whole though only the size is used: Python's tarfile ends its
# listing at a header whose mode, ids, time or device numbers are not a number (the entries
# from there on are listed by no reviewer's tarfile), and GNU tar fails on them.
_NUMBERS = {
    "mode": (100, 8),
    "uid": (108, 8),
    "gid": (116, 8),
    "mtime": (136, 12),
    "devmajor": (329, 8),
    "devminor": (337, 8),
}
_TYPEFLAG = 156
_MAGIC = (257, 5)
_POSIX_MAGIC = b"ustar\0"
_PREFIX = (345, 155)

_REGULAR = (b"0", b"\0")
_DIRECTORY = b"5"
_REFUSED_TYPES = {
    b"1": "hard link",
    b"2": "symbolic link",
    b"3": "character device",
    b"4": "block device",
    b"6": "FIFO",
    b"7": "contiguous file",
    b"x": "PAX extended header",
    b"g": "PAX global header",
    b"L": "GNU long name header",
    b"K": "GNU long link name header",
    b"D": "GNU directory dump",
    b"M": "GNU multi-volume continuation",
    b"S": "GNU sparse file",
    b"V": "GNU volume header",
}


@dataclass(frozen=True)
class _Header:
    path: str
    typeflag: bytes
    size: int


def _field(header: bytes, span: tuple[int, int]) -> bytes:
    """A NUL-terminated header field (the whole field when it has no NUL)."""
    start, length = span
    return header[start : start + length].split(b"\0", 1)[0]


def _shown_name(header: bytes) -> str:
    """The entry's name for error messages, even when it is not valid UTF-8."""
    raw = _field(header, _NAME)
    prefix = _field(header, _PREFIX)
    if prefix:
        raw = prefix + b"/" + raw
    return quote_path(raw.decode("utf-8", errors="replace"))


def _reject(message: str, header: bytes, offset: int, reason: str) -> SpecError:
    details = [f"entry {_shown_name(header)} at byte {offset}: {reason}"]
    return SpecError(ErrorCode.INVALID_PACKAGE, message, details=details)


def _octal(header: bytes, span: tuple[int, int], offset: int, what: str) -> int:
    start, length = span
    number = _OCTAL.fullmatch(header, start, start + length)
    if number is None:
        # Also refuses GNU base-256 numbers (high bit set), which no package needs.
        raise _reject(
            "Tar header contains an invalid number", header, offset, f"{what} is not octal"
        )
    digits = number.group(1)
    return int(digits, 8) if digits else 0


def _parse_header(header: bytes, offset: int) -> _Header:
    stored = _octal(header, _CHECKSUM, offset, "checksum")
    start, length = _CHECKSUM
    computed = sum(header) - sum(header[start : start + length]) + 0x20 * length
    if stored != computed:
        raise _reject(
            "Tar header checksum mismatch",
            header,
            offset,
            f"header says {stored:o}, computed {computed:o}",
        )
    magic_start, magic_length = _MAGIC
    if header[magic_start : magic_start + magic_length] != b"ustar":
        raise _reject("Not a ustar archive", header, offset, "missing ustar magic")
    typeflag = header[_TYPEFLAG : _TYPEFLAG + 1]
    if typeflag not in _REGULAR and typeflag != _DIRECTORY:
        kind = _REFUSED_TYPES.get(typeflag, "unknown entry type")
        raise _reject(
            "Unsupported archive entry: only regular files are allowed",
            header,
            offset,
            f"type {typeflag.decode('latin-1')!r} ({kind})",
        )
    if _field(header, _PREFIX) and header[magic_start : magic_start + 6] != _POSIX_MAGIC:
        # Only a POSIX header ("ustar\0") has a prefix: GNU tar, libarchive and other readers
        # take these bytes of an old GNU header ("ustar  \0") for times, and list the entry
        # under its name alone, so a reviewer's tar showed one path where we installed another.
        raise _reject(
            "Ambiguous tar header",
            header,
            offset,
            "a prefix in a header that is not POSIX ustar (other readers ignore it)",
        )
    try:
        name = _field(header, _NAME).decode("utf-8")
        prefix = _field(header, _PREFIX).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _reject(
            "Tar header contains invalid UTF-8", header, offset, "name is not valid UTF-8"
        ) from exc
    path = f"{prefix}/{name}" if prefix else name
    path = path.removeprefix("./")
    size = _octal(header, _SIZE, offset, "size")
    for what, span in _NUMBERS.items():
        _octal(header, span, offset, what)
    return _Header(path=path, typeflag=typeflag, size=size)


def _directory_path(entry: _Header, header: bytes, offset: int) -> str | None:
    """A directory entry's path (None for the package's own root). Directory entries create
    nothing, but one that points outside the package is an attack."""
    path = entry.path.rstrip("/")
    if path in ("", "."):
        return None
    if is_safe_relative_path(path, allow_dot=False):
        return path
    raise _reject("Unsafe file path in archive", header, offset, "directory escapes the package")


def iter_tar_files(tar: bytes | bytearray) -> Iterator[tuple[str, memoryview | None]]:
    """Yield ``(path, content)`` for each regular file of an uncompressed tar stream, and
    ``(path, None)`` for each directory entry but the root's: it creates nothing, but other
    tars make it a directory, over a file of that name.

    ``content`` is a view into ``tar`` (no copy). Raises SpecError(INVALID_PACKAGE) with a
    detail naming the entry and its byte offset at the first header that breaks a rule.
    """
    view = memoryview(tar)
    offset = 0
    while True:
        header = bytes(view[offset : offset + BLOCK])
        if header == _ZERO_BLOCK[: len(header)]:
            return  # the end-of-archive block, or the end of the stream
        if len(header) < BLOCK:
            raise _reject("Truncated archive", header, offset, "incomplete header block")
        entry = _parse_header(header, offset)
        data_start = offset + BLOCK
        data_end = data_start + entry.size
        padded_end = data_start + -(-entry.size // BLOCK) * BLOCK
        if padded_end > len(view):
            # Its padding too: Python's tarfile and GNU tar refuse a stream cut inside it.
            raise _reject(
                "Truncated archive entry",
                header,
                offset,
                f"needs {padded_end - data_start} bytes of data and padding,"
                f" {len(view) - data_start} remain",
            )
        if entry.typeflag == _DIRECTORY:
            directory = _directory_path(entry, header, offset)
            if entry.size:
                # GNU tar and Python's tarfile give a directory no data: they read the next
                # block as a header, so the data skipped here held entries listed there, and
                # an entry read here could sit in a file's data there, listed by no tar.
                raise _reject(
                    "Ambiguous tar header",
                    header,
                    offset,
                    "a directory with data (other readers take it for headers)",
                )
            if directory is not None:
                yield directory, None
        else:
            yield entry.path, view[data_start:data_end]
        offset = padded_end
