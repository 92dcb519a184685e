"""``fold_path``: the one comparison of names a case- and normalization-insensitive file
system would merge (package archives, the grants' protected names)."""

from __future__ import annotations

import unicodedata

import pytest

from splice_build.spec.paths import fold_path


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("Splice.Lock", "splice.lock"),
        ("caf\u00e9.js", "cafe\u0301.js"),  # NFC and NFD
        ("s.js", "\u017f.js"),  # long s
        ("\ufb06\u0323", "ST\u0323"),  # folding leaves it unnormalized until NFC again
        ("K.js", "\u212a.js"),  # Kelvin sign
    ],
)
def test_names_a_file_system_merges_fold_alike(one: str, other: str) -> None:
    assert fold_path(one) == fold_path(other)


def test_a_single_normalization_would_miss_one_of_them() -> None:
    def once(text: str) -> str:
        return unicodedata.normalize("NFC", text).casefold()

    assert once("\ufb06\u0323") != once("ST\u0323")


def test_folding_keeps_the_segments() -> None:
    for path in ("a/B/\u00c9", "\ufb06/x", "\u0130/y"):
        assert fold_path(path).count("/") == path.count("/")
