"""The text search compares: Unicode canonical caseless matching, the same on every store.

``GET /packages/search`` matches its query as a substring of a package's id or description,
ignoring case (docs/registry.md#search). The databases cannot be asked to ignore it alike:
SQLite's ``lower()`` and ``LIKE`` fold ASCII only, so a description ``Ärger`` was not found
even by its own text, while PostgreSQL's ``lower()`` folds as the database's locale says
(all of Unicode under ``C.UTF-8``, ASCII only under ``C``), and neither folds ``ß`` to ``ss``
or a final ``ς`` to ``σ``. So the fold is Python's, computed once: the store keeps each
description's key (``packages.search_text``, written by the publish transaction) and
searches it with the query's key, which is exact text on either database.

The key is Unicode's canonical caseless form (D145): ``NFD(casefold(NFD(text)))``, so
``Ä`` written precomposed or as ``A`` + U+0308, in any case, matches either.
"""

from __future__ import annotations

import unicodedata


def search_key(text: str) -> str:
    """``text`` as search compares it (full case folding of its canonical decomposition)."""
    return unicodedata.normalize("NFD", unicodedata.normalize("NFD", text).casefold())
