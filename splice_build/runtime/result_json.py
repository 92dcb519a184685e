"""Capability results as JSON bytes without a whole copy of their text (runtime/capabilities.py,
broker/cache.py, broker/broker.py).

``json_size`` counts what ``json.dumps(value, separators=(",", ":"), ensure_ascii=False,
allow_nan=False)`` writes, in UTF-8, without writing it; ``write_json`` writes those same
bytes piece by piece. json.dumps makes the whole text one ``str`` (twice, while it joins its
pieces), and one character outside the BMP makes each character of it four bytes: checking a
result's size that way cost the host process copies several times the result's own size
(docs/security.md#memory-a-tool-can-make-the-parent-hold).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from typing import Any

# What json.dumps(ensure_ascii=False) writes for a character of a string: one more byte for
# the short escapes, five more for \u00XX (json.encoder.ESCAPE). Counted in the UTF-8 bytes,
# where no byte of a longer character is below 0x80.
_NEEDS_ESCAPE = re.compile(r'[\x00-\x1f\\"]')
_SHORT_ESCAPES = b'"\\\b\f\n\r\t'
_LONG_ESCAPES = bytes(c for c in range(0x20) if c not in _SHORT_ESCAPES)
_CONSTANTS = {None: "null", True: "true", False: "false"}
# A long string is counted and written this many characters at a time: never one copy of it
# as a whole (a str holding one emoji takes four bytes for each of its characters).
_PIECE = 64 * 1024
# A result at most this large is written by json.dumps in one piece (its copies are small).
WRITTEN_WHOLE = 256 * 1024


def _string_size(text: str) -> int:
    if not _NEEDS_ESCAPE.search(text):
        if text.isascii():
            return 2 + len(text)
        return 2 + sum(len(piece.encode("utf-8")) for piece in _pieces(text))
    size = 2
    for piece in _pieces(text):
        raw = piece.encode("utf-8")
        short = len(raw) - len(raw.translate(None, _SHORT_ESCAPES))
        long = len(raw) - len(raw.translate(None, _LONG_ESCAPES))
        size += len(raw) + short + 5 * long
    return size


def _pieces(text: str) -> Iterator[str]:
    """``text`` in slices of at most _PIECE characters (one slice when it is short)."""
    if len(text) <= _PIECE:
        yield text
        return
    for start in range(0, len(text), _PIECE):
        yield text[start : start + _PIECE]


def _scalar_size(value: Any) -> int:
    if value is None or value is True or value is False:
        return len(_CONSTANTS[value])
    if isinstance(value, str):
        return _string_size(value)
    if isinstance(value, int):
        return len(int.__repr__(value))
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("Out of range float values are not JSON compliant")
        return len(float.__repr__(value))
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def json_size(value: Any, limit: int) -> int:
    """The UTF-8 bytes of ``json.dumps(value, separators=(",", ":"), ensure_ascii=False,
    allow_nan=False)``, counted without writing it; the count stops once past ``limit`` (any
    number above it is returned then). Raises as ``json.dumps`` would for a value with no
    JSON form.

    Writing a result only to learn its size cost the host process a copy of it each time,
    and more than the result itself: a 5 MiB text holding one emoji is a 20 MiB ``str`` in
    Python, and 5 MiB of control characters 30 MiB of JSON (docs/capabilities.md)."""
    size = 0
    stack = [value]
    while stack and size <= limit:
        item = stack.pop()
        flat = _flat_text(item)
        if flat is not None:
            size += len(flat.encode("utf-8"))
        elif isinstance(item, dict):
            size += max(2 * len(item) + 1, 2)  # the braces, colons and commas
            for key, child in item.items():
                size += _string_size(key) if isinstance(key, str) else 2 + _scalar_size(key)
                stack.append(child)
        elif isinstance(item, list | tuple):
            size += max(len(item) + 1, 2)
            stack.extend(item)
        else:
            size += _scalar_size(item)
    return size


_FLAT_ITEMS = 4096  # a container json.dumps writes at once: at most this many items
_SCALARS = frozenset({int, float, bool, type(None)})
_EMPTY = {dict: "{}", list: "[]", tuple: "[]"}


def _flat_text(value: Any) -> str | None:
    """The JSON text of a list or dict of at most _FLAT_ITEMS numbers, constants and
    strings of _PIECE characters in all (a record, a row of numbers), or None: such a
    container is small whatever it holds, and json.dumps writes it many times faster than
    the walks of ``json_size`` and ``write_json``, which then go to its parent."""
    kind = type(value)
    if kind not in _EMPTY:
        return None
    if not value:
        return _EMPTY[kind]
    if len(value) > _FLAT_ITEMS:
        return None
    if kind is dict:
        characters = 0
        for key, item in value.items():
            if type(key) is not str:
                return None
            characters += len(key)
            if type(item) is str:
                characters += len(item)
            elif type(item) not in _SCALARS:
                return None
    else:
        characters = 0
        for item in value:
            if type(item) is str:
                characters += len(item)
            elif type(item) not in _SCALARS:
                return None
    if characters > _PIECE:
        return None
    return "".join(_FLAT_ENCODER(value, 0))


def _no_default(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


# json.dumps's own C encoder, made once (json.dumps makes one for each call, which cost more
# than writing a small record): separators ",", ":", strict floats, no circularity check
# (a flat container holds no other).
_FLAT_ENCODER = c_make_encoder(
    None, _no_default, encode_basestring, None, ":", ",", False, False, False
)


def write_json(value: Any, size: int) -> bytes:
    """``value`` as ``json.dumps(value, separators=(",", ":"), ensure_ascii=False,
    allow_nan=False)`` writes it, in UTF-8; ``size`` is its ``json_size``.

    json.dumps makes the whole text one ``str`` (twice, while it joins the pieces), and one
    character outside the BMP makes each character of it four bytes: a 4 MiB result became
    32 MiB of copies. A large result is written piece by piece as UTF-8 instead; strings
    through json's own escaping, so both write the same bytes."""
    if size <= WRITTEN_WHOLE:
        return json.dumps(
            value, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        ).encode()
    out: list[bytes] = []
    _write(value, out)
    return b"".join(out)


def _write(value: Any, out: list[bytes]) -> None:
    flat = _flat_text(value)
    if flat is not None:
        out.append(flat.encode("utf-8"))
    elif isinstance(value, str):
        _write_string(value, out)
    elif isinstance(value, dict):
        out.append(b"{")
        for index, (key, child) in enumerate(value.items()):
            if index:
                out.append(b",")
            _write_string(key if isinstance(key, str) else _scalar_text(key), out)
            out.append(b":")
            _write(child, out)
        out.append(b"}")
    elif isinstance(value, list | tuple):
        out.append(b"[")
        for index, child in enumerate(value):
            if index:
                out.append(b",")
            _write(child, out)
        out.append(b"]")
    else:
        out.append(_scalar_text(value).encode())


def _write_string(text: str, out: list[bytes]) -> None:
    if len(text) <= _PIECE:
        out.append(encode_basestring(text).encode("utf-8"))
        return
    out.append(b'"')
    out.extend(encode_basestring(piece)[1:-1].encode("utf-8") for piece in _pieces(text))
    out.append(b'"')


def _scalar_text(value: Any) -> str:
    if value is None or value is True or value is False:
        return _CONSTANTS[value]
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        _scalar_size(value)  # raises for NaN and the infinities
        return float.__repr__(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")
