"""JSON text as JavaScript reads and writes it, at any nesting depth.

``parse`` is ``JSON.parse``: strict JSON (no ``NaN``/``Infinity``, no trailing commas), the
last of duplicate keys wins, lone surrogate escapes are kept. Integers stay Python ``int`` and
other numbers are ``float``, as ``json.loads`` gives them. ``stringify`` is
``JSON.stringify(value, null, indent)``: numbers in ECMAScript's shortest form (``1.0`` is
``1``, ``1e21`` is ``1e+21``, ``-0.0`` is ``0``, non-finite numbers are ``null``), strings
with only ``"``, ``\\`` and control characters escaped (non-ASCII stays itself) and lone
surrogates written as ``\\udxxx``. ``canonical`` sorts object keys by UTF-16 code units and
has no whitespace (docs/compatibility.md, "Canonical JSON").

Neither recurses: a manifest's ``default`` value may legally nest 100,000 levels, which
JavaScript's ``JSON.parse`` accepts and CPython's ``json`` refuses ("maximum recursion depth
exceeded"). ``parse`` uses the C decoder and falls back to an explicit stack only when the C
decoder runs out of recursion, so ordinary documents cost what ``json.loads`` costs. Limits on
depth belong to the callers that have one (tool input: 256 levels, see ``spec.limits``).
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from json.decoder import JSONDecodeError, scanstring
from typing import Any, NoReturn

from splice_build.records import dataclass

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
_SPACE = frozenset(" \t\n\r")


# The patterns are compiled on first use: a class reaching the surrogates costs 0.1-0.3 ms
# to compile, four of them 0.5 ms, and a cold ``splice run`` imports this module (for its
# validation) but writes no JSON here and never parses past the C decoder.
_NEEDS_ESCAPE = r'["\\\x00-\x1f\ud800-\udfff]'
_SURROGATE = r"[\ud800-\udfff]"
_WHITESPACE = r"[ \t\n\r]*"
_NUMBER = r"(-?(?:0|[1-9][0-9]*))(\.[0-9]+)?([eE][-+]?[0-9]+)?"


@functools.cache
def _pattern(source: str) -> re.Pattern[str]:
    return re.compile(source)


def is_json_number(text: str) -> bool:
    """``text`` is a number as JSON writes it: ASCII digits, no ``+``, ``_``, whitespace,
    ``NaN`` or ``inf`` (``float()`` reads all of those, and digits of any script)."""
    return _pattern(_NUMBER).fullmatch(text) is not None


_LITERALS = {"null": None, "true": True, "false": False}


# ----------------------------------------------------------------------------------- copy

Container = dict[str, Any] | list[Any]


def copy(value: Any, container: Callable[[Container, int], Container] | None = None) -> Any:
    """A deep copy of a JSON value, without recursion.

    ``container(original, depth)`` makes each new, empty container (``depth`` 1 is the value
    itself); the default is a plain ``dict`` or ``list``. The containers still to fill are
    kept in flat lists, no object per level (see ``parse_iterative``).
    """
    make = container or _plain_container
    if not isinstance(value, dict | list):
        return value
    root = make(value, 1)
    sources: list[Container] = [value]
    targets: list[Container] = [root]
    depths: list[int] = [1]
    while sources:
        source, target, depth = sources.pop(), targets.pop(), depths.pop()
        items = source.items() if isinstance(source, dict) else enumerate(source)
        for key, item in items:
            duplicate: Any = item
            if isinstance(item, dict | list):
                duplicate = make(item, depth + 1)
                sources.append(item)
                targets.append(duplicate)
                depths.append(depth + 1)
            if isinstance(target, dict):
                target[key] = duplicate
            else:
                target.append(duplicate)
    return root


def _plain_container(original: Container, depth: int) -> Container:
    return {} if isinstance(original, dict) else []


# ---------------------------------------------------------------------------------- parse


@dataclass(frozen=True)
class Encoded:
    """JSON text this process wrote itself (``stringify`` or ``dumps``), kept as text:
    ``stringify`` and ``dumps`` write it as it is.

    For a stored document too deep for the C decoder (``parse_shallow``): parsing it with
    ``parse_iterative`` and writing it again with ``stringify`` costs seconds of pure Python per
    million levels and gives back the same text, since ``stringify`` of its own output's parse
    is that output. Never wrap text that another party wrote: it is not checked.
    """

    text: str


def parse_shallow(text: str) -> Any:
    """``parse(text)`` when the C decoder can read it, else ``Encoded(text)`` unparsed.

    Only for text written by ``stringify`` (a registry's stored manifest): the value is read
    only to be written out again (``dumps`` writes an ``Encoded`` compactly, as ``stringify``
    writes any value too deep for the C encoder), so its bytes are what the full parse and
    write would give, at the cost of the C decoder's refusal.
    """
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        return Encoded(text)


def parse(text: str) -> Any:
    """``JSON.parse(text)``; raises ``json.JSONDecodeError`` (a ``ValueError``)."""
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        return parse_iterative(text)


def _reject_constant(name: str) -> NoReturn:
    # Python's json accepts NaN and Infinity; JSON (and JSON.parse) does not.
    raise JSONDecodeError(f"{name} is not valid JSON", name, 0)


def parse_iterative(
    text: str,
    *,
    parse_int: Callable[[str], Any] = int,
    parse_float: Callable[[str], Any] = float,
) -> Any:
    """The same result as ``parse`` (and as ``json.loads``, whose number hooks it takes), with
    an explicit stack.

    Per level it keeps only references in two flat lists (the open containers and the key
    each open object's next value goes to), and each container joins its parent when it
    opens, so closing one is a pop: a million levels allocate no more than their million
    containers, which the garbage collector then walks less often (docs/registry.md, what a
    publish costs).
    """
    end = len(text)
    containers: list[dict[str, Any] | list[Any]] = []  # open, innermost last
    keys: list[str | None] = []  # the key of each open object's next value (None in arrays)
    root: Any = None
    index = _skip(text, 0)
    while True:
        # A value starts at ``index``.
        char = text[index : index + 1]
        value: Any
        opened: dict[str, Any] | list[Any] | None = None
        if char == "[":
            index += 1
            if text[index : index + 1] in _SPACE:
                index = _skip(text, index)
            if text[index : index + 1] == "]":
                value, index = [], index + 1
            else:
                value = opened = []
                key = None
        elif char == "{":
            index = _skip(text, index + 1)
            if text[index : index + 1] == "}":
                value, index = {}, index + 1
            else:
                key, index = _key(text, index)
                value = opened = {}
        elif char == '"':
            value, index = scanstring(text, index + 1, True)
        else:
            value, index = _scalar(text, index, parse_int, parse_float)
        # The value joins its container (one that opened too, before its members).
        if not containers:
            root = value
        else:
            parent = containers[-1]
            if parent.__class__ is list:
                parent.append(value)  # type: ignore[union-attr]
            else:
                parent[keys[-1]] = value  # type: ignore[index]
        if opened is not None:
            containers.append(opened)
            keys.append(key)
            continue
        # Close every container that ends right after it, then find the next value.
        while True:
            if text[index : index + 1] in _SPACE:
                index = _skip(text, index)
            if not containers:
                if index != end:
                    raise JSONDecodeError("Extra data", text, index)
                return root
            char = text[index : index + 1]
            container = containers[-1]
            if char == ("]" if container.__class__ is list else "}"):
                containers.pop()
                keys.pop()
                index += 1
                continue
            if char != ",":
                raise JSONDecodeError("Expecting ',' delimiter", text, index)
            index = _skip(text, index + 1)
            if container.__class__ is dict:
                keys[-1], index = _key(text, index)
            break


def _skip(text: str, index: int) -> int:
    match = _pattern(_WHITESPACE).match(text, index)
    assert match is not None
    return match.end()


def _key(text: str, index: int) -> tuple[str, int]:
    """An object key and its ``:``; returns the index of the member's value."""
    if text[index : index + 1] != '"':
        raise JSONDecodeError("Expecting property name enclosed in double quotes", text, index)
    key, index = scanstring(text, index + 1, True)
    index = _skip(text, index)
    if text[index : index + 1] != ":":
        raise JSONDecodeError("Expecting ':' delimiter", text, index)
    return key, _skip(text, index + 1)


def _scalar(
    text: str, index: int, parse_int: Callable[[str], Any], parse_float: Callable[[str], Any]
) -> tuple[Any, int]:
    for word, literal in _LITERALS.items():
        if text.startswith(word, index):
            return literal, index + len(word)
    match = _pattern(_NUMBER).match(text, index)
    if match is None:
        raise JSONDecodeError("Expecting value", text, index)
    whole, fraction, exponent = match.groups()
    if fraction or exponent:
        return parse_float(match.group()), match.end()
    return parse_int(whole), match.end()


# ------------------------------------------------------------------------------ stringify


def stringify(value: object, *, indent: int | None = None) -> str:
    """``JSON.stringify(value, null, indent)``.

    Object keys come in JavaScript's property order: keys that are array indices (``"0"``,
    ``"17"``) first, in numeric order, then the others in insertion order. Raises TypeError
    for values without a JSON form (non-string keys, other types).
    """
    return _encode(value, indent, None)


def dumps(value: object, *, indent: int | None = None) -> str:
    """``json.dumps(value, ensure_ascii=False)``, compact or with ``indent``, by the C encoder.

    A value nested deeper than the C encoder recurses is written by ``stringify``, compactly:
    indenting N levels costs N² spaces, and output is no place for a 100,000-level staircase.
    A surrogate code point (a lone half from a tool's JavaScript string) is written as its
    ``\\udxxx`` escape, as ``JSON.stringify`` writes it, so the text always has a UTF-8 form:
    an answer quoting one never fails to encode.
    """
    separators = (",", ": ") if indent is not None else (",", ":")
    try:
        text = json.dumps(
            value, ensure_ascii=False, indent=indent, separators=separators, default=_no_c_form
        )
    except (RecursionError, _EncodedInside):
        return stringify(value)
    # Outside string literals JSON text has no surrogates; inside, the escape means the same.
    return _pattern(_SURROGATE).sub(_escape, text) if _pattern(_SURROGATE).search(text) else text


READABLE_SLACK = 64 * 1024  # characters indentation may always add (``readable``)


def readable(value: object, *, indent: int = 2) -> str:
    """``dumps(value, indent=indent)``, or the compact ``dumps(value)`` when indenting would
    more than double it beyond ``READABLE_SLACK``.

    For answers to other parties (registry answers, MCP tool results): indenting multiplies a
    value by its depth, so a 2 MiB manifest holding a million numbers 400 levels deep was an
    860 MB answer. The cost here is the compact text's plus at most twice its length again.
    """
    compact = dumps(value)
    pretty = indented_within(value, indent, 2 * len(compact) + READABLE_SLACK)
    return compact if pretty is None else pretty


def indented_within(value: object, indent: int, limit: int) -> str | None:
    """``dumps(value, indent=indent)`` when it has at most ``limit`` characters, else None.

    Writing stops once past ``limit``: indenting multiplies a value's size by its depth (a
    2 MiB manifest holding a million numbers 400 levels deep is 860 MB indented), so the cost
    is bounded by ``limit``, not by the value. A value only ``stringify`` writes (deeper than
    the C encoder recurses, or holding an ``Encoded``) is None too.
    """
    encoder = json.JSONEncoder(
        ensure_ascii=False, indent=indent, separators=(",", ": "), default=_no_c_form
    )
    chunks: list[str] = []
    size = 0
    try:
        for chunk in encoder.iterencode(value):
            size += len(chunk)
            if size > limit:
                return None
            chunks.append(chunk)
    except (RecursionError, _EncodedInside):
        return None
    text = "".join(chunks)
    if _pattern(_SURROGATE).search(text):
        text = _pattern(_SURROGATE).sub(_escape, text)  # six characters for each: count them again
    return text if len(text) <= limit else None


class _EncodedInside(Exception):
    """The C encoder met an ``Encoded``, which only ``stringify`` writes."""


def _no_c_form(value: object) -> NoReturn:
    if isinstance(value, Encoded):
        raise _EncodedInside
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def canonical(value: object) -> str:
    """Canonical JSON: keys sorted by UTF-16 code units, no whitespace."""
    return _encode(value, None, _utf16_key)


def canonical_and_stringified(value: object) -> tuple[str, str]:
    """``(canonical(value), stringify(value))``, in one walk where the two agree.

    They differ only in the order of an object's members: everything else is written once
    (a publish writes the manifest both ways, and a million-level ``default`` cost 0.3 s a
    walk). The members of an object whose two orders differ are written once each and laid
    out both ways, down to ``_SPLIT_LEVELS`` such objects nested (each copies its members'
    text once more); deeper ones are written twice.
    """
    both = _encode(value, None, _BOTH, _SPLIT_LEVELS)
    return (both, both) if isinstance(both, str) else both


_SPLIT_LEVELS = 32


def _split(members: list[tuple[str, Any]], splits: int) -> tuple[str, str]:
    """An object's texts (canonical, stringify) whose two member orders differ."""
    if not splits:
        value = dict(members)
        return _encode(value, None, _utf16_key), _encode(value, None, None)
    texts: dict[str, Any] = {}
    for key, member in members:
        both = _encode(member, None, _BOTH, splits - 1)
        texts[key] = (both, both) if isinstance(both, str) else both
    laid = [
        "{" + ",".join(_string(key) + ":" + texts[key][side] for key, _ in order) + "}"
        for side, order in ((0, sorted(members, key=_utf16_key)), (1, _js_order(members)))
    ]
    return laid[0], laid[1]


def _BOTH(item: tuple[str, Any]) -> bytes:
    """``_encode``'s order for ``canonical_and_stringified``: never called, only compared."""
    raise AssertionError("BUG: _BOTH is a marker")


def _utf16_key(item: tuple[str, Any]) -> bytes:
    return _as_utf16_string(item[0]).encode("utf-16-be", "surrogatepass")


def _encode(
    value: object,
    indent: int | None,
    sort_key: Callable[[tuple[str, Any]], bytes] | None,
    splits: int = 0,
) -> Any:
    """The text of ``value``; with the order ``_BOTH``, a (canonical, stringify) pair when an
    object's orders differ inside, else the one text both are."""
    out: list[Any] = []  # text, and with _BOTH an object's (canonical, stringify) pair
    colon = ": " if indent else ":"
    # Open containers, innermost last, in flat lists (no object per level but the members of
    # an object): the members to write (an array itself, or an object's (key, value) pairs in
    # order), the index of the next one, and whether it is an object.
    members: list[Sequence[Any]] = []
    nexts: list[int] = []
    objects: list[bool] = []
    key_texts: dict[str, str] = {}
    pending: object = value
    while True:
        kind = pending.__class__
        is_object: bool | None = None  # None: a scalar, written
        if kind is list or kind is tuple:
            is_object = False
        elif kind is dict:
            is_object = True
        else:
            text = _primitive(pending)
            if text is not None:
                out.append(text)
            elif isinstance(pending, Mapping):
                is_object = True
            elif isinstance(pending, list | tuple):
                is_object = False
            else:
                raise TypeError(f"JSON cannot encode {type(pending).__name__}")
        if is_object:
            for key in pending:  # type: ignore[attr-defined]
                if not isinstance(key, str):
                    raise TypeError(f"JSON object keys must be strings, not {key!r}")
            pairs = list(pending.items())  # type: ignore[attr-defined]
            if len(pairs) > 1:  # one member is in order: no key to read for it
                if sort_key is _BOTH:
                    pairs = _js_order(pairs)
                    canonical_order = sorted(pairs, key=_utf16_key)
                    if [key for key, _ in pairs] != [key for key, _ in canonical_order]:
                        out.append(_split(pairs, splits))
                        pairs = []
                else:
                    pairs = sorted(pairs, key=sort_key) if sort_key else _js_order(pairs)
            if pairs:
                out.append("{")
                members.append(pairs)
                nexts.append(0)
                objects.append(True)
            elif not pending:
                out.append("{}")
        elif is_object is False:
            if pending:
                out.append("[")
                members.append(pending)  # type: ignore[arg-type]
                nexts.append(0)
                objects.append(False)
            else:
                out.append("[]")
        # Find the next value to write, closing finished containers.
        while members:
            index = nexts[-1]
            if index == len(members[-1]):
                members.pop()
                nexts.pop()
                if indent:
                    out.append("\n" + " " * (indent * len(members)))
                out.append("}" if objects.pop() else "]")
                continue
            nexts[-1] = index + 1
            if index:
                out.append(",")
            if indent:
                out.append("\n" + " " * (indent * len(members)))
            if objects[-1]:
                key, pending = members[-1][index]
                text = key_texts.get(key)
                if text is None:  # each distinct key escaped once: keys repeat level by level
                    text = key_texts[key] = _string(key) + colon
                out.append(text)
            else:
                pending = members[-1][index]
            break
        else:
            if sort_key is not _BOTH or all(piece.__class__ is str for piece in out):
                return "".join(out)
            return tuple(
                "".join(p if p.__class__ is str else p[side] for p in out) for side in (0, 1)
            )


_MAX_ARRAY_INDEX = 2**32 - 2


def _array_index(key: str) -> int | None:
    """The index a key names when JavaScript treats it as an array index, else None."""
    if not key or not key.isascii() or not key.isdigit() or (len(key) > 1 and key[0] == "0"):
        return None
    index = int(key) if len(key) <= 10 else _MAX_ARRAY_INDEX + 1
    return index if index <= _MAX_ARRAY_INDEX else None


def _js_order(items: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    indexed = [(index, item) for item in items if (index := _array_index(item[0])) is not None]
    if not indexed:
        return items
    first = [item for _, item in sorted(indexed, key=lambda pair: pair[0])]
    return first + [item for item in items if _array_index(item[0]) is None]


def _primitive(value: object) -> str | None:
    """The JSON text of a scalar, or None for a container (or an unsupported value)."""
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
        return number_text(value)
    if isinstance(value, Encoded):
        return value.text
    return None


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    return _ESCAPES.get(char) or f"\\u{ord(char):04x}"


def _as_utf16_string(text: str) -> str:
    """Join surrogate pairs into characters, as a JavaScript string would read them."""
    if not _pattern(_SURROGATE).search(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def _string(text: str) -> str:
    return '"' + _pattern(_NEEDS_ESCAPE).sub(_escape, _as_utf16_string(text)) + '"'


def number_text(value: float) -> str:
    """ECMAScript Number::toString(10), with non-finite numbers as ``null`` (as JSON has them)."""
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
    # Python ints are JavaScript numbers: exact up to 2**53, rounded to a double beyond.
    if -_SAFE_INTEGER <= value <= _SAFE_INTEGER:
        return str(int(value))
    try:
        return number_text(float(value))
    except OverflowError:  # beyond the largest double: JavaScript reads it as Infinity
        return "null"
