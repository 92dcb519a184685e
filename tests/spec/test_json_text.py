"""spec/json_text.py: JSON.parse and JSON.stringify semantics, at any depth.

The iterative parser must agree with ``json.loads`` (results and refusals), and the writer with
Node's own ``JSON.stringify`` (one Node process for a whole batch of values).
"""

from __future__ import annotations

import json
import math
import random
import struct
import subprocess
import tracemalloc
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from splice_build.runtime.node import find_node
from splice_build.spec import json_text
from splice_build.spec.json_depth import nesting_depth

_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**60), max_value=2**60)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.characters(codec="utf-8") | st.sampled_from('\x00\x1f"\\\u2028'))
)
_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=20,
)

INVALID = [
    "",
    " ",
    "{",
    "[1,]",
    "[1 2]",
    '{"a" 1}',
    '{"a":1,}',
    "{'a': 1}",
    "NaN",
    "[Infinity]",
    "-",
    "01",
    "1.",
    ".5",
    "tru",
    '"\x01"',
    "[1]x",
    "[" * 5000,
]


@given(_values)
def test_the_iterative_parser_agrees_with_json_loads(value: Any) -> None:
    for text in (json.dumps(value), json.dumps(value, indent=2)):
        assert json_text.parse_iterative(text) == json.loads(text)


@pytest.mark.parametrize("text", INVALID)
def test_both_parsers_refuse_what_is_not_json(text: str) -> None:
    with pytest.raises(ValueError):
        json_text.parse(text)
    with pytest.raises(json.JSONDecodeError):
        json_text.parse_iterative(text)


def test_deep_documents_parse_copy_and_write_without_recursion() -> None:
    depth = 100_000
    text = '{"a":' * depth + "[]" + "}" * depth
    value = json_text.parse(text)
    assert nesting_depth(value, depth + 2) == depth + 1
    assert json_text.stringify(value) == text
    assert json_text.canonical(json_text.copy(value)) == text
    assert json_text.dumps(value, indent=2) == text  # compact: no 100,000-level staircase


def test_duplicate_keys_keep_the_last_and_lone_surrogates_stay() -> None:
    text = '{"a": 1, "a": [2, "\\ud800"]}'
    assert json_text.parse_iterative(text) == json.loads(text) == {"a": [2, "\ud800"]}


def _node_stringify(values: list[Any], indent: int | None) -> list[str]:
    script = (
        'let s = ""; process.stdin.on("data", (c) => (s += c)).on("end", () => {'
        " const { values, indent } = JSON.parse(s);"
        " process.stdout.write(JSON.stringify(values.map((v) => JSON.stringify(v, null, indent))));"
        " });"
    )
    done = subprocess.run(
        [str(find_node({}).path), "-e", script],
        input=json.dumps({"values": values, "indent": indent}),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(done.stdout)


NUMBERS = [
    0.0,
    -0.0,
    5.0,
    0.1,
    1e21,
    1e20,
    1e-7,
    1e-6,
    123456789.125,
    1.7976931348623157e308,
    5e-324,
    2**53,
    2**53 + 1,
    2**64,
    -(2**70),
    12.5e-10,
    100.0,
]
STRINGS = [
    "",
    "plain",
    "\x00\x07\x1f",
    '"\\',
    "\u2028\u2029",
    "caf\u00e9",
    "\U0001f600",
    "\ud800",
    "a\udc00b",
    "\x7f\u0085",
]


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(9 if depth < 4 else 6)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return rng.randrange(-(2**60), 2**60) >> rng.randrange(60)
    if kind == 2:
        number = rng.choice(NUMBERS) * rng.choice([1, -1, 0.5, 3, 1e-3, 1e17])
        return number if math.isfinite(number) else -0.0
    if kind == 3:
        number = struct.unpack("<d", rng.randbytes(8))[0]
        return number if math.isfinite(number) else 0.0  # JSON has no NaN or infinities
    if kind in (4, 5):
        return "".join(rng.choice([*STRINGS, "x", "0", "17", " "]) for _ in range(rng.randrange(4)))
    if kind in (6, 7):
        return [_random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    keys = ["a", "b", "0", "17", "01", "\u00e9", "\U0001f600", "\uffff", "4294967295", ""]
    return {rng.choice(keys): _random_value(rng, depth + 1) for _ in range(rng.randrange(5))}


@pytest.mark.parametrize("seed", range(3))
def test_stringify_is_node_json_stringify(seed: int) -> None:
    rng = random.Random(seed)
    corpus = [_random_value(rng) for _ in range(300)]
    corpus += [NUMBERS, STRINGS, {"b": 1, "a": {"nested": [[], {}, [1, [2]]]}}]
    for indent in (None, 2):
        # JSON carries lone surrogates as escapes, so Node sees the very same strings.
        expected = _node_stringify(corpus, indent)
        got = [json_text.stringify(v, indent=indent) for v in corpus]
        assert [(v, g) for v, g, e in zip(corpus, got, expected, strict=True) if g != e] == []


def test_non_finite_numbers_are_null_as_in_javascript() -> None:
    assert json_text.stringify([math.nan, math.inf, -math.inf]) == "[null,null,null]"


def test_canonical_sorts_keys_by_utf16_code_units() -> None:
    value = {"\uffff": 1, "\U0001f600": 2, "b": 3, "B": 4, "a": {"z": 1, "y": 2}}
    assert json_text.canonical(value) == '{"B":4,"a":{"y":2,"z":1},"b":3,"\U0001f600":2,"\uffff":1}'


def test_non_json_values_are_refused() -> None:
    with pytest.raises(TypeError):
        json_text.stringify({1: "x"})
    with pytest.raises(TypeError):
        json_text.stringify({"a": {1, 2}})


def test_array_index_keys_come_first_as_in_javascript_objects() -> None:
    value = {"b": 1, "10": 2, "2": 3, "01": 4, "4294967294": 5, "4294967295": 6, "a": 7}
    assert json_text.stringify(value) == _node_stringify([value], None)[0]
    assert list(json.loads(json_text.stringify(value))) == [
        "2",
        "10",
        "4294967294",
        "b",
        "01",
        "4294967295",
        "a",
    ]


def test_dumps_escapes_surrogates_as_json_stringify_does() -> None:
    value = {"a\udc00": ["\ud800x", "ok"]}
    for indent in (None, 2):
        text = json_text.dumps(value, indent=indent)
        assert json.loads(text.encode("utf-8")) == value  # always has a UTF-8 form
    assert json_text.dumps(value) == json_text.stringify(value) == '{"a\\udc00":["\\ud800x","ok"]}'


@given(_values | st.sampled_from(["\ud800", "\ud83d\ude00", {"1": 0, "0": 1}, 2**60, -0.0]))
def test_stringify_writes_its_own_parsed_output_unchanged(value: Any) -> None:
    # Why an Encoded (a registry's stored manifest) may be written as it is, unparsed.
    text = json_text.stringify(value)
    assert json_text.stringify(json_text.parse(text)) == text


def test_a_document_too_deep_for_the_c_decoder_is_written_as_its_parse_would_be() -> None:
    deep = json_text.stringify(json_text.parse('{"a":' * 5000 + '"\\ud800"' + "}" * 5000))
    kept = json_text.parse_shallow(deep)
    assert kept == json_text.Encoded(deep)
    assert json_text.parse_shallow('{"a":[1]}') == {"a": [1]}
    answer = {"name": "x", "manifest": kept}
    written = json_text.dumps({**answer, "manifest": json_text.parse(deep)}, indent=2)
    assert json_text.dumps(answer, indent=2) == json_text.stringify(answer) == written


def test_indented_within_is_dumps_or_none_past_its_limit() -> None:
    value = {"a": [[1, "\ud800"], {"b": None}], "c": "é"}
    pretty = json_text.dumps(value, indent=2)
    assert json_text.indented_within(value, 2, len(pretty)) == pretty
    assert json_text.indented_within(value, 2, len(pretty) - 1) is None
    assert json_text.indented_within({"m": json_text.Encoded("[]")}, 2, 10**6) is None
    deep = json_text.parse("[" * 5000 + "]" * 5000)
    assert json_text.indented_within(deep, 2, 10**9) is None


def test_writing_a_deep_value_keeps_no_object_per_level() -> None:
    """The encoder's open containers are references in flat lists: each level held a tuple,
    an iterator and a counter list (about 200 bytes), which the garbage collector walked
    again and again while a million-level manifest was written (docs/registry.md#limits)."""
    depth = 20_000
    value = json_text.parse("[" * depth + "]" * depth)
    for write in (json_text.stringify, json_text.canonical):
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            write(value)
            peak = tracemalloc.get_traced_memory()[1] - before
        finally:
            tracemalloc.stop()
        assert peak / depth < 100, write.__name__


@settings(max_examples=40)
@given(_values)
def test_one_walk_writes_the_canonical_and_the_stringified_text(value: Any) -> None:
    assert json_text.canonical_and_stringified(value) == (
        json_text.canonical(value),
        json_text.stringify(value),
    )


def test_objects_whose_orders_differ_nest_past_the_split_levels() -> None:
    depth = 100
    value: Any = [[1]]
    for _ in range(depth):
        value = {"b": value, "a": {"1": [], "0": "\ud800"}}
    value = {"x": [[{"z": 1, "y": value}]] * 2}
    assert json_text.canonical_and_stringified(value) == (
        json_text.canonical(value),
        json_text.stringify(value),
    )
