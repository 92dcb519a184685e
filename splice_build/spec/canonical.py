"""Canonical JSON, byte-compatible with the TypeScript ``canonicalJson`` (docs/compatibility.md).

Objects have their keys sorted by UTF-16 code units, arrays keep their order, there is no
whitespace, and every primitive is written as JavaScript's ``JSON.stringify`` writes it
(``spec.json_text``): ``1.0`` is ``1``, ``1e21`` is ``1e+21``, NaN and infinities are
``null``, non-ASCII stays itself, lone surrogates are ``\\udxxx``.

JavaScript drops ``undefined`` members; Python has no undefined, and ``None`` is JSON ``null``,
so ``None`` values are KEPT. Used for ``manifestSha256`` and metadata comparison, so a change
here changes recorded provenance. Values of any depth are encoded (no recursion).
"""

from __future__ import annotations

from splice_build.spec.json_text import canonical


def canonical_json(value: object) -> str:
    """Serialize ``value`` (dict/list/tuple/str/int/float/bool/None) canonically.

    Raises TypeError for other types and for non-string object keys: they have no JSON form
    that JavaScript would agree on.
    """
    return canonical(value)
