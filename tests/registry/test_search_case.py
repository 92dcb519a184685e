"""Search ignores case for all of Unicode, alike on both stores (docs/registry.md#search).

SQLite's ``lower()`` and ``LIKE`` fold ASCII only: a description ``Ärger`` was found by no
query, not even its own text; PostgreSQL folded as its locale says (``Ärger`` found under
``C.UTF-8``), and neither matched ``ΟΔΟΣ`` (its lowered query ends in ``ς``, the stored text
in ``σ``) or ``STRASSE`` against ``Straße``. Both now compare ``db.search_key`` (Unicode
canonical caseless matching) of the query and of the description.

The walk publishes every cased letter of U+00C0..U+058F (Latin, IPA, Greek, Cyrillic,
Armenian) and a few others in a handful of descriptions, then searches each letter in upper,
lower and title case: each store answers exactly the packages whose description's key holds
the query's key.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator
from pathlib import Path

import pytest

from splice_build.registry.db.search_key import search_key
from splice_build.registry.service import admin
from splice_build.registry.service.auth import Caller
from splice_build.registry.service.registry_service import RegistryService
from splice_build.registry.service.tokens import TokenRequest
from testing.registry import NO_LIMITS, artifact
from testing.registry_backends import StoreBackend

OTHERS = "ẞßſﬁΩKÅİıǅǈǋǲ" + "ᏸᏰꭰᎠ"  # sharp s, long s, a ligature, signs, titlecase, Cherokee
LETTERS = sorted(
    {
        c
        for c in (*map(chr, range(0xC0, 0x590)), *OTHERS)
        if unicodedata.category(c) in ("Lu", "Ll", "Lt") and c.lower() != c.upper()
    }
)
PER_DESCRIPTION = 160  # of 500 UTF-16 units: "x" + letter + space, a letter of up to 2 units
FIXED = {  # query -> packages found, whatever the walk's oracle says
    "ärger": ["@fixed/de"],
    "ÄRGER": ["@fixed/de"],
    "A\u0308rger": ["@fixed/de"],  # Ä decomposed
    "οδος": ["@fixed/el"],
    "ΟΔΟΣ": ["@fixed/el"],
    "strasse": ["@fixed/de"],
    "STRAẞE": ["@fixed/de"],
    "ǆemal": ["@fixed/hr"],
}


@pytest.fixture
def service(backend: StoreBackend) -> Iterator[RegistryService]:
    opened = backend.service(limits=NO_LIMITS)
    yield opened
    opened.deps.meta.close()


def _found(service: RegistryService, query: str) -> list[str]:
    answer = service.search(query, limit="100", kind=None)
    return [hit["name"] for hit in answer["results"]]


def test_every_cased_letter_is_found_in_any_case_on_both_stores(
    service: RegistryService, tmp_path: Path
) -> None:
    admin.create_user(service.deps, "walker")
    created = admin.create_token(service.deps, "walker", TokenRequest(can_manage=True))
    caller = Caller(authorization=f"Bearer {created['token']}")
    descriptions = {
        "@fixed/de": "Ärger in der Straße",
        "@fixed/el": "ΟΔΟΣ",
        "@fixed/hr": "ǅemal",
    }
    for start in range(0, len(LETTERS), PER_DESCRIPTION):
        chunk = LETTERS[start : start + PER_DESCRIPTION]
        descriptions[f"@walk/letters-{start}"] = " ".join(f"x{c}" for c in chunk)
    for package, description in descriptions.items():
        namespace, name = package[1:].split("/")
        body = artifact(tmp_path / package[1:], namespace, name, description=description)
        service.publish(caller, body)
    stored = {p: service.package(*p[1:].split("/"))["description"] for p in descriptions}
    assert stored == descriptions

    wrong = {}
    queries = sorted({f"x{form}" for c in LETTERS for form in (c.upper(), c.lower(), c.title())})
    for query in queries:
        key = search_key(query.strip().lower())
        expected = sorted(p for p, text in stored.items() if key in search_key(text))
        found = _found(service, query)
        if found != expected or not expected:
            wrong[query] = (found, expected)
    assert not wrong, f"{len(wrong)} of {len(queries)}: {dict(list(wrong.items())[:10])}"
    fixed = {query: _found(service, query) for query in FIXED}
    assert fixed == FIXED
