"""Hypothesis strategies for hostile JSON documents (docs/mcp.md#hostile-input).

Each document is an otherwise ordinary request with one hostile part: a lone surrogate
escape, invalid UTF-8 inside a string, nesting past the decoder's limit, a number too long
or out of range, or a constant JSON does not have. ``spec.untrusted_json.decode`` must refuse
every one of them; the servers must answer each with their protocol error.
"""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import strategies as st

from splice_build.spec.untrusted_json import MAX_DEPTH, MAX_NUMBER_CHARS

# Byte sequences that strict UTF-8 refuses: stray continuation, bytes never used, overlong
# forms, an encoded surrogate (CESU-8), a code point past U+10FFFF, a truncated sequence.
INVALID_UTF8: tuple[bytes, ...] = (
    b"\x80",
    b"\xbf",
    b"\xff",
    b"\xfe",
    b"\xc0\xaf",
    b"\xc1\xbf",
    b"\xe0\x80\xaf",
    b"\xed\xa0\x80",
    b"\xed\xbf\xbf",
    b"\xf4\x90\x80\x80",
    b"\xf8\x88\x80\x80\x80",
    b"\xe2\x82",
    b"\xf0\x9f\x98",
)

_plain = st.text(alphabet="abcxyz-_ 09", max_size=6).map(lambda text: text.encode())


@st.composite
def lone_surrogate_string(draw: st.DrawFn) -> bytes:
    """A JSON string literal holding a surrogate escape that is not part of a pair."""
    unit = draw(st.integers(0xD800, 0xDFFF))
    escape = draw(st.sampled_from(["\\u%04x", "\\u%04X"])) % unit
    if unit < 0xDC00:  # a high surrogate: anything but a low one may follow
        after = draw(st.sampled_from([b"", b"x", b"\\u0041", b"\\ud800"]))
    else:  # a low surrogate alone, or before its high half (the reversed pair)
        after = draw(st.sampled_from([b"", b"\\ud83d", b"y"]))
    return b'"' + draw(_plain) + escape.encode() + after + draw(_plain) + b'"'


@st.composite
def invalid_utf8_string(draw: st.DrawFn) -> bytes:
    return b'"' + draw(_plain) + draw(st.sampled_from(INVALID_UTF8)) + draw(_plain) + b'"'


@st.composite
def too_deep(draw: st.DrawFn, most: int = 100_000) -> bytes:
    """Arrays or objects nested deeper than the decoder allows, closed or not."""
    depth = draw(st.integers(MAX_DEPTH + 1, most))
    if draw(st.booleans()):
        opened, leaf, closed = b"[" * depth, b"1", b"]" * depth
    else:
        opened, leaf, closed = b'{"a":' * depth, b"null", b"}" * depth
    return opened + leaf + (closed if draw(st.booleans()) else b"")


@st.composite
def huge_number(draw: st.DrawFn, most_digits: int = 10_000) -> bytes:
    """An integer of more digits than allowed (past CPython's 4,300 too), or a float beyond
    the largest double."""
    sign = draw(st.sampled_from([b"", b"-"]))
    if draw(st.booleans()):
        digits = draw(st.integers(MAX_NUMBER_CHARS + 1, most_digits))
        return sign + b"9" * digits
    exponent = draw(st.integers(309, 10**6))
    return sign + draw(st.sampled_from([b"1", b"1.5", b"9.99"])) + b"e" + str(exponent).encode()


constant = st.sampled_from([b"NaN", b"Infinity", b"-Infinity"])


def hostile_strings() -> st.SearchStrategy[bytes]:
    """Hostile string literals (for keys, method names, ids)."""
    return st.one_of(lone_surrogate_string(), invalid_utf8_string())


def hostile_values(most_depth: int = 100_000) -> st.SearchStrategy[bytes]:
    """Hostile JSON values of every kind (for any value position)."""
    return st.one_of(hostile_strings(), too_deep(most_depth), huge_number(), constant)


# A document template: the slot's name and the hostile text -> the whole document.
Template = Callable[[str, bytes], bytes]


@st.composite
def hostile_documents(
    draw: st.DrawFn,
    template: Template,
    string_slots: tuple[str, ...],
    value_slots: tuple[str, ...],
    most_depth: int = 100_000,
) -> bytes:
    """``template`` with one slot filled by a hostile part, or a hostile document alone."""
    slot = draw(st.sampled_from([*string_slots, *value_slots, "whole"]))
    if slot == "whole":
        return draw(st.one_of(too_deep(most_depth), st.sampled_from(INVALID_UTF8)))
    part = draw(hostile_strings() if slot in string_slots else hostile_values(most_depth))
    return template(slot, part)
