"""The safe relative path rule shared by package files, entries and fs permissions, and
``fold_path``: how a case- and normalization-insensitive file system compares two names
(the package archive rule and the grants' protected names both use it).

docs/compatibility.md#permissions: a safe relative path is ``.`` or a string of 1..256 characters with no
backslash, no NUL, not starting with ``/``, no drive prefix ``X:``, and no segment equal to
``..``, ``.`` or empty.
"""

from __future__ import annotations

import re

MAX_RELATIVE_PATH = 256  # docs/compatibility.md#permissions
# The longest file name (one segment) Linux and macOS file systems hold, in UTF-8 bytes
# (NAME_MAX): 256 characters fit the path rule, but not one name of 256 "é".
MAX_SEGMENT_BYTES = 255
_DRIVE = re.compile(r"^[A-Za-z]:")


def is_safe_relative_path(path: str, *, allow_dot: bool = True) -> bool:
    """True when ``path`` is project- or package-relative and cannot escape its root."""
    if path == ".":
        return allow_dot
    if not 1 <= utf16_len(path) <= MAX_RELATIVE_PATH:
        return False
    if "\\" in path or "\0" in path or path.startswith("/") or _DRIVE.match(path):
        return False
    return all(segment not in ("", ".", "..") for segment in path.split("/"))


def long_segment(path: str) -> str | None:
    """The first segment of ``path`` no file system could create (over ``MAX_SEGMENT_BYTES``
    in UTF-8), or None: a package file must be writable where it is installed."""
    for segment in path.split("/"):
        if len(segment.encode("utf-8", "surrogatepass")) > MAX_SEGMENT_BYTES:
            return segment
    return None


def utf16_len(text: str) -> int:
    """Length in UTF-16 code units, as JavaScript's ``String.length`` counts (docs/compatibility.md#what-differs-on-purpose)."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def utf16_sort_key(text: str) -> str:
    """Sort key matching JavaScript's ``<`` on strings (UTF-16 code-unit order).

    Code-point order differs from it only where a character above U+FFFF (two surrogates,
    U+D800-U+DFFF, in UTF-16) meets one in U+E000-U+FFFF, so text below U+E000 (every package
    id and most paths) is its own key, with no codec loaded; other text has each such
    character spelled as its two surrogates."""
    if text.isascii() or max(text) < "\ue000":
        return text
    return "".join(char if char < "\U00010000" else _surrogates(char) for char in text)


def _surrogates(char: str) -> str:
    point = ord(char) - 0x10000
    return chr(0xD800 + (point >> 10)) + chr(0xDC00 + (point & 0x3FF))


def fold_path(path: str) -> str:
    """``path`` as a file system that ignores case and Unicode normalization stores it.

    macOS (APFS, HFS+) merges the NFC and NFD forms of a name; macOS and Windows merge upper
    and lower case (Windows also ``s.js`` and ``ſ.js``, both ``S.JS`` in upper case).
    Canonical caseless matching: NFC, case-folded, and NFC again, since folding can leave a
    name unnormalized (``ﬆ`` + U+0323 folds to what ``ST`` + U+0323 folds to only once both
    are normalized again). NFC and case folding never add, drop or move a ``/``, so the
    folded path has as many segments as ``path``.
    """
    import unicodedata  # a C extension; the no-op ``sync`` never folds a path

    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", path).casefold())


def fold_name(name: str) -> str:
    """One name (a path segment) as every file system stores it: folded (``fold_path``), and
    without the trailing dots and spaces Windows drops (``x.js.`` and ``x.js `` are ``x.js``
    there). The rule of project state's names and of a package's paths alike."""
    return fold_path(name).rstrip(". ")
