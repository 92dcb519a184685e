"""Fuzz targets for the counting JSON writer and the number reader (fuzz/README.md).

Both have an independent oracle: ``json.dumps`` for ``runtime/result_json.py`` (its count and
its bytes must be the standard encoder's, piece by piece or whole), and a regular expression
of ASCII digits with Python's ``int`` for ``spec/number_text.py``.
"""

from __future__ import annotations

import json
import math
import re
import struct
from collections.abc import Callable, Iterator
from typing import Any

Check = Callable[[bytes], None]


class _Bytes:
    """The input read front to back; zeros once it is spent (the value stays small)."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._at = 0

    def byte(self) -> int:
        if self._at >= len(self._data):
            return 0
        self._at += 1
        return self._data[self._at - 1]

    def take(self, count: int) -> bytes:
        piece = self._data[self._at : self._at + count]
        self._at += count
        return piece.ljust(count, b"\0")


# Code point classes of a string: every kind json.dumps(ensure_ascii=False) writes its own
# way (short escapes, \u00XX, as is), lone surrogates (no UTF-8 form), and characters of each
# UTF-8 length.
_CODE_POINTS: tuple[tuple[int, int], ...] = (
    (0x20, 0x7E),  # printable ASCII
    (0x00, 0x1F),  # control characters: short and long escapes
    (0x22, 0x22),  # "
    (0x5C, 0x5C),  # backslash
    (0x7F, 0x7F),
    (0x80, 0x7FF),  # two UTF-8 bytes
    (0x800, 0xD7FF),  # three
    (0xD800, 0xDFFF),  # lone surrogates
    (0xE000, 0xFFFF),  # incl. U+FEFF, U+FFFF
    (0x2028, 0x2029),
    (0x10000, 0x10FFFF),  # four
)
_FLOATS = (
    -0.0,
    0.0,
    math.nan,
    math.inf,
    -math.inf,
    5e-324,
    1e16,
    1e22,
    0.1,
    1.7976931348623157e308,
)


def _string(source: _Bytes) -> str:
    length = source.byte() % 24
    chars = []
    for _ in range(length):
        low, high = _CODE_POINTS[source.byte() % len(_CODE_POINTS)]
        chars.append(chr(low + (source.byte() << 8 | source.byte()) % (high - low + 1)))
    return "".join(chars)


def _key(source: _Bytes) -> Any:
    kind = source.byte() % 14
    if kind < 7:
        return _string(source)
    if kind >= 12:  # an array index to JavaScript ("0", "17"), or almost ("017")
        return ("0" if kind == 13 else "") + str(source.byte() % 32)
    return (
        None,
        True,
        False,
        int.from_bytes(source.take(3), "little", signed=True),
        struct.unpack("<d", source.take(8))[0],
    )[kind - 7]


def _value(source: _Bytes, depth: int) -> Any:
    kind = source.byte() % (16 if depth < 24 else 9)
    if kind == 0:
        return None
    if kind == 1:
        return source.byte() % 2 == 0
    if kind == 2:
        return int.from_bytes(source.take(2), "little", signed=True)
    if kind == 3:  # up to 4,590 digits: int's repr refuses past 4,300
        return (10 ** (source.byte() * 18) - 1) * (-1 if source.byte() % 2 else 1)
    if kind == 4:
        return struct.unpack("<d", source.take(8))[0]
    if kind == 5:
        return _FLOATS[source.byte() % len(_FLOATS)]
    if kind in (6, 7):
        return _string(source)
    if kind == 8:  # a longer string, past a patched _PIECE
        return _string(source) * (source.byte() % 40)
    if kind in (9, 10):
        items = [_value(source, depth + 1) for _ in range(source.byte() % 6)]
        return tuple(items) if kind == 10 else items
    if kind in (11, 12, 13):
        return {_key(source): _value(source, depth + 1) for _ in range(source.byte() % 6)}
    if kind == 14:  # a flat container of many items
        return [source.byte() for _ in range(source.byte() % 64)]
    return (b"", {1, 2}, object())[source.byte() % 3]  # no JSON form: TypeError


def _json_value(value: Any) -> Any:
    """``value`` as ``json.loads`` reads its JSON back: tuples are lists, keys their text."""
    if isinstance(value, dict):
        return {_key_text(key): _json_value(child) for key, child in value.items()}
    if isinstance(value, list | tuple):
        return [_json_value(child) for child in value]
    return value


def _key_text(key: Any) -> str:
    if isinstance(key, str):
        return key
    return json.dumps(key)


def _dumped(value: Any) -> bytes | None:
    """The standard encoder's bytes, or None when the value has no strict UTF-8 JSON form."""
    try:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        return text.encode("utf-8")
    except (ValueError, TypeError):  # NaN, a lone surrogate, 4,300+ digits, no JSON type
        return None


def result_json() -> Check:
    """json_size and write_json against json.dumps, with the real piece sizes and with tiny
    ones (first byte odd), so that short inputs reach the piecewise paths."""
    from fuzz.targets import Finding
    from splice_build.runtime import result_json as module
    from splice_build.runtime.result_json import WRITTEN_WHOLE, json_size, write_json

    real = (module._PIECE, module._FLAT_ITEMS)

    def check(data: bytes) -> None:
        source = _Bytes(data)
        mode = source.byte()
        value = _value(source, 0)
        if mode % 2:
            module._PIECE, module._FLAT_ITEMS = 1 + mode % 9, 1 + mode % 5
        try:
            _compare(value, json_size, write_json, WRITTEN_WHOLE, Finding)
        finally:
            module._PIECE, module._FLAT_ITEMS = real

    return check


def _compare(
    value: Any,
    json_size: Callable[[Any, int], int],
    write_json: Callable[[Any, int], bytes],
    whole: int,
    finding: type[AssertionError],
) -> None:
    expected = _dumped(value)
    if expected is None:
        for limit in (1 << 62, whole + 1):
            try:
                size = json_size(value, limit)
            except (ValueError, TypeError):
                continue
            if size <= limit:
                raise finding(f"json_size counted {size} for a value json.dumps refuses")
        for size in (0, whole + 1):  # both writers refuse it as the callers expect
            try:
                write_json(value, size)
            except (ValueError, TypeError):
                continue
            raise finding("write_json wrote a value json.dumps refuses")
        return
    size = json_size(value, 1 << 62)
    if size != len(expected):
        raise finding(f"json_size {size}, json.dumps wrote {len(expected)} bytes")
    for limit in (size - 1, size // 2, 0):
        if limit < size and json_size(value, limit) <= limit:
            raise finding(f"json_size at limit {limit} counted within it; the size is {size}")
    if json_size(value, size) != size:
        raise finding("json_size at its own size as the limit counted another size")
    for written in (write_json(value, size), write_json(value, whole + 1)):
        if written != expected:
            raise finding(f"write_json wrote {written[:200]!r}, json.dumps {expected[:200]!r}")
    if json.loads(expected) != _json_value(value):
        raise finding("the JSON does not read back to the value")


def json_text_both() -> Check:
    """``canonical_and_stringified`` against ``canonical`` and ``stringify`` written apart,
    with the real split depth and (first byte odd) a depth of 0 to 3, so that short inputs
    reach the objects written twice below it."""
    from fuzz.targets import Finding
    from splice_build.spec import json_text

    real = json_text._SPLIT_LEVELS

    def texts(write: Callable[[], Any]) -> Any:
        try:
            return write()
        except TypeError:
            return TypeError

    def check(data: bytes) -> None:
        source = _Bytes(data)
        mode = source.byte()
        value = _value(source, 0)
        apart = texts(lambda: (json_text.canonical(value), json_text.stringify(value)))
        if mode % 2:
            json_text._SPLIT_LEVELS = mode // 2 % 4
        try:
            both = texts(lambda: json_text.canonical_and_stringified(value))
        finally:
            json_text._SPLIT_LEVELS = real
        if both != apart:
            raise Finding(f"in one walk {str(both)[:300]}, apart {str(apart)[:300]}")

    return check


# numbers typed by people ---------------------------------------------------------------------
_DIGITS = re.compile(r"[0-9]+", re.ASCII)
_DECIMAL = re.compile(r"([0-9]+)(?:\.([0-9]+))?", re.ASCII)


def _texts(data: bytes) -> Iterator[tuple[int, str]]:
    """(a bound from the first byte, text) for the input as UTF-8 and as code points."""
    bound = 1 + data[0] % 24 if data else 1
    rest = data[1:]
    yield bound, rest.decode("utf-8", "surrogateescape")
    yield bound, rest.decode("latin-1")
    if len(rest) % 3 == 0:
        yield (
            bound,
            "".join(
                chr(int.from_bytes(rest[i : i + 3], "big") % 0x110000)
                for i in range(0, len(rest), 3)
            ),
        )


def _json_reads_a_number(text: str) -> bool:
    """Whether ``json.loads`` reads ``text``, with no blank around it, as an int or a float
    (not its ``NaN``/``Infinity`` extensions)."""
    import json

    def no_constant(name: str) -> object:
        raise ValueError(name)

    if not text or text.strip(" \t\n\r") != text:
        return False
    try:
        value = json.loads(text, parse_constant=no_constant)
    except ValueError:  # also int()'s limit of 4,300 digits, past any bound here
        return False
    return type(value) in (int, float)


def number_text() -> Check:
    """is_ascii_digits, whole_number, decimal_number and capped_count against a regex of
    ASCII digits and Python's int on those digits; json_text.is_json_number against
    ``json.loads``."""
    from fuzz.targets import Finding
    from splice_build.spec.json_text import is_json_number
    from splice_build.spec.number_text import (
        capped_count,
        decimal_number,
        is_ascii_digits,
        whole_number,
    )

    def check(data: bytes) -> None:
        for bound, text in _texts(data):
            digits = _DIGITS.fullmatch(text) is not None
            if is_ascii_digits(text) != digits:
                raise Finding(f"is_ascii_digits({text!r}) is {not digits}")
            whole = int(text) if digits and len(text) <= bound else None
            if whole_number(text, bound) != whole:
                raise Finding(f"whole_number({text!r}, {bound}) is not {whole}")
            match = _DECIMAL.fullmatch(text)
            parts = [] if match is None else [p for p in match.groups() if p is not None]
            wanted = float(text) if parts and all(len(p) <= bound for p in parts) else None
            got = decimal_number(text, bound)
            if got != wanted or (got is not None and math.isnan(got)):
                raise Finding(f"decimal_number({text!r}, {bound}) is {got}, not {wanted}")
            cap = (10**bound - 1) // (1 + data[-1] % 7 if data else 1)
            count = min(int(text.lstrip("0") or "0"), cap + 1) if digits else None
            if capped_count(text, cap) != count:
                raise Finding(f"capped_count({text!r}, {cap}) is not {count}")
            if is_json_number(text) != _json_reads_a_number(text):
                raise Finding(f"is_json_number({text!r}) is {not _json_reads_a_number(text)}")

    return check


# registry search -----------------------------------------------------------------------------
def _caseless(text: str) -> str:
    """Unicode's canonical caseless form (D145), the key docs/registry.md#search compares."""
    import unicodedata

    return unicodedata.normalize("NFD", unicodedata.normalize("NFD", text).casefold())


def registry_search() -> Check:
    """A SQLite registry's search of ``@fuzzer/example`` (its description and the query from
    the input, split at the first newline): found exactly when the query, trimmed, lowered and
    cut as the service does, is in its id, or its caseless form is in the description's; a
    query or description holding NUL is ``BAD_REQUEST`` or never stored."""
    import sqlite3

    from fuzz.targets import Finding, _expect_codes, _publish_example, _scratch
    from splice_build.errors import SpliceError
    from splice_build.registry.db.search_key import search_key
    from splice_build.registry.service import admin
    from splice_build.registry.service.ratelimit import RateLimits
    from splice_build.registry.service.read import MAX_QUERY
    from splice_build.registry.service.tokens import TokenRequest
    from splice_build.registry.storage import DB_FILE, open_service

    data_dir = _scratch() / "search"
    service = open_service(
        data_dir, limits=RateLimits(failed_auth=0, publishes=0, requests=0, admin=0)
    )
    admin.create_user(service.deps, "fuzzer")
    token = admin.create_token(service.deps, "fuzzer", TokenRequest(can_manage=True))["token"]
    _publish_example(service, token)
    package = "@fuzzer/example"
    # The publish transaction's own write of a description (sql_store.publish_version).
    writer = sqlite3.connect(data_dir / DB_FILE, isolation_level=None)

    def check(data: bytes) -> None:
        description, _, query = data.decode("utf-8", "replace").partition("\n")
        if "\0" in description:
            return
        writer.execute(
            "UPDATE packages SET description = ?, search_text = ? WHERE id = ?",
            (description, search_key(description), package),
        )
        try:
            found = [hit["name"] for hit in service.search(query, limit="100")["results"]]
        except SpliceError as exc:
            _expect_codes(exc, {"BAD_REQUEST"})
            if "\0" not in query.strip().lower()[:MAX_QUERY]:
                raise Finding(f"query {query!r} refused: {exc}") from exc
            return
        cut = query.strip().lower()[:MAX_QUERY]
        wanted = cut in package or _caseless(cut) in _caseless(description)
        if (package in found) != wanted:
            raise Finding(f"query {cut!r} of {description!r}: found {found}, expected {wanted}")

    return check
