"""Integrity strings and the files digest (docs/compatibility.md#archive-format, docs/compatibility.md#files-digest).

- Integrity of an artifact: ``sha256-`` + lowercase hex SHA-256 of its bytes.
- Files digest of a package: for each file sorted by path (UTF-16 code-unit order, as
  JavaScript sorts), the line ``<path>\\0<hex sha256 of content>\\n``; the digest is the integrity
  string of those lines' UTF-8 bytes. It depends on file names and contents only, so a
  ``.tar.gz`` and a legacy bundle with the same files give the same digest.

Paths are encoded with ``surrogatepass``: a name read from disk that is not valid UTF-8 (Python
keeps it as lone surrogates) still gets its own distinct line instead of an exception; a
verified package never has such a name, so its digest never matches one.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from typing import Any

INTEGRITY_PREFIX = "sha256-"
INTEGRITY_PATTERN = re.compile(r"^sha256-[0-9a-f]{64}$")

# Bytes a process hashes with CPython's own SHA-256 before it loads OpenSSL's (``hashlib``).
# Loading OpenSSL costs ~4 ms, a tenth of what a cold `splice run` spends on imports; the
# builtin hashes ~5x slower (3.3 ms/MiB against 0.6 here), so past this budget OpenSSL is
# the faster of the two even counting its load. The digest is the same either way.
BUILTIN_BUDGET = 512 * 1024
_budget = [BUILTIN_BUDGET]


def new_sha256(size: int) -> Any:
    """A SHA-256 object for ``size`` bytes to come: the builtin while the budget lasts.

    The caller feeds at most about ``size`` bytes, in ``update`` calls of at most 1 MiB
    (``hash_package_file_and_stat``) or once (``sha256_hex``, whose size is exact): Python 3.11's
    builtin gives a wrong digest for a single ``update`` of more than 4 GiB, which no caller
    here can reach."""
    builtin = _builtin_sha256() if size <= _budget[0] else None
    if builtin is not None:
        _budget[0] -= size  # unlocked: two threads at once may overspend it by one input
        return builtin()
    import hashlib

    return hashlib.sha256()


@functools.cache
def _builtin_sha256() -> Callable[[], Any] | None:
    """CPython's own SHA-256 (``_sha2`` from 3.12, ``_sha256`` before); None in a build
    without it."""
    import importlib

    for name in ("_sha2", "_sha256"):
        try:
            return importlib.import_module(name).sha256  # type: ignore[no-any-return]
        except (ImportError, AttributeError):
            continue
    return None


def sha256_hex(data: bytes) -> str:
    """Lowercase hex SHA-256 of ``data``."""
    digest = new_sha256(len(data))
    digest.update(data)
    return digest.hexdigest()


def integrity_of(data: bytes) -> str:
    """The integrity string ``sha256-<hex>`` of artifact bytes."""
    return INTEGRITY_PREFIX + sha256_hex(data)


def is_integrity(text: object) -> bool:
    """True when ``text`` is a well-formed integrity string (lowercase hex, 64 digits)."""
    return isinstance(text, str) and INTEGRITY_PATTERN.fullmatch(text) is not None


def _code_units(path: str) -> bytes:
    return path.encode("utf-16-be", "surrogatepass")


def files_digest_from_hashes(hashes: Mapping[str, str]) -> str:
    """Files digest from ``path -> lowercase hex sha256`` (for callers that hashed while reading)."""
    digest = new_sha256(100 * len(hashes))  # a line is a path, a NUL and 65 characters
    for path in sorted(hashes, key=_code_units):
        digest.update(path.encode("utf-8", "surrogatepass"))
        digest.update(b"\0" + hashes[path].encode("ascii") + b"\n")
    return INTEGRITY_PREFIX + digest.hexdigest()


def files_digest(files: Mapping[str, bytes]) -> str:
    """Files digest of ``path -> content``."""
    return files_digest_from_hashes({path: sha256_hex(data) for path, data in files.items()})
