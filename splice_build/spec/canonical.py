"""Canonical JSON, byte-compatible with the TypeScript ``canonicalJson`` (interfaces.md 5.7).

Objects have their keys sorted by UTF-16 code units, arrays keep their order, there is no
whitespace, and every primitive is written as JavaScript's ``JSON.stringify`` writes it:

- numbers: the shortest digits that round-trip (ECMAScript Number::toString), so ``1.0`` is
  ``1``, ``1e21`` is ``1e+21``, ``1e-7`` is ``1e-7``, ``-0.0`` is ``0``; NaN and infinities are
  ``null``. Python ints are JavaScript numbers: exact up to 2**53, rounded to a double beyond.
- strings: ``"``, ``\\`` and control characters escaped (``\\n`` style where JSON has one, else
  ``\\u00xx``), lone surrogates as ``\\udxxx``, everything else (non-ASCII too) as itself.

JavaScript drops ``undefined`` members; Python has no undefined, and ``None`` is JSON ``null``,
so ``None`` values are KEPT. Used for ``manifestSha256`` and metadata comparison, so a change
here changes recorded provenance.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

_SAFE_INTEGER = 2**53
_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}
_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f\ud800-\udfff]')
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    return _ESCAPES.get(char) or f"\\u{ord(char):04x}"


def _as_utf16_string(text: str) -> str:
    """Join surrogate pairs into characters, as a JavaScript string would read them."""
    if not _SURROGATE.search(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def _string(text: str) -> str:
    return '"' + _NEEDS_ESCAPE.sub(_escape, _as_utf16_string(text)) + '"'


def _number(value: float) -> str:
    """ECMAScript Number::toString(10) for a finite or non-finite double."""
    if not math.isfinite(value):
        return "null"
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    # repr gives the shortest round-tripping digits; re-lay them out the JavaScript way.
    mantissa, _, exponent = repr(abs(value)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    all_digits = whole + fraction
    significant = all_digits.lstrip("0")
    # value = 0.<digits> * 10**point
    point = len(whole) + int(exponent or 0) - (len(all_digits) - len(significant))
    digits = significant.rstrip("0")
    count = len(digits)
    if count <= point <= 21:
        text = digits + "0" * (point - count)
    elif 0 < point <= 21:
        text = digits[:point] + "." + digits[point:]
    elif -6 < point <= 0:
        text = "0." + "0" * -point + digits
    else:
        power = point - 1
        head = digits[0] + ("." + digits[1:] if count > 1 else "")
        text = f"{head}e{'+' if power >= 0 else '-'}{abs(power)}"
    return sign + text


def _integer(value: int) -> str:
    if -_SAFE_INTEGER <= value <= _SAFE_INTEGER:
        return str(int(value))
    try:
        return _number(float(value))
    except OverflowError:  # beyond the largest double: JavaScript reads it as Infinity
        return "null"


def _key_order(key: str) -> bytes:
    return _as_utf16_string(key).encode("utf-16-be", "surrogatepass")


def canonical_json(value: object) -> str:
    """Serialize ``value`` (dict/list/tuple/str/int/float/bool/None) canonically.

    Raises TypeError for other types and for non-string object keys: they have no JSON form
    that JavaScript would agree on.
    """
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, int):
        return _integer(value)
    if isinstance(value, float):
        return _number(value)
    if isinstance(value, Mapping):
        for key in value:
            if not isinstance(key, str):
                raise TypeError(f"canonical JSON object keys must be strings, not {key!r}")
        members = sorted(value.items(), key=lambda item: _key_order(item[0]))
        return "{" + ",".join(f"{_string(k)}:{canonical_json(v)}" for k, v in members) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(canonical_json(item) for item in value) + "]"
    raise TypeError(f"canonical JSON cannot encode {type(value).__name__}")
