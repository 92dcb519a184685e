"""Integrity strings and the files digest (docs/compatibility.md#archive-format, docs/compatibility.md#files-digest): known answers."""

from __future__ import annotations

from pathlib import Path

import pytest

from splice_build.spec.digests import (
    INTEGRITY_PATTERN,
    files_digest,
    files_digest_from_hashes,
    integrity_of,
    is_integrity,
    sha256_hex,
)
from splice_build.spec.pack import collect_package_files

EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
HELLO_SHA256 = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
GOLDEN = Path(__file__).parents[1] / "resources" / "packages" / "golden"


def test_sha256_and_integrity_known_answers() -> None:
    assert sha256_hex(b"") == EMPTY_SHA256
    assert sha256_hex(b"hello") == HELLO_SHA256
    assert integrity_of(b"hello") == f"sha256-{HELLO_SHA256}"


@pytest.mark.parametrize(
    ("text", "valid"),
    [
        (f"sha256-{HELLO_SHA256}", True),
        (f"sha256-{HELLO_SHA256.upper()}", False),
        (f"sha256-{HELLO_SHA256[:-1]}", False),
        (f"sha256-{HELLO_SHA256}0", False),
        (f"sha256-{HELLO_SHA256}\n", False),
        (f"sha512-{HELLO_SHA256}", False),
        (f"sha256:{HELLO_SHA256}", False),
        (HELLO_SHA256, False),
        ("", False),
        (None, False),
        (42, False),
    ],
)
def test_integrity_pattern(text: object, valid: bool) -> None:
    assert is_integrity(text) is valid
    if isinstance(text, str):
        assert (INTEGRITY_PATTERN.fullmatch(text) is not None) is valid


def test_files_digest_known_answer() -> None:
    # printf '%s\000%s\n' a.txt <sha256 hello> b/c.js <sha256 empty> | sha256sum
    expected = "sha256-2bb0c867933c8c0980756f842a9fbef8a1a91d7370d0344d756377f4c31a2774"
    assert files_digest({"b/c.js": b"", "a.txt": b"hello"}) == expected
    assert files_digest_from_hashes({"a.txt": HELLO_SHA256, "b/c.js": EMPTY_SHA256}) == expected


def test_files_digest_sorts_by_utf16_code_units() -> None:
    # U+1F600 (D83D DE00) sorts before U+FFFF in UTF-16, after it in code points.
    expected = "sha256-9682425c84afb2a5b90fb47837444fb653a5ad491d12bac4c2aa5de67e8acbe3"
    assert files_digest({"\uffff.md": b"x", "\U0001f600.md": b"x"}) == expected


def test_files_digest_of_nothing_is_the_digest_of_empty_text() -> None:
    assert files_digest({}) == f"sha256-{EMPTY_SHA256}"


def test_files_digest_of_the_golden_package() -> None:
    expected = "sha256-418b2b0a9117d8f0b7237f3c032163b526473089687ca2065a489127d7651a55"
    assert files_digest(collect_package_files(GOLDEN)) == expected


def test_files_digest_changes_with_any_name_or_content_change() -> None:
    base = {"SKILL.md": b"# x\n", "tools/x.js": b"1"}
    digests = {
        files_digest(base),
        files_digest({**base, "tools/x.js": b"2"}),
        files_digest({**base, ".DS_Store": b""}),
        files_digest({"SKILL.md": b"# x\n", "tools/y.js": b"1"}),
        files_digest({"SKILL.md": b"# x\n"}),
    }
    assert len(digests) == 5


def test_undecodable_names_get_distinct_lines_instead_of_failing() -> None:
    # os.fsdecode keeps invalid UTF-8 bytes as lone surrogates; they must not collide.
    first = files_digest({"a\udcff": b"x"})
    second = files_digest({"a\udcfe": b"x"})
    assert first != second
    assert is_integrity(first)


def test_the_builtin_sha256_agrees_with_openssl_and_gives_way_past_its_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``new_sha256`` hands out CPython's own SHA-256 until the process's budget is spent,
    then OpenSSL's: the same digests, on every padding boundary and in chunks."""
    import hashlib
    import random

    from splice_build.spec import digests

    monkeypatch.setattr(digests, "_budget", [3000])
    rng = random.Random(22)
    sizes = [0, 1, 55, 56, 57, 63, 64, 65, 119, 120, 128, 1000, 1500, 4096, 70_000]
    kinds = []
    for size in sizes:
        data = rng.randbytes(size)
        digest = digests.new_sha256(size)
        for start in range(0, size, 37):
            digest.update(data[start : start + 37])
        assert digest.hexdigest() == hashlib.sha256(data).hexdigest(), size
        kinds.append(type(digest).__name__)
    builtin = type(hashlib.sha256()).__name__ != kinds[0]
    assert builtin, "the first small input takes the builtin"
    assert kinds[-1] == kinds[-2] == type(hashlib.sha256()).__name__
    # 0 + 1 + ... + 1000 fit in 3000 bytes; 1500 no longer does
    assert kinds.index(type(hashlib.sha256()).__name__) == sizes.index(1500)
