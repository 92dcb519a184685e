"""The hostile-input decoder of every protocol entry point (docs/mcp.md#hostile-input)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from splice_build.spec.untrusted_json import (
    MAX_DEPTH,
    MAX_NUMBER_CHARS,
    UntrustedJsonError,
    decode,
    nesting,
)
from testing.hostile_json import hostile_documents

LIMIT = 8 * 1024 * 1024

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=30,
)


def depth_of(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max(map(depth_of, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(depth_of, value), default=0)
    return 0


@given(json_values)
def test_ordinary_documents_decode_as_json_loads_does(value: Any) -> None:
    for text in (json.dumps(value), json.dumps(value, ensure_ascii=False, indent=1)):
        assert decode(text.encode("utf-8"), max_bytes=LIMIT) == json.loads(text)
        assert nesting(text) == depth_of(value)


def values_of(value: Any) -> int:
    """The values of a document, object keys aside: what ``max_values`` counts."""
    if isinstance(value, dict):
        return 1 + sum(map(values_of, value.values()))
    if isinstance(value, list):
        return 1 + sum(map(values_of, value))
    return 1


@given(json_values)
def test_max_values_counts_exactly_the_values(value: Any) -> None:
    """Counted on the text (strings, whitespace and all), as ``decode`` does for a provider's
    answer: at the count the document decodes, one under it is refused."""
    count = values_of(value)
    for text in (json.dumps(value), json.dumps(value, ensure_ascii=False, indent=1)):
        data = text.encode("utf-8")
        assert decode(data, max_bytes=LIMIT, max_values=count) == json.loads(text)
        with pytest.raises(UntrustedJsonError, match=f"more than {count - 1} values"):
            decode(data, max_bytes=LIMIT, max_values=count - 1)


def _template(slot: str, part: bytes) -> bytes:
    parts = {"key": b'"k"', "value": b"1", "item": b"2"}
    parts[slot] = part
    return b"{" + parts["key"] + b":" + parts["value"] + b',"list":[' + parts["item"] + b"]}"


@settings(max_examples=300)
@given(hostile_documents(_template, ("key",), ("value", "item")))
def test_every_hostile_document_is_refused(document: bytes) -> None:
    with pytest.raises(UntrustedJsonError):
        decode(document, max_bytes=LIMIT)


@pytest.mark.parametrize(
    ("document", "reason"),
    [
        (b'{"id": "\\ud800"}', "a string holds a lone surrogate"),
        (b'{"\\udfff": 1}', "a string holds a lone surrogate"),
        (b"[" * 100_000, f"nested deeper than {MAX_DEPTH} levels"),
        (b"1e400", "a number is out of range"),
        (b"1" * 10_000, f"a number is longer than {MAX_NUMBER_CHARS} characters"),
        (b'"\xff"', "invalid UTF-8 at byte 1"),
        (b"NaN", "NaN is not valid JSON"),
        (b'{"a": 1', "Expecting ',' delimiter"),
        (b"[1] x", "Extra data"),
        (b"x" * 11, "document exceeds 10 bytes"),
    ],
)
def test_each_refusal_says_why(document: bytes, reason: str) -> None:
    with pytest.raises(UntrustedJsonError) as refused:
        decode(document, max_bytes=10 if reason.startswith("document") else LIMIT)
    assert str(refused.value) == reason


def test_limits_are_inclusive_and_pairs_are_not_lone() -> None:
    at_limit = b"[" * MAX_DEPTH + b"]" * MAX_DEPTH
    assert nesting(at_limit.decode()) == MAX_DEPTH
    assert decode(at_limit, max_bytes=LIMIT) is not None
    with pytest.raises(UntrustedJsonError):
        decode(b"[" + at_limit + b"]", max_bytes=LIMIT)
    assert decode(b"9" * MAX_NUMBER_CHARS, max_bytes=LIMIT) == int("9" * MAX_NUMBER_CHARS)
    assert decode(b'"\\ud83d\\ude00"', max_bytes=LIMIT) == "\U0001f600"
    # An escaped backslash before "ud800" is text, not an escape.
    assert decode(b'"\\\\ud800"', max_bytes=LIMIT) == "\\ud800"
    # Brackets inside strings do not count.
    assert decode(b'["' + b"[" * 10_000 + b'"]', max_bytes=LIMIT) == ["[" * 10_000]
    assert decode(b"1.7976931348623157e308", max_bytes=LIMIT) == 1.7976931348623157e308


def test_a_caller_may_allow_more_levels_than_the_c_decoder_reaches() -> None:
    """The registry client allows a manifest's depth (spec.limits.MAX_MANIFEST_DEPTH): past
    what ``json.loads`` can recurse, the explicit stack decodes it, under the same rules."""
    levels = 100_000
    deep = b"[" * levels + b'{"n": 1.5, "s": "x"}' + b"]" * levels
    value = decode(deep, max_bytes=LIMIT, max_depth=levels + 1)
    for _ in range(levels):
        (value,) = value
    assert value == {"n": 1.5, "s": "x"}
    with pytest.raises(UntrustedJsonError, match=f"nested deeper than {levels} levels"):
        decode(deep, max_bytes=LIMIT, max_depth=levels)
    refused = {
        b"1e400": "a number is out of range",
        b"1" * 200: f"a number is longer than {MAX_NUMBER_CHARS} characters",
        b"NaN": "Expecting value",
        b'"\\ud800"': "a string holds a lone surrogate",
    }
    for leaf, reason in refused.items():
        document = b"[" * levels + leaf + b"]" * levels
        with pytest.raises(UntrustedJsonError) as caught:
            decode(document, max_bytes=LIMIT, max_depth=levels)
        assert str(caught.value) == reason


def test_lone_surrogates_are_kept_when_the_caller_says_so() -> None:
    """A registry answer carries manifests, whose strings may hold them (JSON.parse keeps them)."""
    document = b'{"default": "\\ud800 alone", "\\udfff": 1}'
    assert decode(document, max_bytes=LIMIT, lone_surrogates=True) == {
        "default": "\ud800 alone",
        "\udfff": 1,
    }
    with pytest.raises(UntrustedJsonError):
        decode(document, max_bytes=LIMIT)
