"""``utf16_sort_key`` orders text as JavaScript's ``<`` does: by UTF-16 code units."""

from __future__ import annotations

import itertools

from splice_build.spec.paths import utf16_sort_key

# Each side of every boundary where code-point and code-unit order part: ASCII, the top of
# the BMP below the surrogates, lone surrogates, U+E000-U+FFFF and the supplementary planes.
_EDGES = [
    "",
    "a",
    "\u00e9",
    "\ud7ff",
    "\ud800",
    "\udbff",
    "\udc00",
    "\udfff",
    "\ue000",
    "\uffff",
    "\U00010000",
    "\U0001f600",
    "\U0010ffff",
]


def _units(text: str) -> bytes:
    return text.encode("utf-16-be", "surrogatepass")


def test_every_pair_of_short_texts_orders_by_code_units() -> None:
    texts = sorted({"".join(parts) for parts in itertools.product(_EDGES, repeat=2)})
    for a, b in itertools.product(texts, repeat=2):
        key_a, key_b = utf16_sort_key(a), utf16_sort_key(b)
        assert (key_a < key_b, key_a == key_b) == (_units(a) < _units(b), _units(a) == _units(b)), (
            a,
            b,
        )
    assert sorted(texts, key=utf16_sort_key) == sorted(texts, key=_units)
